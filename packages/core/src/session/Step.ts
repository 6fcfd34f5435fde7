// One step of a run: the request (tools offered, system prompt, history), one model call folded by
// the step processor, the tool calls it made, the step's files; retried when the provider asks.
import type { Agent, AssistantMessage, Part, PartID, PermissionRuleset, UserMessage } from "@agent/domain"
import type { ModelMessage } from "ai"
import { Cause, Deferred, Duration, Effect, Exit, FiberSet, Option } from "effect"
import * as SystemPrompt from "../context/SystemPrompt.js"
import * as Identifier from "../runtime/Identifier.js"
import { warnBackgroundFailure } from "../runtime/BackgroundFailure.js"
import * as ProviderOptions from "../llm/ProviderOptions.js"
import { type LLMEvent, type LLMRequest, ProviderError, type ToolSpec } from "../llm/LLMService.js"
import type { LiveMessage } from "../llm/MessageConversion.js"
import type { ResolvedModel } from "../llm/ProviderRegistry.js"
import * as Permission from "../permission/Permission.js"
import { stepTouch } from "../snapshot/StepTouch.js"
import * as Tool from "../tool/Tool.js"
import * as ToolSlots from "../tool/ToolSlots.js"
import { partsKeptOnRetry, retryDelay, stepLimit } from "./Decisions.js"
import type { LoopDeps } from "./LoopDeps.js"
import { type Ending, errorOf, totalTokens } from "./LoopTypes.js"
import { offeredTools } from "./OfferedTools.js"
import { requestMessages } from "./Request.js"
import { finishMessage, type RunState, startAssistantMessage, touch, writePart } from "./RunState.js"
import { type FinishStep, makeStepProcessor } from "./StepProcessor.js"
import { hookInterceptor } from "./HookInterceptor.js"
import { checkRepeat, runToolCall, type StepCalls } from "./ToolCall.js"
import { keepParent, tracedWith } from "../runtime/Tracing.js"
import * as GenAiSpans from "./GenAiSpans.js"

export interface StepInput {
  readonly agent: Agent
  readonly model: ResolvedModel
  readonly user: LiveMessage & { info: UserMessage }
  readonly step: number
  /** The task tool, offered when the agent may start a subagent. */
  readonly task: Tool.Tool
}

interface Attempt {
  readonly agent: Agent
  readonly model: ResolvedModel
  readonly message: LiveMessage
  readonly tools: ReadonlyArray<Tool.Tool>
  readonly ruleset: PermissionRuleset
  readonly system: ReadonlyArray<string>
  readonly messages: Array<ModelMessage>
}

/**
 * The model's answer, each event folded by `fold` as it arrives. The callback form of the model
 * call, not `Stream.runForEach(llm.stream(...))`: a Stream's set-up and tear-down cost a fifth of a
 * step's own work (see LLMService.call).
 * Measured (bench:loop, 1000-step session, 3 alternating runs): whole step 2.82 ms (callback) vs 4.23 ms (Stream).
 */
const foldModelAnswer = (
  deps: LoopDeps,
  request: LLMRequest,
  fold: (event: LLMEvent) => Effect.Effect<void>,
  span: {
    readonly sessionID: string
    readonly agent: string
    /** The answer so far, read when the span ends. */
    readonly finish: () => FinishStep | undefined
    readonly answer: () => ReadonlyArray<Part>
  }
) => {
  const logContent = deps.settings.logContent
  const { providerID, modelID } = request.model.info
  return tracedWith(
    GenAiSpans.chatSpanName(modelID),
    () => ({
      kind: "client",
      attributes: GenAiSpans.chatAttributes({ sessionID: span.sessionID, agent: span.agent, providerID, modelID }, request, logContent)
    }),
    (annotate) => {
      const call = deps.llm.call(request, fold)
      return annotate
        ? Effect.ensuring(call, Effect.sync(() => annotate(GenAiSpans.chatResultAttributes(span.finish(), span.answer(), logContent))))
        : call
    }
  )
}

/** The files before the step; `record` takes what the step changed (once). */
const stepFiles = (deps: LoopDeps, state: RunState, message: LiveMessage, tools: ReadonlyArray<Tool.Tool>) =>
  Effect.gen(function*() {
    const toolsById = new Map<string, Tool.Tool>(tools.map((tool) => [tool.id, tool]))
    const before = yield* state.stepFiles.begin()
    const files = {
      before,
      recorded: false,
      record: Effect.suspend(() => {
        files.recorded = true
        return state.stepFiles.finish(before, stepTouch(message.parts, (id) => toolsById.get(id), deps.instance.directory))
      }).pipe(Effect.tap((after) => Effect.sync(() => void (after?.patch && (state.filesChanged = true))))),
      writePatch: (after: Effect.Effect.Success<ReturnType<typeof state.stepFiles.finish>>) =>
        after?.patch
          ? writePart(deps, state, message, { ...newPart(state, message), type: "patch", ...after.patch, files: [...after.patch.files] })
          : Effect.void
    }
    return files
  })

type StepFiles = Effect.Effect.Success<ReturnType<typeof stepFiles>>

const newPart = (state: RunState, message: LiveMessage) =>
  ({ id: Identifier.ascending("part") as PartID, sessionID: state.sessionID, messageID: message.info.id })

/**
 * A step that did not end normally (aborted, a tool died): its running tool calls are interrupted, the
 * rest of its work is told to stop, and what changed so far is recorded still, so it can be undone.
 */
const endEarly = (
  deps: LoopDeps,
  state: RunState,
  step: { readonly message: LiveMessage; readonly abort: AbortController; readonly files: StepFiles | undefined },
  cause: Cause.Cause<unknown>
) =>
  Effect.gen(function*() {
    yield* FiberSet.clear(state.toolFibers)
    step.abort.abort()
    const files = step.files
    if (!files || files.recorded) return
    // A failed attempt (the provider's error) is retried or recorded as an error: nothing of it is kept.
    if (Option.isSome(Cause.failureOption(cause))) return state.stepFiles.failed(files.before)
    yield* files.record.pipe(
      Effect.tap((after) => after ? writePart(deps, state, step.message, { ...newPart(state, step.message), type: "snapshot", snapshot: after.snapshot }) : Effect.void),
      Effect.flatMap(files.writePatch),
      Effect.catchAllCause(warnBackgroundFailure("recording the aborted step's files failed"))
    )
  })

/** The model's tool calls run in the run's FiberSet, `tool_concurrency` at a time, in order. */
const toolRunner = (calls: StepCalls) =>
  Effect.gen(function*() {
    const fibers = calls.state.toolFibers
    const slots = yield* ToolSlots.make(calls.deps.settings.toolConcurrency)
    // Calls start inside the model call's span; their spans belong to the run's.
    const underRun = yield* keepParent
    const start = (call: { readonly part: Extract<LiveMessage["parts"][number], { type: "tool" }>; readonly input: unknown }) =>
      Effect.gen(function*() {
        const input = call.part.state.input
        if (!(yield* checkRepeat(calls, call.part, input))) return false
        yield* writePart(calls.deps, calls.state, calls.message, call.part)
        // A queued call's time starts when it gets its slot.
        yield* FiberSet.run(fibers, underRun(slots.run(Effect.suspend(() =>
          runToolCall(calls, { ...call.part, state: { status: "running", input, time: { start: Date.now() } } }, call.input)
        ))))
        return true
      })
    /** Every call the model made finishes (or fails) before the step ends; one that died fails the step (and the run). */
    const awaitAll = Effect.gen(function*() {
      yield* FiberSet.awaitEmpty(fibers)
      const died = yield* Deferred.poll(fibers.deferred)
      if (Option.isNone(died)) return
      const exit = yield* Effect.exit(died.value)
      if (Exit.isFailure(exit)) return yield* Effect.failCause(exit.cause as Cause.Cause<never>)
    })
    return { start, awaitAll }
  })

/** Closes the step: its usage, its step-finish (or snapshot) part. */
const closeStep = (
  deps: LoopDeps,
  state: RunState,
  message: LiveMessage,
  finish: Extract<LLMEvent, { type: "finish-step" }> | undefined,
  after: Effect.Effect.Success<ReturnType<RunState["stepFiles"]["finish"]>>
) =>
  Effect.gen(function*() {
    if (finish) {
      const { cost, finishReason, usage } = finish
      state.usage.cost += cost
      state.usage.tokens += totalTokens(usage)
      yield* writePart(deps, state, message, {
        ...newPart(state, message),
        type: "step-finish",
        reason: finishReason,
        ...(after ? { snapshot: after.snapshot } : {}),
        cost,
        tokens: usage
      })
      yield* deps.store.addUsage(state.sessionID, { cost, tokens: usage })
    } else if (after) {
      yield* writePart(deps, state, message, { ...newPart(state, message), type: "snapshot", snapshot: after.snapshot })
    }
  })

/**
 * One attempt at the step. Its clean-up (interrupt its tool calls, signal the abort, record its files) is one
 * `onExit`, and its tool calls run in the run's FiberSet: not a Scope and a FiberSet per attempt.
 * Measured: a Scope per attempt with its finalizers and FiberSet costs ~50 µs CPU and ~0.2 ms wall per step (docs/performance.md, "Step clean-up").
 */
const attempt = (deps: LoopDeps, state: RunState, input: Attempt): Effect.Effect<Ending | undefined, ProviderError> =>
  Effect.suspend(() => {
    const step: { readonly message: LiveMessage; readonly abort: AbortController; files: StepFiles | undefined } = {
      message: input.message,
      // Tools still running when the step ends early are told to stop.
      abort: new AbortController(),
      files: undefined
    }
    return attemptBody(deps, state, input, step).pipe(
      Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : endEarly(deps, state, step, exit.cause))
    )
  })

const attemptBody = (
  deps: LoopDeps,
  state: RunState,
  input: Attempt,
  step: { readonly abort: AbortController; files: StepFiles | undefined }
): Effect.Effect<Ending | undefined, ProviderError> =>
  Effect.gen(function*() {
    const { agent, message, model } = input
    const info = message.info as AssistantMessage
    const files = yield* stepFiles(deps, state, message, input.tools)
    step.files = files
    const abort = step.abort
    // A retried attempt keeps the step-start of the first one.
    if (!message.parts.some((part) => part.type === "step-start")) {
      yield* writePart(deps, state, message, {
        id: Identifier.ascending("part") as PartID,
        sessionID: state.sessionID,
        messageID: info.id,
        type: "step-start",
        ...(files.before ? { snapshot: files.before.id } : {})
      })
    }
    const calls: StepCalls = {
      deps,
      state,
      message,
      agent,
      tools: input.tools,
      ruleset: input.ruleset,
      toolRules: Permission.merge(input.ruleset, deps.policy.rules),
      abort: abort.signal,
      interceptors: deps.hooks.active ? [hookInterceptor(() => calls)] : [],
      outcome: { blocked: false }
    }
    const tools = yield* toolRunner(calls)
    const processor = makeStepProcessor({ deps, run: state, message, onToolCall: tools.start })
    // Most tools describe themselves with a fixed text; only the others need an effect.
    const specs: Array<ToolSpec> = []
    for (const tool of input.tools) {
      specs.push({ id: tool.id, description: tool.describe ? yield* tool.describe(agent) : tool.description, parameters: Tool.jsonSchemaOf(tool) })
    }
    yield* foldModelAnswer(deps, {
      model,
      sessionID: state.sessionID,
      agent: agent.name,
      system: input.system,
      messages: input.messages,
      tools: specs,
      abortSignal: abort.signal,
      options: ProviderOptions.callOptions({ model, agent, variant: info.variant }),
      ...(agent.temperature !== undefined ? { temperature: agent.temperature } : {}),
      ...(agent.topP !== undefined ? { topP: agent.topP } : {})
    }, processor.fold, {
      sessionID: state.sessionID,
      agent: agent.name,
      finish: () => processor.state.finish,
      answer: () => message.parts
    })
    yield* tools.awaitAll
    const after = yield* files.record
    yield* closeStep(deps, state, message, processor.state.finish, after)
    yield* files.writePatch(after)
    // A stream that ended without a finish reason is over unless it asked for tools.
    const finish = (message.info as AssistantMessage).finish ?? (processor.state.toolParts.size > 0 ? "tool-calls" : "other")
    yield* finishMessage(deps, message, { finish })
    return calls.outcome.blocked ? { reason: "rejected" as const } : undefined
  })

/** Asks again while the provider's error is retryable (at most `retry.attempts` times), then records it. */
const withRetries = (deps: LoopDeps, state: RunState, message: LiveMessage, once: Effect.Effect<Ending | undefined, ProviderError>) =>
  Effect.gen(function*() {
    const { retryAttempts } = deps.settings
    const sessionID = state.sessionID
    for (let attempt = 1;; attempt++) {
      const result = yield* Effect.either(once)
      if (result._tag === "Right") return result.right
      const error = result.left
      if (!error.retryable || attempt > retryAttempts) {
        const recorded = errorOf("APIError", error.message, {
          statusCode: error.statusCode,
          retryable: error.retryable,
          attempts: attempt,
          contextOverflow: error.contextOverflow
        })
        yield* finishMessage(deps, message, { error: recorded })
        yield* deps.bus.publish({ type: "session.error", properties: { sessionID, error: recorded } })
        return { reason: "error" as const, error: recorded }
      }
      // Throw away what the failed attempt produced and ask again. The step-start stays: a retry
      // is the same step, and a client that saw it start must not see a second start.
      const kept = partsKeptOnRetry(message.parts)
      for (const part of message.parts) {
        if (!kept.includes(part)) yield* deps.store.removePart(sessionID, message.info.id, part.id)
      }
      message.parts.splice(0, message.parts.length, ...kept)
      const delay = retryDelay(error, attempt, deps.settings.retryDelay)
      yield* deps.bus.publish({
        type: "session.retry",
        properties: {
          sessionID,
          attempt,
          attempts: retryAttempts,
          delay,
          ...(error.statusCode !== undefined ? { statusCode: error.statusCode } : {}),
          // The provider's words: the status is its own field, the model is known.
          message: error.detail
        }
      })
      yield* deps.setStatus(sessionID, { type: "retry", attempt, message: error.message, next: Date.now() + delay })
      yield* Effect.sleep(Duration.millis(delay))
      yield* deps.setStatus(sessionID, { type: "busy" })
    }
  })

/** Runs one step: builds the request, starts the assistant message, calls the model (retrying). */
export const processStep = (deps: LoopDeps, state: RunState, input: StepInput) =>
  Effect.gen(function*() {
    const { agent, model, user } = input
    // The session's rules come last, but cannot loosen a deny of the user's config.
    const ruleset = Permission.forSession(agent.permission, state.session.permission, yield* deps.skillRules)
    // What the model is offered heeds the enterprise policy too (every ask adds it last).
    const tools = yield* offeredTools(deps, {
      agent,
      model,
      user: user.info,
      step: input.step,
      rules: Permission.merge(ruleset, deps.policy.rules),
      task: input.task
    })
    const limit = stepLimit(agent.steps, state.options.maxSteps)
    const system = SystemPrompt.build({
      agent,
      model: model.info,
      instance: deps.instance,
      instructions: [
        ...(yield* deps.instructions.system()),
        ...(yield* deps.mcp.instructions()).map((entry) => `Instructions from the MCP server ${entry.server}:\n${entry.text}`),
        ...Option.toArray(Option.fromNullable(yield* deps.skills.systemBlock(agent)))
      ],
      userSystem: user.info.system
    })
    const messages = requestMessages(state.requests, {
      history: state.history,
      agent: agent.name,
      step: input.step,
      isLastStep: limit !== undefined && input.step >= limit
    })
    const message = yield* startAssistantMessage(deps, state, user, agent, model)
    touch(state)
    return yield* withRetries(deps, state, message, attempt(deps, state, { agent, model, message, tools, ruleset, system, messages }))
  })
