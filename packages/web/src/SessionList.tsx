/** Every session of the server's project, newest first and live, with subagents under their parents. */
import { useComputed, useSignal } from "@preact/signals"
import { post } from "./Api.js"
import { useStore } from "./Context.js"
import * as Format from "./Format.js"
import { PromptBox } from "./PromptBox.js"
import { navigate } from "./Router.js"
import { rowStatus, sessionRows, STATUS_LABEL } from "./ViewState.js"

export const SessionList = () => {
  const store = useStore()
  const search = useSignal("")
  const rows = useComputed(() => sessionRows(Object.values(store.state.value.sessions), search.value))
  const now = Date.now()

  const start = async (text: string, choice: { agent?: string; model?: { providerID: string; modelID: string } }) => {
    const session = await post<{ id: string }>("/session", { title: text.slice(0, 60) })
    await post(`/session/${session.id}/prompt_async`, { parts: [{ type: "text", text }], ...choice })
    navigate(`/sessions/${session.id}`)
  }

  return (
    <section class="sessions" aria-label="Sessions">
      <div class="toolbar">
        <input
          id="search"
          type="search"
          placeholder="Search titles  ( / )"
          aria-label="Search sessions by title"
          value={search.value}
          onInput={(event) => (search.value = (event.target as HTMLInputElement).value)}
        />
      </div>
      <PromptBox label="Start a session" onSend={start} />
      {!store.loaded.value ? <p class="empty">Loading sessions…</p> : null}
      {store.loaded.value && rows.value.length === 0 ? <p class="empty">{search.value ? "No session matches." : "No sessions yet."}</p> : null}
      <ul class="session-list" data-testid="session-list">
        {rows.value.map(({ session, depth }) => {
          const status = rowStatus(store.state.value, session.id)
          return (
            <li key={session.id} style={{ paddingLeft: `${depth * 1.25}rem` }} data-status={status}>
              <a href={`/sessions/${session.id}`} class="session-row" data-nav="" data-session={session.id}>
                <span class={`badge ${status}`}>{STATUS_LABEL[status]}</span>
                <span class="title">{depth > 0 ? "↳ " : ""}{session.title || "(untitled)"}</span>
                <span class="meta">
                  {session.agent ? <span>{session.agent}</span> : null}
                  {session.model ? <span>{session.model.providerID}/{session.model.id}</span> : null}
                  <span title="tokens, subagents included">{Format.tokens(Format.totalTokens(session.tokens))} tok</span>
                  <span title="cost, subagents included">{Format.cost(session.cost)}</span>
                  <span>{Format.ago(session.time.updated, now)}</span>
                </span>
              </a>
            </li>
          )
        })}
      </ul>
    </section>
  )
}
