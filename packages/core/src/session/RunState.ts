// The state of one run as a value: its history (the model's view, grown by its steps), its usage,
// its clocks. Run.ts, Step.ts and ToolCall.ts take it as an argument; nothing else holds it.
import type { Agent, AssistantMessage, FinishReason, MessageError, MessageID, Part, Session, SessionID } from "@agent/domain"
import { Effect, type FiberSet } from "effect"
import * as Identifier from "../runtime/Identifier.js"
import type { LiveMessage } from "../llm/MessageConversion.js"
import type { ResolvedModel } from "../llm/ProviderRegistry.js"
import type { StepRecorder } from "../snapshot/Snapshot.js"
import type { LoopDeps } from "./LoopDeps.js"
import { emptyUsage, type RunOptions } from "./LoopTypes.js"
import { makeRequestCache, type RequestCache } from "./Request.js"

export interface RunState {
  readonly sessionID: SessionID
  readonly session: Session
  readonly options: RunOptions
  /** User messages sent while the run is going (the runner's); taken in at the start of the next step. */
  readonly incoming: Array<LiveMessage>
  /** The model's view of the session; a compaction replaces it. */
  history: Array<LiveMessage>
  readonly requests: RequestCache
  readonly started: number
  readonly usage: { cost: number; tokens: number; steps: number }
  /** When a part last changed or a person answered (the stall limit). */
  lastActivity: number
  /** Permission asks waiting for a person: no stall meanwhile. */
  waitingOnUser: number
  /** The run's newest assistant message, completed by the clean-up when the run stops early. */
  lastAssistant: LiveMessage | undefined
  /** Snapshots of this run's steps (Snapshot.ts). */
  readonly stepFiles: StepRecorder
  /**
   * The tool calls of the run's steps, in the run's scope: a step waits for its own to end, a step that ends
   * early interrupts them (Step.ts, `endEarly`).
   */
  readonly toolFibers: FiberSet.FiberSet<void, never>
  /** A step changed files: the session's diff is refreshed at the end. */
  filesChanged: boolean
  /** A summary was made and no real step followed yet (a second one in a row would not help). */
  compactedWithoutStep: boolean
  /** Stop hooks that blocked the agent from stopping, in a row (HookEvents.onStop). */
  stopHookBlocks: number
}

export const makeRunState = (input: {
  readonly session: Session
  readonly options: RunOptions
  readonly incoming: Array<LiveMessage>
  readonly history: Array<LiveMessage>
  readonly stepFiles: StepRecorder
  readonly toolFibers: FiberSet.FiberSet<void, never>
}): RunState => ({
  sessionID: input.session.id,
  session: input.session,
  options: input.options,
  incoming: input.incoming,
  history: input.history,
  requests: makeRequestCache(),
  started: Date.now(),
  usage: { cost: 0, tokens: 0, steps: 0 },
  lastActivity: Date.now(),
  waitingOnUser: 0,
  lastAssistant: undefined,
  stepFiles: input.stepFiles,
  toolFibers: input.toolFibers,
  filesChanged: false,
  compactedWithoutStep: false,
  stopHookBlocks: 0
})

export const touch = (state: RunState) => void (state.lastActivity = Date.now())

/** Messages sent during the run join its history (once). */
export const takeIncoming = (state: RunState) => {
  for (const message of state.incoming.splice(0)) {
    if (!state.history.some((existing) => existing.info.id === message.info.id)) state.history.push(message)
  }
}

/** Sets a part of a message of the run (new or changed) and stores it. */
export const writePart = (deps: LoopDeps, state: RunState, message: LiveMessage, part: Part) =>
  Effect.suspend(() => {
    const index = message.parts.findIndex((existing) => existing.id === part.id)
    if (index >= 0) message.parts[index] = part
    else message.parts.push(part)
    touch(state)
    return deps.store.upsertPart(part)
  })

/** Completes an assistant message (its finish reason or error) and stores it. */
export const finishMessage = (
  deps: LoopDeps,
  message: LiveMessage,
  update: { readonly finish?: FinishReason; readonly error?: MessageError }
) =>
  Effect.suspend(() => {
    const info = message.info as AssistantMessage
    message.info = {
      ...info,
      time: { ...info.time, completed: Date.now() },
      ...(update.finish ? { finish: update.finish } : {}),
      ...(update.error ? { error: update.error } : {})
    }
    return deps.store.upsertMessage(message.info)
  })

/** A new, empty assistant message answering `user`: stored, and appended to the history. */
export const startAssistantMessage = (deps: LoopDeps, state: RunState, user: LiveMessage, agent: Agent, model: ResolvedModel) =>
  Effect.suspend(() => {
    const info: AssistantMessage = {
      id: Identifier.ascending("message") as MessageID,
      sessionID: state.sessionID,
      role: "assistant",
      time: { created: Date.now() },
      parentID: user.info.id,
      providerID: model.info.providerID,
      modelID: model.info.modelID,
      agent: agent.name,
      mode: agent.name,
      path: { cwd: deps.instance.directory, root: deps.instance.worktree },
      cost: 0,
      tokens: emptyUsage(),
      ...(user.info.role === "user" && user.info.model.variant !== undefined ? { variant: user.info.model.variant } : {})
    }
    const message: LiveMessage = { info, parts: [] }
    state.history.push(message)
    state.lastAssistant = message
    return Effect.as(deps.store.upsertMessage(info), message)
  })
