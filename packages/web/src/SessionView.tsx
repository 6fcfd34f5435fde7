/** One session: its transcript (live), todo list, usage, pending asks, prompt box, changes and revert. */
import type { Todo } from "@agent/domain"
import { useComputed } from "@preact/signals"
import { post } from "./Api.js"
import { AskList } from "./Approvals.js"
import { Changes, RevertBanner, useRevert } from "./Changes.js"
import { useStore } from "./Context.js"
import * as Format from "./Format.js"
import { type Choice, PromptBox } from "./PromptBox.js"
import { Transcript } from "./Transcript.js"
import { rowStatus, STATUS_LABEL, type WireSession } from "./ViewState.js"

const TODO_MARK: Record<Todo["status"], string> = { pending: "○", in_progress: "◐", completed: "●", cancelled: "✕" }

const TodoList = (props: { readonly todos: ReadonlyArray<Todo> }) =>
  props.todos.length === 0 ? null : (
    <section class="todos" aria-label="Todo list">
      <h2>Todo</h2>
      <ul>
        {props.todos.map((todo, index) => (
          <li key={index} class={todo.status}>
            <span aria-hidden="true">{TODO_MARK[todo.status]}</span> {todo.content}
          </li>
        ))}
      </ul>
    </section>
  )

const Usage = (props: { readonly session: WireSession; readonly steps: number }) => {
  const tokens = props.session.tokens
  return (
    <dl class="usage" aria-label="Usage (subagents included)" data-testid="usage">
      <div><dt>tokens</dt><dd>{Format.tokens(Format.totalTokens(tokens))}</dd></div>
      <div><dt>in</dt><dd>{Format.tokens(tokens?.input)}</dd></div>
      <div><dt>out</dt><dd>{Format.tokens(tokens?.output)}</dd></div>
      <div><dt>cache</dt><dd>{Format.tokens((tokens?.cache.read ?? 0) + (tokens?.cache.write ?? 0))}</dd></div>
      <div><dt>cost</dt><dd>{Format.cost(props.session.cost)}</dd></div>
      <div><dt>steps</dt><dd>{props.steps}</dd></div>
    </dl>
  )
}

export const SessionView = (props: { readonly id: string; readonly tab: "transcript" | "changes" }) => {
  const store = useStore()
  const session = store.state.value.sessions[props.id]
  const transcript = useComputed(() => {
    const current = store.state.value.transcript
    return current && current.sessionID === props.id ? current.messages : undefined
  })
  const steps = useComputed(() =>
    (transcript.value ?? []).reduce((count, entry) => count + entry.parts.filter((part) => part.type === "step-finish").length, 0)
  )
  const revert = useRevert(props.id)
  if (!session) {
    return <p class="empty">{store.loaded.value ? `No session ${props.id}.` : "Loading…"} <a href="/">Sessions</a></p>
  }
  const status = rowStatus(store.state.value, props.id)
  const outcome = store.state.value.outcomes[props.id]
  const children = Object.values(store.state.value.sessions).filter((entry) => entry.parentID === props.id)
  const send = (text: string, choice: Choice) => post<void>(`/session/${props.id}/prompt_async`, { parts: [{ type: "text", text }], ...choice })
  const abort = () => post<void>(`/session/${props.id}/abort`)
  const diffs = store.state.value.diffs[props.id] ?? []
  return (
    <section class="session" aria-label={`Session ${session.title}`}>
      <header class="session-head">
        <div>
          {session.parentID ? <a href={`/sessions/${session.parentID}`} class="small">↑ parent</a> : null}
          <h1>{session.title || "(untitled)"}</h1>
          <span class={`badge ${status}`} data-testid="session-status">{STATUS_LABEL[status]}</span>
          {session.agent ? <span class="meta">{session.agent}</span> : null}
          {session.model ? <span class="meta">{session.model.providerID}/{session.model.id}</span> : null}
        </div>
        <Usage session={session} steps={steps.value} />
      </header>
      {outcome && outcome.reason !== "completed"
        ? <p class={`note ${status === "error" ? "error" : "warn"}`}>Last run stopped: {outcome.reason}{outcome.message ? ` — ${outcome.message}` : ""}</p>
        : null}
      <nav class="tabs" aria-label="Session views">
        <a href={`/sessions/${props.id}`} aria-current={props.tab === "transcript" ? "page" : undefined}>Transcript</a>
        <a href={`/sessions/${props.id}/changes`} aria-current={props.tab === "changes" ? "page" : undefined} data-testid="changes-tab">
          Changes{diffs.length > 0 ? ` (${diffs.length})` : ""}
        </a>
      </nav>
      <RevertBanner session={session} result={revert.result.value} onUnrevert={() => void revert.unrevert()} />
      {revert.error.value ? <p class="error" role="alert">{revert.error.value}</p> : null}
      <div class="session-body">
        <div class="session-main">
          {props.tab === "transcript"
            ? transcript.value
              ? <Transcript messages={transcript.value} onRevert={(messageID) => void revert.revert(messageID)} {...(session.revert ? { revertedFrom: session.revert.messageID } : {})} />
              : <p class="empty">Loading the transcript…</p>
            : <Changes diffs={diffs} />}
        </div>
        <aside class="session-side">
          <TodoList todos={store.state.value.todos[props.id] ?? []} />
          {children.length > 0
            ? (
              <section aria-label="Subagents">
                <h2>Subagents</h2>
                <ul>{children.map((child) => <li key={child.id}><a href={`/sessions/${child.id}`}>{child.title}</a></li>)}</ul>
              </section>
            )
            : null}
        </aside>
      </div>
      <AskList sessionID={props.id} />
      <PromptBox label="Prompt" onSend={send} busy={status === "running" || status === "waiting"} onAbort={abort} {...(session.agent ? { agent: session.agent } : {})} />
    </section>
  )
}
