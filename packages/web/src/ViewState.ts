/**
 * What the page knows, as one value, and how each server event changes it: a pure reducer
 * (table-tested in test/ViewState.test.ts). Store.ts keeps the value in a signal; views read
 * slices of it. Updates share what did not change, so a view re-renders only when its slice does.
 */
import type { BusEvent, FileDiff, Message, Part, PermissionRequest, QuestionRequest, Session, SessionStatus, Todo } from "@agent/domain"

export type WireSession = Omit<Session, never>

/** How a session's last run ended, when it did not simply finish. */
export interface Outcome {
  readonly reason: string
  readonly message?: string
}

export interface MessageEntry {
  readonly info: Message
  readonly parts: ReadonlyArray<Part>
}

/** The transcript of the session on screen (only that one is kept: a long session holds thousands of parts). */
export interface Transcript {
  readonly sessionID: string
  readonly messages: ReadonlyArray<MessageEntry>
}

export interface ViewState {
  readonly sessions: Readonly<Record<string, WireSession>>
  readonly status: Readonly<Record<string, SessionStatus>>
  readonly outcomes: Readonly<Record<string, Outcome>>
  readonly permissions: Readonly<Record<string, PermissionRequest>>
  readonly questions: Readonly<Record<string, QuestionRequest>>
  readonly todos: Readonly<Record<string, ReadonlyArray<Todo>>>
  readonly diffs: Readonly<Record<string, ReadonlyArray<FileDiff>>>
  readonly transcript?: Transcript
}

export const emptyState: ViewState = { sessions: {}, status: {}, outcomes: {}, permissions: {}, questions: {}, todos: {}, diffs: {} }

const without = <A>(record: Readonly<Record<string, A>>, key: string): Readonly<Record<string, A>> => {
  if (!(key in record)) return record
  const { [key]: _removed, ...rest } = record
  return rest
}

/** Run stop reasons that mean a limit stopped it (steps, time, stall, budget). */
const LIMITS = new Set(["steps", "duration", "stall", "budget"])

const onTranscript = (state: ViewState, sessionID: string, change: (transcript: Transcript) => Transcript): ViewState => {
  const transcript = state.transcript
  if (transcript === undefined || transcript.sessionID !== sessionID) return state
  const next = change(transcript)
  return next === transcript ? state : { ...state, transcript: next }
}

const upsertMessage = (transcript: Transcript, info: Message): Transcript => {
  const index = transcript.messages.findLastIndex((entry) => entry.info.id === info.id)
  const messages = transcript.messages.slice()
  if (index >= 0) messages[index] = { info, parts: messages[index]!.parts }
  else {
    // Ids sort by time: insert in order (a message normally comes last).
    let at = messages.length
    while (at > 0 && messages[at - 1]!.info.id > info.id) at--
    messages.splice(at, 0, { info, parts: [] })
  }
  return { ...transcript, messages }
}

const changeParts = (
  transcript: Transcript,
  messageID: string,
  change: (parts: ReadonlyArray<Part>) => ReadonlyArray<Part>
): Transcript => {
  const index = transcript.messages.findLastIndex((entry) => entry.info.id === messageID)
  if (index < 0) return transcript
  const entry = transcript.messages[index]!
  const parts = change(entry.parts)
  if (parts === entry.parts) return transcript
  const messages = transcript.messages.slice()
  messages[index] = { info: entry.info, parts }
  return { ...transcript, messages }
}

const upsertPart = (parts: ReadonlyArray<Part>, part: Part): ReadonlyArray<Part> => {
  const index = parts.findLastIndex((entry) => entry.id === part.id)
  const next = parts.slice()
  if (index >= 0) next[index] = part
  else {
    let at = next.length
    while (at > 0 && next[at - 1]!.id > part.id) at--
    next.splice(at, 0, part)
  }
  return next
}

const appendDelta = (parts: ReadonlyArray<Part>, partID: string, field: string, delta: string): ReadonlyArray<Part> => {
  const index = parts.findLastIndex((entry) => entry.id === partID)
  if (index < 0) return parts
  const part = parts[index]! as Part & Record<string, unknown>
  const current = part[field]
  if (typeof current !== "string") return parts
  const next = parts.slice()
  next[index] = { ...part, [field]: current + delta } as Part
  return next
}

/** The state after one server event; the same value when the event changes nothing the page shows. */
export const applyEvent = (state: ViewState, event: BusEvent): ViewState => {
  switch (event.type) {
    case "session.created":
    case "session.updated":
      return { ...state, sessions: { ...state.sessions, [event.properties.info.id]: event.properties.info } }
    case "session.deleted":
      return { ...state, sessions: without(state.sessions, event.properties.info.id) }
    case "session.status": {
      const { sessionID, status } = event.properties
      const outcomes = status.type === "busy" ? without(state.outcomes, sessionID) : state.outcomes
      return { ...state, status: { ...state.status, [sessionID]: status }, outcomes }
    }
    case "session.idle":
      return { ...state, status: { ...state.status, [event.properties.sessionID]: { type: "idle" } } }
    case "session.error": {
      const { sessionID, error } = event.properties
      if (sessionID === undefined) return state
      const outcome: Outcome = { reason: "error", ...(error ? { message: error.data.message } : {}) }
      return { ...state, outcomes: { ...state.outcomes, [sessionID]: outcome } }
    }
    case "prompt.finished": {
      const { sessionID, reason, error } = event.properties
      if (reason === "completed") return { ...state, outcomes: without(state.outcomes, sessionID) }
      const outcome: Outcome = { reason, ...(error ? { message: error.data.message } : {}) }
      return { ...state, outcomes: { ...state.outcomes, [sessionID]: outcome } }
    }
    case "permission.asked":
      return { ...state, permissions: { ...state.permissions, [event.properties.id]: event.properties } }
    case "permission.replied":
      return { ...state, permissions: without(state.permissions, event.properties.requestID) }
    case "question.asked":
      return { ...state, questions: { ...state.questions, [event.properties.id]: event.properties } }
    case "question.replied":
    case "question.rejected":
      return { ...state, questions: without(state.questions, event.properties.requestID) }
    case "todo.updated":
      return { ...state, todos: { ...state.todos, [event.properties.sessionID]: event.properties.todos } }
    case "session.diff":
      return { ...state, diffs: { ...state.diffs, [event.properties.sessionID]: event.properties.diff } }
    case "message.updated":
      return onTranscript(state, event.properties.info.sessionID, (transcript) => upsertMessage(transcript, event.properties.info))
    case "message.removed":
      return onTranscript(state, event.properties.sessionID, (transcript) => {
        const messages = transcript.messages.filter((entry) => entry.info.id !== event.properties.messageID)
        return messages.length === transcript.messages.length ? transcript : { ...transcript, messages }
      })
    case "message.part.updated": {
      const part = event.properties.part
      return onTranscript(state, part.sessionID, (transcript) => changeParts(transcript, part.messageID, (parts) => upsertPart(parts, part)))
    }
    case "message.part.delta": {
      const { sessionID, messageID, partID, field, delta } = event.properties
      return onTranscript(state, sessionID, (transcript) => changeParts(transcript, messageID, (parts) => appendDelta(parts, partID, field, delta)))
    }
    case "message.part.removed": {
      const { sessionID, messageID, partID } = event.properties
      return onTranscript(state, sessionID, (transcript) =>
        changeParts(transcript, messageID, (parts) => {
          const next = parts.filter((part) => part.id !== partID)
          return next.length === parts.length ? parts : next
        }))
    }
    default:
      return state
  }
}

/** What the sessions list says a session is doing. */
export type RowStatus = "idle" | "running" | "waiting" | "error" | "limit"

export const STATUS_LABEL: Record<RowStatus, string> = {
  idle: "idle",
  running: "running",
  waiting: "waiting for approval",
  error: "error",
  limit: "stopped by a limit"
}

/** A pending ask outranks a run in progress; a failed or limited last run shows until the next one starts. */
export const rowStatus = (state: ViewState, sessionID: string): RowStatus => {
  for (const request of Object.values(state.permissions)) if (request.sessionID === sessionID) return "waiting"
  for (const request of Object.values(state.questions)) if (request.sessionID === sessionID) return "waiting"
  const status = state.status[sessionID]
  if (status !== undefined && status.type !== "idle") return "running"
  const outcome = state.outcomes[sessionID]
  if (outcome === undefined) return "idle"
  return LIMITS.has(outcome.reason) ? "limit" : outcome.reason === "error" ? "error" : "idle"
}

/** Sessions newest first (by last update), children under their parents, filtered by a title search. */
export interface SessionRow {
  readonly session: WireSession
  readonly depth: number
}

export const sessionRows = (sessions: ReadonlyArray<WireSession>, search: string): ReadonlyArray<SessionRow> => {
  const query = search.trim().toLowerCase()
  const byParent = new Map<string, Array<WireSession>>()
  const ids = new Set(sessions.map((session) => session.id))
  const roots: Array<WireSession> = []
  for (const session of sessions) {
    if (session.parentID !== undefined && ids.has(session.parentID)) {
      const siblings = byParent.get(session.parentID) ?? []
      siblings.push(session)
      byParent.set(session.parentID, siblings)
    } else roots.push(session)
  }
  const newest = (a: WireSession, b: WireSession) => b.time.updated - a.time.updated || (b.id > a.id ? 1 : -1)
  const matches = (session: WireSession): boolean =>
    query === "" || session.title.toLowerCase().includes(query) || (byParent.get(session.id) ?? []).some(matches)
  const rows: Array<SessionRow> = []
  const walk = (session: WireSession, depth: number) => {
    if (!matches(session)) return
    rows.push({ session, depth })
    for (const child of (byParent.get(session.id) ?? []).sort(newest)) walk(child, depth + 1)
  }
  for (const root of roots.sort(newest)) walk(root, 0)
  return rows
}
