// A run: steps until the model is done or a limit stops it, over the run's state (RunState.ts).
// Decisions are Decisions.ts's; a step is Step.ts's; summarizing is context/Compaction.ts's.
import type { Agent, AssistantMessage, MessageError, SessionID, UserMessage } from "@agent/domain"
import { Duration, Effect, FiberSet, Option } from "effect"
import * as Prompts from "../runtime/Prompts.js"
import { warnBackgroundFailure } from "../runtime/BackgroundFailure.js"
import type { LiveMessage } from "../llm/MessageConversion.js"
import type { ResolvedModel } from "../llm/ProviderRegistry.js"
import type * as Tool from "../tool/Tool.js"
import * as Decisions from "./Decisions.js"
import { beforeCompact, onStop } from "./HookEvents.js"
import type { LoopDeps } from "./LoopDeps.js"
import { type Ending, errorOf, type LoopError, type RunOptions, type RunOutcome, type StopReason, StopRun, stopRun } from "./LoopTypes.js"
import { finishMessage, makeRunState, type RunState, takeIncoming, touch, writePart } from "./RunState.js"
import { processStep } from "./Step.js"
import { type LoopControl, runPendingSubtask } from "./Subagent.js"
import { generateTitle } from "./Titles.js"
import { tracedWith } from "../runtime/Tracing.js"
import * as GenAiSpans from "./GenAiSpans.js"
import type { CreateUserMessage } from "./UserMessages.js"

/** What the run shares with its runner: the prompt's options, messages sent meanwhile, why it was stopped. */
export interface RunRequest {
  readonly options: RunOptions
  readonly incoming: Array<LiveMessage>
  /** Set before the run is interrupted, so the clean-up can say why. */
  stopReason: StopReason | undefined
  stopError: MessageError | undefined
}

/** The loop's parts a run calls back into. */
export interface RunEnv {
  readonly deps: LoopDeps
  readonly control: LoopControl
  readonly task: Tool.Tool
  readonly createUserMessage: CreateUserMessage
}

/** The run's time limits, checked every second: fails with the limit that stopped it. */
const guards = (state: RunState, agent: Agent) =>
  Effect.gen(function*() {
    const limits = agent.limits
    if (!limits?.duration && !limits?.stall) return yield* Effect.never
    for (;;) {
      yield* Effect.sleep(Duration.seconds(1))
      const ending = Decisions.timeLimit({
        limits,
        now: Date.now(),
        started: state.started,
        lastActivity: state.lastActivity,
        waitingOnUser: state.waitingOnUser > 0
      })
      if (ending) return yield* Effect.fail(new StopRun(ending))
    }
  })

/** Replaces the run's history by [tail, summary request, summary] (+ a nudge to go on). */
const compactHistory = (env: RunEnv, state: RunState, input: { model: ResolvedModel; user: UserMessage; auto: boolean; overflow: boolean }) =>
  Effect.gen(function*() {
    yield* beforeCompact(env.deps, state.sessionID, input.auto)
    const result = yield* env.deps.compaction.compact({ sessionID: state.sessionID, history: state.history, ...input }).pipe(
      Effect.catchAll((error) => stopRun("error", errorOf("CompactionError", `Summarizing the session failed: ${error.message}`)))
    )
    state.history = [...result.tail, result.user, result.summary]
    state.compactedWithoutStep = true
    touch(state)
    if (input.auto) {
      const nudge = yield* env.createUserMessage({
        sessionID: state.sessionID,
        parts: [{ type: "text", text: Prompts.read("session/continue.txt"), synthetic: true }],
        agent: input.user.agent,
        model: input.user.model,
        ...(input.user.system ? { system: input.user.system } : {}),
        ...(input.user.tools ? { tools: input.user.tools } : {})
      }).pipe(Effect.orDie)
      state.history.push(nudge)
    }
  })

/** A Stop hook blocked: its reason goes to the model as a new user message, and the run goes on. */
const continueAfterStopHook = (env: RunEnv, state: RunState, reason: string) =>
  Effect.gen(function*() {
    const user = Decisions.latestUser(state.history)
    if (!user) return
    const message = yield* env.createUserMessage({
      sessionID: state.sessionID,
      parts: [{ type: "text", text: reason, synthetic: true }],
      agent: user.info.agent,
      model: user.info.model
    }).pipe(Effect.orDie)
    state.history.push(message)
  })

/** Summarizes, or stops the run when a summary just made was not enough (Decisions.compactionTrigger). */
const onOverflow = (env: RunEnv, state: RunState, input: { model: ResolvedModel; user: UserMessage; overflow: boolean }) =>
  state.compactedWithoutStep
    ? stopRun("error", errorOf("ContextOverflowError", Decisions.COMPACTION_NOT_ENOUGH))
    : compactHistory(env, state, { ...input, auto: true })

/** The steps: each takes in messages sent meanwhile, runs a pending subtask, summarizes, or asks the model. */
const steps = (env: RunEnv, state: RunState): Effect.Effect<Ending, LoopError | StopRun> =>
  Effect.gen(function*() {
    const { deps } = env
    const auto = deps.compaction.auto
    for (let step = 1;; step++) {
      takeIncoming(state)
      if (Decisions.isDone(state.history)) {
        const stop = yield* onStop(deps, state)
        if (stop._tag === "Stop") return { reason: "completed" as const }
        yield* continueAfterStopHook(env, state, stop.reason)
        continue
      }
      const user = Decisions.latestUser(state.history)
      if (!user) return { reason: "completed" as const }
      state.usage.steps = step
      const agent = yield* deps.resolveAgent(user.info.agent)
      const model = yield* deps.providers.resolve(user.info.model)
      if (step === 1 && Decisions.needsTitle(state.session)) {
        yield* FiberSet.run(deps.background, generateTitle(deps, state.sessionID, user, model))
      }
      // A subtask the user asked for (a subtask part or an @agent mention) runs first.
      const subtask = Decisions.pendingSubtask(state.history, user)
      if (subtask) {
        yield* runPendingSubtask(deps, env.control, state, { subtask, user, agent, model })
        continue
      }
      // The last step filled the window: summarize before asking again. Only steps after the latest
      // summary count, and never twice without a real step in between.
      const lastStep = Decisions.lastFinishedAfterSummary(state.history)
      const full = lastStep !== undefined &&
        deps.compaction.isOverflow(lastStep.info as AssistantMessage, model.info, Decisions.addedSince(state.history, lastStep))
      if (Decisions.compactionTrigger({ auto, overflow: full, compactedWithoutStep: state.compactedWithoutStep })) {
        yield* onOverflow(env, state, { model, user: user.info, overflow: false })
        continue
      }
      const outcome = yield* processStep(deps, state, { agent, model, user, step, task: env.task })
      const refused = outcome?.reason === "error" && outcome.error?.data.contextOverflow === true
      if (Decisions.compactionTrigger({ auto, overflow: refused, compactedWithoutStep: state.compactedWithoutStep })) {
        yield* onOverflow(env, state, { model, user: user.info, overflow: true })
        continue
      }
      state.compactedWithoutStep = false
      if (outcome) return outcome
      const ending = Decisions.afterStep({
        limits: agent.limits,
        usage: state.usage,
        step,
        stepLimit: Decisions.stepLimit(agent.steps, state.options.maxSteps),
        done: Decisions.isDone(state.history)
      })
      if (ending) return yield* Effect.fail(new StopRun(ending))
    }
  })

/** Summarizes the session instead of running the model on it. */
const compactOnly = (env: RunEnv, state: RunState) =>
  Effect.gen(function*() {
    const user = Decisions.latestUser(state.history)
    if (!user) return { reason: "completed" as const }
    const model = yield* env.deps.providers.resolve(user.info.model)
    yield* compactHistory(env, state, { model, user: user.info, auto: false, overflow: false })
    return { reason: "completed" as const }
  })

/** Marks everything left unfinished by an abort or a limit, then completes the message. */
const cleanUp = (deps: LoopDeps, state: RunState, reason: StopReason, error: MessageError | undefined) =>
  Effect.gen(function*() {
    yield* deps.store.flush()
    const message = state.lastAssistant
    if (!message || message.info.role !== "assistant" || message.info.time.completed !== undefined) return
    const now = Date.now()
    for (const part of [...message.parts]) {
      if (part.type === "tool" && (part.state.status === "pending" || part.state.status === "running")) {
        const metadata = part.state.status === "running" ? part.state.metadata ?? {} : {}
        yield* writePart(deps, state, message, {
          ...part,
          state: {
            status: "error",
            input: part.state.input,
            error: "Tool execution aborted",
            metadata: { ...metadata, interrupted: true },
            time: { start: part.state.status === "running" ? part.state.time.start : now, end: now }
          }
        })
      }
      if ((part.type === "text" || part.type === "reasoning") && part.time?.end === undefined) {
        const latest = (yield* deps.store.getMessage(state.sessionID, message.info.id).pipe(Effect.option)).pipe(
          Option.flatMap((stored) => Option.fromNullable(stored.parts.find((candidate) => candidate.id === part.id))),
          Option.getOrElse(() => part)
        )
        if (latest.type === "text" || latest.type === "reasoning") {
          yield* writePart(deps, state, message, { ...latest, time: { start: latest.time?.start ?? now, end: now } })
        }
      }
    }
    yield* finishMessage(deps, message, {
      error: error ?? errorOf("MessageAbortedError", reason === "aborted" ? "The run was aborted." : `The run was stopped (${reason}).`)
    })
  })

/** Runs the session until the model is done or the run is stopped; needs the run's scope. */
export const run = (env: RunEnv, sessionID: SessionID, request: RunRequest) =>
  Effect.gen(function*() {
    const { deps } = env
    const session = yield* deps.store.get(sessionID)
    const history = (yield* deps.store.history(sessionID)).map((message) => ({ info: message.info, parts: [...message.parts] }))
    const state = makeRunState({ session, options: request.options, incoming: request.incoming, history, stepFiles: deps.snapshots.steps(), toolFibers: yield* FiberSet.make<void, never>() })
    const user = Decisions.latestUser(state.history)
    const agent = user?.info.agent ?? "build"
    const logContent = deps.settings.logContent
    return yield* tracedWith(
      GenAiSpans.runSpanName(agent),
      () => ({
        kind: "internal",
        attributes: GenAiSpans.runAttributes(
          { sessionID, agent, providerID: user?.info.model.providerID ?? "", modelID: user?.info.model.modelID ?? "" },
          user?.parts,
          logContent
        )
      }),
      (annotate) => {
        const body = runSteps(env, state, request)
        return annotate
          ? Effect.tap(body, (outcome) =>
            annotate(GenAiSpans.runResultAttributes({
              reason: outcome.reason,
              steps: outcome.usage.steps,
              cost: outcome.usage.cost,
              answer: outcome.message?.parts,
              error: outcome.error?.name
            }, logContent)))
          : body
      }
    )
  })

/** The run's steps over its state, its clean-up when stopped, and what is done once it is over. */
const runSteps = (env: RunEnv, state: RunState, request: RunRequest) =>
  Effect.gen(function*() {
    const { deps } = env
    const sessionID = state.sessionID
    const limits = Effect.flatMap(deps.resolveAgent(Decisions.latestUser(state.history)?.info.agent), (agent) => guards(state, agent))
    const body: Effect.Effect<Ending, LoopError | StopRun> = request.options.compactOnly ? compactOnly(env, state) : steps(env, state)
    const outcome = yield* body.pipe(
      Effect.raceFirst(limits),
      Effect.catchIf(
        (error): error is StopRun => error instanceof StopRun,
        (stop) => cleanUp(deps, state, stop.reason, stop.error).pipe(Effect.as<Ending>({ reason: stop.reason, ...(stop.error ? { error: stop.error } : {}) }))
      ),
      Effect.onInterrupt(() => cleanUp(deps, state, request.stopReason ?? "aborted", request.stopError))
    )
    // Old tool outputs are cleared once the run is over, never in the middle of it.
    const pruned = yield* deps.compaction.prune(sessionID, state.history).pipe(
      Effect.map((result) => result.history),
      Effect.catchAllCause((cause) => Effect.as(warnBackgroundFailure("pruning old tool output failed")(cause), state.history))
    )
    state.history = [...pruned]
    if (state.filesChanged) {
      yield* deps.sessionChanges.summarize(sessionID).pipe(Effect.catchAllCause(warnBackgroundFailure("session diff failed")))
    }
    const last = state.lastAssistant
    return {
      ...outcome,
      usage: state.usage,
      ...(last ? { message: { info: last.info, parts: [...last.parts] } } : {})
    } satisfies RunOutcome
  })
