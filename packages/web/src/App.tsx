/** The frame: a header with the views and the count of pending asks, then the current view. */
import { useComputed, useSignalEffect } from "@preact/signals"
import { useEffect } from "preact/hooks"
import { Approvals, OneAsk } from "./Approvals.js"
import { useStore } from "./Context.js"
import { onKey } from "./Keys.js"
import { navigate, onLinkClick, path, viewOf } from "./Router.js"
import { SessionList } from "./SessionList.js"
import { SessionView } from "./SessionView.js"
import { toggleTheme } from "./Theme.js"

const CONNECTION_LABEL = { connecting: "connecting…", live: "live", reconnecting: "reconnecting…" }

export const App = () => {
  const store = useStore()
  const view = useComputed(() => viewOf(path.value))

  // The tab title counts the asks waiting for a person.
  useSignalEffect(() => {
    const count = store.pendingCount.value
    document.title = count > 0 ? `(${count}) agent` : "agent"
  })
  useSignalEffect(() => {
    const current = view.value
    void store.open(current.name === "session" ? current.id : undefined)
  })
  useEffect(() => {
    const listener = (event: KeyboardEvent) => onKey(event, { navigate, focusSearch: () => document.getElementById("search")?.focus() })
    addEventListener("keydown", listener)
    return () => removeEventListener("keydown", listener)
  }, [])

  const current = view.value
  const count = store.pendingCount.value
  return (
    <div class="app" onClick={onLinkClick}>
      <header class="top">
        <a href="/" class="brand">agent</a>
        <nav aria-label="Views">
          <a href="/" aria-current={current.name === "sessions" || current.name === "session" ? "page" : undefined}>Sessions</a>
          <a href="/approvals" aria-current={current.name === "approvals" || current.name === "permission" ? "page" : undefined}>
            Approvals{count > 0 ? <span class="count" data-testid="pending-count">{count}</span> : null}
          </a>
        </nav>
        <span class={`connection ${store.connection.value}`} data-testid="connection" data-last-event={store.lastEventId.value ?? ""}>
          {CONNECTION_LABEL[store.connection.value]}
        </span>
        <button type="button" class="ghost" onClick={toggleTheme} title="Light or dark (t)" aria-label="Switch between light and dark">◐</button>
        <form method="post" action="/logout" class="logout"><button type="submit" class="ghost">Log out</button></form>
      </header>
      {store.loadError.value ? <p class="error banner" role="alert">{store.loadError.value}</p> : null}
      <main>
        {current.name === "sessions" ? <SessionList /> : null}
        {current.name === "session" ? <SessionView id={current.id} tab={current.tab} /> : null}
        {current.name === "approvals" ? <Approvals /> : null}
        {current.name === "permission" ? <OneAsk id={current.id} /> : null}
        {current.name === "missing" ? <p class="empty">Nothing at {current.path}. <a href="/">Sessions</a></p> : null}
      </main>
    </div>
  )
}
