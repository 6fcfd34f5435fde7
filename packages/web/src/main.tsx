import { render } from "preact"
import { App } from "./App.js"
import { StoreContext } from "./Context.js"
import { createStore } from "./Store.js"
import { initialTheme } from "./Theme.js"

document.documentElement.dataset["theme"] = initialTheme()
const store = createStore()
store.start(new AbortController().signal)
render(
  <StoreContext.Provider value={store}>
    <App />
  </StoreContext.Provider>,
  document.getElementById("app")!
)
