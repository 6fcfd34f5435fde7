/**
 * The page's state: a `ViewState` in a signal, loaded from the API and kept current by the event
 * stream. Events that arrive while a load is in flight wait for it and are applied after, so the
 * load and the stream neither miss nor double anything the reducer cannot take twice.
 */
import { computed, signal } from "@preact/signals"
import type { Agent, BusEvent, FileDiff, MessageWithParts, PermissionRequest, QuestionRequest, SessionStatus, Todo } from "@agent/domain"
import { get } from "./Api.js"
import { type Connection, follow } from "./EventStream.js"
import { applyEvent, emptyState, type ViewState, type WireSession } from "./ViewState.js"

export interface ServerInfo {
  readonly agents: ReadonlyArray<Agent>
  /** Model choices the config names (`provider/model`). */
  readonly models: ReadonlyArray<string>
  /** Where "allow always" answers are kept. */
  readonly approvals?: string
  readonly directory?: string
}

interface ConfigModels {
  readonly model?: string
  readonly small_model?: string
  readonly provider?: Record<string, { readonly models?: Record<string, unknown> }>
}

const modelsOf = (config: ConfigModels, agents: ReadonlyArray<Agent>): ReadonlyArray<string> => {
  const models = new Set<string>()
  if (config.model) models.add(config.model)
  for (const agent of agents) if (agent.model) models.add(`${agent.model.providerID}/${agent.model.modelID}`)
  for (const [provider, entry] of Object.entries(config.provider ?? {})) {
    for (const model of Object.keys(entry.models ?? {})) models.add(`${provider}/${model}`)
  }
  if (config.small_model) models.add(config.small_model)
  return [...models]
}

const loadTranscript = async (sessionID: string) => {
  const [session, messages, todos, diff, children] = await Promise.all([
    get<WireSession>(`/session/${sessionID}`),
    get<ReadonlyArray<MessageWithParts>>(`/session/${sessionID}/message`),
    get<ReadonlyArray<Todo>>(`/session/${sessionID}/todo`),
    get<ReadonlyArray<FileDiff>>(`/session/${sessionID}/diff`),
    // The list has root sessions only; a session's subagents come with it.
    get<ReadonlyArray<WireSession>>(`/session/${sessionID}/children`)
  ])
  return { messages, todos, diff, children: [session, ...children] }
}

export const createStore = () => {
  const state = signal<ViewState>(emptyState)
  const connection = signal<Connection>("connecting")
  const loaded = signal(false)
  const loadError = signal<string | undefined>(undefined)
  const info = signal<ServerInfo>({ agents: [], models: [] })
  const openID = signal<string | undefined>(undefined)
  const lastEventId = signal<number | undefined>(undefined)
  /** Events held while a load is in flight; undefined when none is. */
  let held: Array<BusEvent> | undefined
  let pending: Array<BusEvent> = []
  let flushQueued = false
  let loads = 0

  const flush = () => {
    flushQueued = false
    const events = pending
    pending = []
    let next = state.peek()
    for (const event of events) next = applyEvent(next, event)
    state.value = next
  }

  const onEvent = (event: BusEvent, id: number) => {
    lastEventId.value = id
    if (held) return void held.push(event)
    pending.push(event)
    // One state change per burst of events (a chunk of the stream), not one per event.
    if (!flushQueued) {
      flushQueued = true
      queueMicrotask(flush)
    }
  }

  let depth = 0
  /**
   * Runs a load with the event stream held: the loaded value is merged into the state, then the
   * events that arrived meanwhile are applied, once no other load is in flight.
   */
  const holding = async <A>(fetchAll: () => Promise<A>, merge: (current: ViewState, loaded: A) => ViewState | undefined) => {
    depth++
    held = held ?? []
    try {
      const value = await fetchAll()
      const merged = merge(state.peek(), value)
      if (merged) state.value = merged
      loadError.value = undefined
    } catch (error) {
      loadError.value = error instanceof Error ? error.message : String(error)
    } finally {
      depth--
      if (depth === 0) {
        let next = state.peek()
        for (const event of held ?? []) next = applyEvent(next, event)
        held = undefined
        state.value = next
      }
    }
  }

  /** Everything from the API (on connecting, and after events were lost). */
  const load = () => {
    const generation = ++loads
    const open = openID.peek()
    return holding(
      () =>
        Promise.all([
          get<ReadonlyArray<WireSession>>("/session?limit=500"),
          get<Record<string, SessionStatus>>("/session/status"),
          get<ReadonlyArray<PermissionRequest>>("/permission"),
          get<ReadonlyArray<QuestionRequest>>("/question"),
          open ? loadTranscript(open) : Promise.resolve(undefined)
        ]),
      (current, [sessions, status, permissions, questions, transcript]) => {
        if (generation !== loads) return undefined
        loaded.value = true
        const next: ViewState = {
          ...emptyState,
          sessions: Object.fromEntries(sessions.map((session) => [session.id, session])),
          status,
          outcomes: current.outcomes,
          permissions: Object.fromEntries(permissions.map((request) => [request.id, request])),
          questions: Object.fromEntries(questions.map((request) => [request.id, request]))
        }
        if (!transcript || !open || openID.peek() !== open) return next
        return {
          ...next,
          sessions: { ...next.sessions, ...Object.fromEntries(transcript.children.map((child) => [child.id, child])) },
          transcript: { sessionID: open, messages: transcript.messages },
          todos: { [open]: transcript.todos },
          diffs: { [open]: transcript.diff }
        }
      }
    )
  }

  const loadInfo = async () => {
    const [agents, config, paths] = await Promise.all([
      get<ReadonlyArray<Agent>>("/agent"),
      get<ConfigModels>("/config"),
      get<{ approvals?: string; directory?: string }>("/path")
    ])
    info.value = {
      agents,
      models: modelsOf(config, agents),
      ...(paths.approvals !== undefined ? { approvals: paths.approvals } : {}),
      ...(paths.directory !== undefined ? { directory: paths.directory } : {})
    }
  }

  /** Shows one session's transcript (and drops the one shown before). */
  const open = (sessionID: string | undefined) => {
    if (openID.peek() === sessionID) return Promise.resolve()
    openID.value = sessionID
    if (sessionID === undefined) {
      const { transcript: _dropped, ...rest } = state.peek()
      state.value = rest
      return Promise.resolve()
    }
    return holding(() => loadTranscript(sessionID), (current, loadedTranscript) => {
      if (openID.peek() !== sessionID) return undefined
      return {
        ...current,
        sessions: { ...current.sessions, ...Object.fromEntries(loadedTranscript.children.map((child) => [child.id, child])) },
        transcript: { sessionID, messages: loadedTranscript.messages },
        todos: { ...current.todos, [sessionID]: loadedTranscript.todos },
        diffs: { ...current.diffs, [sessionID]: loadedTranscript.diff }
      }
    })
  }

  const start = (signal: AbortSignal) => {
    void loadInfo().catch(() => undefined)
    // A first paint without waiting for the stream; the load once it is connected is the one that counts.
    void load()
    void follow({
      onOpen: (resumed) => {
        if (!resumed) void load()
      },
      onEvent,
      onConnection: (value) => (connection.value = value)
    }, signal)
  }

  const pendingCount = computed(() => Object.keys(state.value.permissions).length + Object.keys(state.value.questions).length)

  return { state, connection, loaded, loadError, info, openID, lastEventId, pendingCount, start, open, reload: load }
}

export type Store = ReturnType<typeof createStore>
