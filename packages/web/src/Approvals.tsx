/**
 * Asks waiting for a person, from every session: permissions (the command, its patterns, for an
 * edit its diff) and the model's questions. Answers go to the API's permission and question
 * routes; the asks leave the list when the server says they were answered (by anyone).
 */
import type { PermissionRequest, QuestionRequest } from "@agent/domain"
import { useComputed, useSignal } from "@preact/signals"
import { post } from "./Api.js"
import { useStore } from "./Context.js"
import { UnifiedText } from "./DiffView.js"

const Failure = (props: { readonly error: string | undefined }) =>
  props.error ? <p class="error" role="alert">{props.error}</p> : null

const useAction = () => {
  const busy = useSignal(false)
  const error = useSignal<string | undefined>(undefined)
  const run = async (action: () => Promise<unknown>) => {
    busy.value = true
    error.value = undefined
    try {
      await action()
    } catch (failure) {
      error.value = failure instanceof Error ? failure.message : String(failure)
    } finally {
      busy.value = false
    }
  }
  return { busy, error, run }
}

const SessionLink = (props: { readonly sessionID: string }) => {
  const store = useStore()
  const session = store.state.value.sessions[props.sessionID]
  return <a href={`/sessions/${props.sessionID}`}>{session?.title || props.sessionID}</a>
}

export const PermissionCard = (props: { readonly request: PermissionRequest }) => {
  const { request } = props
  const store = useStore()
  const action = useAction()
  const rejecting = useSignal(false)
  const feedback = useSignal("")
  const metadata = request.metadata as { command?: unknown; diff?: unknown; filepath?: unknown; description?: unknown }
  const reply = (reply: "once" | "always" | "reject", message?: string) =>
    action.run(() => post(`/permission/${request.id}/reply`, { reply, ...(message ? { message } : {}) }))
  const where = store.info.value.approvals
  return (
    <article class="ask" data-testid="permission" data-permission={request.id} aria-label={`Permission ${request.permission}`}>
      <header>
        <span class="badge waiting">{request.permission}</span>
        <SessionLink sessionID={request.sessionID} />
        <a class="ghost small" href={`/permission/${request.id}`} title="A link to this ask">link</a>
      </header>
      {typeof metadata.description === "string" ? <p>{metadata.description}</p> : null}
      {typeof metadata.command === "string" ? <pre class="command" data-testid="command">{metadata.command}</pre> : null}
      {typeof metadata.filepath === "string" ? <p class="path">{metadata.filepath}</p> : null}
      <p class="patterns">Patterns: {request.patterns.map((pattern) => <code key={pattern}>{pattern}</code>)}</p>
      {typeof metadata.diff === "string" ? <UnifiedText text={metadata.diff} /> : null}
      {request.requiresPerson ? <p class="note warn">Only a person may answer: {request.requiresPerson}</p> : null}
      <div class="actions">
        <button type="button" disabled={action.busy.value} onClick={() => void reply("once")}>Allow once</button>
        {request.always.length > 0
          ? (
            <button
              type="button"
              disabled={action.busy.value}
              onClick={() => void reply("always")}
              title={`Stores the rule ${request.permission}: ${request.always.join(", ")} → allow${where ? ` in ${where}` : ""}`}
            >
              Allow always
            </button>
          )
          : null}
        <button type="button" class="danger" disabled={action.busy.value} onClick={() => void reply("reject")}>Reject</button>
        <button type="button" class="ghost" aria-expanded={rejecting.value} onClick={() => (rejecting.value = !rejecting.value)}>
          Reject with a message…
        </button>
      </div>
      {request.always.length > 0
        ? (
          <p class="rule" data-testid="always-rule">
            “Allow always” stores the rule <code>{request.permission}</code> for{" "}
            {request.always.map((pattern) => <code key={pattern}>{pattern}</code>)} → allow
            {where ? <> in <code>{where}</code></> : null} (this project).
          </p>
        )
        : null}
      {rejecting.value
        ? (
          <form
            class="reject-form"
            onSubmit={(event) => {
              event.preventDefault()
              void reply("reject", feedback.value.trim())
            }}
          >
            <textarea
              name="feedback"
              rows={2}
              placeholder="What the model should do instead"
              aria-label="Message for the model"
              value={feedback.value}
              onInput={(event) => (feedback.value = (event.target as HTMLTextAreaElement).value)}
            />
            <button type="submit" class="danger" disabled={action.busy.value || feedback.value.trim() === ""}>Reject and tell the model</button>
          </form>
        )
        : null}
      <Failure error={action.error.value} />
    </article>
  )
}

export const QuestionCard = (props: { readonly request: QuestionRequest }) => {
  const { request } = props
  const action = useAction()
  const chosen = useSignal<ReadonlyArray<ReadonlyArray<string>>>(request.questions.map(() => []))
  const typed = useSignal<ReadonlyArray<string>>(request.questions.map(() => ""))
  const toggle = (index: number, label: string, multiple: boolean) => {
    const current = chosen.value[index] ?? []
    const next = multiple ? (current.includes(label) ? current.filter((entry) => entry !== label) : [...current, label]) : [label]
    chosen.value = chosen.value.map((entry, at) => (at === index ? next : entry))
  }
  const answers = () => request.questions.map((_, index) => {
    const text = (typed.value[index] ?? "").trim()
    return text !== "" ? [...(chosen.value[index] ?? []), text] : [...(chosen.value[index] ?? [])]
  })
  return (
    <article class="ask" data-testid="question" aria-label="Question from the model">
      <header>
        <span class="badge waiting">question</span>
        <SessionLink sessionID={request.sessionID} />
      </header>
      {request.questions.map((question, index) => (
        <fieldset key={index}>
          <legend>{question.header}</legend>
          <p>{question.question}</p>
          {question.options.map((option) => (
            <label key={option.label} class="option">
              <input
                type={question.multiple ? "checkbox" : "radio"}
                name={`q${index}`}
                checked={(chosen.value[index] ?? []).includes(option.label)}
                onChange={() => toggle(index, option.label, question.multiple === true)}
              />
              <span>{option.label}</span> <small>{option.description}</small>
            </label>
          ))}
          {question.custom !== false
            ? (
              <input
                type="text"
                placeholder="Or type an answer"
                aria-label={`Answer to ${question.header}`}
                value={typed.value[index] ?? ""}
                onInput={(event) => (typed.value = typed.value.map((entry, at) => (at === index ? (event.target as HTMLInputElement).value : entry)))}
              />
            )
            : null}
        </fieldset>
      ))}
      <div class="actions">
        <button type="button" disabled={action.busy.value} onClick={() => void action.run(() => post(`/question/${request.id}/reply`, { answers: answers() }))}>
          Answer
        </button>
        <button type="button" class="danger" disabled={action.busy.value} onClick={() => void action.run(() => post(`/question/${request.id}/reject`))}>
          Dismiss
        </button>
      </div>
      <Failure error={action.error.value} />
    </article>
  )
}

/** The asks of one session, or of all when `sessionID` is absent, oldest first. */
export const AskList = (props: { readonly sessionID?: string }) => {
  const store = useStore()
  const asks = useComputed(() => {
    const { permissions, questions } = store.state.value
    const all = [
      ...Object.values(permissions).map((request) => ({ kind: "permission" as const, request, time: request.time.created })),
      ...Object.values(questions).map((request) => ({ kind: "question" as const, request, time: request.time.created }))
    ]
    return all.filter((ask) => props.sessionID === undefined || ask.request.sessionID === props.sessionID).sort((a, b) => a.time - b.time)
  })
  if (asks.value.length === 0) return props.sessionID ? null : <p class="empty">Nothing is waiting for an answer.</p>
  return (
    <div class="asks">
      {asks.value.map((ask) =>
        ask.kind === "permission"
          ? <PermissionCard key={ask.request.id} request={ask.request} />
          : <QuestionCard key={ask.request.id} request={ask.request} />
      )}
    </div>
  )
}

export const Approvals = () => (
  <section class="approvals" aria-label="Approvals">
    <h1>Waiting for you</h1>
    <AskList />
  </section>
)

/** `/permission/<id>`: one ask, as a webhook links to it; also a question's id. */
export const OneAsk = (props: { readonly id: string }) => {
  const store = useStore()
  const permission = store.state.value.permissions[props.id]
  const question = store.state.value.questions[props.id]
  return (
    <section class="approvals" aria-label="One ask">
      {permission ? <PermissionCard request={permission} /> : null}
      {question ? <QuestionCard request={question} /> : null}
      {!permission && !question
        ? (
          <p class="empty" data-testid="ask-gone">
            {store.loaded.value ? "This ask was answered or is no longer pending." : "Loading…"} <a href="/approvals">All approvals</a>
          </p>
        )
        : null}
    </section>
  )
}
