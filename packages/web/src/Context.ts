import { createContext } from "preact"
import { useContext } from "preact/hooks"
import type { Store } from "./Store.js"

export const StoreContext = createContext<Store | undefined>(undefined)

export const useStore = (): Store => {
  const store = useContext(StoreContext)
  if (!store) throw new Error("the page's store is missing (StoreContext)")
  return store
}
