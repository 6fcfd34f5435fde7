// One tool call as a pipeline of named stages: resolve the tool, decode its arguments, run it (its
// permission asks go through `askPermission`), truncate its output, store the result. Policy plugs in
// through `ToolCallInterceptor`s: before the call, after it, and around each permission ask.
import { type Agent, type PermissionRuleset, type PartID, RejectedError, type ToolPart } from "@agent/domain"
import { Cause, Effect, Exit, Option } from "effect"
import * as Identifier from "../runtime/Identifier.js"
import { INVALID_TOOL } from "../llm/LLMService.js"
import type { LiveMessage } from "../llm/MessageConversion.js"
import * as Tool from "../tool/Tool.js"
import { DOOM_LOOP_THRESHOLD, isDoomLoop, previousToolCalls } from "./Decisions.js"
import type { LoopDeps } from "./LoopDeps.js"
import { type RunState, touch, writePart } from "./RunState.js"
import { tracedWith } from "../runtime/Tracing.js"
import * as GenAiSpans from "./GenAiSpans.js"

export type AskRequest = Parameters<Tool.ToolContext["ask"]>[0]
export type AskError = Effect.Effect.Error<ReturnType<Tool.ToolContext["ask"]>>

/** The call an interceptor sees. */
export interface ToolCallInfo {
  readonly sessionID: string
  readonly callID: string
  readonly tool: string
  readonly agent: Agent
}

/** Where policy (hooks, the sandbox) intercepts a tool call; every stage is optional. */
export interface ToolCallInterceptor {
  /** Before the tool runs, with its decoded arguments: may change them, or refuse the call. */
  readonly before?: (call: ToolCallInfo, params: unknown) => Effect.Effect<unknown, Tool.ToolFailure>
  /** After it ran: may change the result, or turn it into a failure. */
  readonly after?: (call: ToolCallInfo, result: Tool.ToolResult) => Effect.Effect<Tool.ToolResult, Tool.ToolFailure>
  /** After it failed (not when `before` refused it): may change the failure. */
  readonly failed?: (call: ToolCallInfo, failure: Tool.ToolFailure) => Effect.Effect<Tool.ToolFailure>
  /** Around each permission ask of the call: may answer it itself, or pass it on (`next`). */
  readonly permission?: (
    call: ToolCallInfo,
    request: AskRequest,
    next: Effect.Effect<void, AskError>
  ) => Effect.Effect<void, AskError>
}

/** What the tool calls of one step share. */
export interface StepCalls {
  readonly deps: LoopDeps
  readonly state: RunState
  readonly message: LiveMessage
  readonly agent: Agent
  readonly tools: ReadonlyArray<Tool.Tool>
  /** The rules asks are evaluated against (the agent's and the session's; the service adds the policy's). */
  readonly ruleset: PermissionRuleset
  /** The same with the enterprise policy's last: what the tools' own checks decide by. */
  readonly toolRules: PermissionRuleset
  readonly abort: AbortSignal
  readonly interceptors: ReadonlyArray<ToolCallInterceptor>
  /** Set when a person rejected an ask: the run stops after the step. */
  readonly outcome: { blocked: boolean }
}

const infoOf = (step: StepCalls, part: ToolPart): ToolCallInfo => ({
  sessionID: step.state.sessionID,
  callID: part.callID,
  tool: part.tool,
  agent: step.agent
})

/** A rejection stops the run, unless `experimental.continue_loop_on_deny`. */
const noteFailure = (step: StepCalls, error: unknown) => {
  if (error instanceof RejectedError && !step.deps.settings.continueOnDeny) step.outcome.blocked = true
}

// --- stages ------------------------------------------------------------------------------

/** Permission: asks the service; the run does not count as stalled while a person is asked. */
export const askPermission = (
  step: StepCalls,
  request: AskRequest,
  call: { readonly callID: string; readonly tool: string },
  ruleset: PermissionRuleset = step.ruleset
): Effect.Effect<void, AskError> => {
  const { callID } = call
  const { state } = step
  const ask = Effect.suspend(() => {
    state.waitingOnUser++
    return step.deps.permissions.ask({
      sessionID: state.sessionID,
      permission: request.permission,
      patterns: request.patterns,
      always: request.always,
      ...(request.opaque ? { opaque: request.opaque } : {}),
      ...(request.sandboxed ? { sandboxed: true } : {}),
      ...(request.requiresPerson ? { requiresPerson: request.requiresPerson } : {}),
      // `--auto-approve`: the service answers "once" itself, unless only a person may answer.
      ...(state.options.autoApprove ? { autoApprove: true } : {}),
      ruleset,
      tool: { messageID: step.message.info.id, callID },
      ...(request.metadata ? { metadata: request.metadata } : {})
    })
  }).pipe(Effect.ensuring(Effect.sync(() => {
    state.waitingOnUser--
    touch(state)
  })))
  return step.interceptors.reduce<Effect.Effect<void, AskError>>(
    (next, interceptor) =>
      interceptor.permission
        ? interceptor.permission({ sessionID: state.sessionID, callID, tool: call.tool, agent: step.agent }, request, next)
        : next,
    ask
  )
}

/**
 * Repeat guard, before the call is started: the same call a third time in a row asks `doom_loop`
 * (against the agent's own rules: a session cannot silence it). False: refused, and recorded so.
 */
export const checkRepeat = (step: StepCalls, part: ToolPart, input: unknown) =>
  Effect.gen(function*() {
    if (!isDoomLoop(previousToolCalls(step.state.history, DOOM_LOOP_THRESHOLD - 1), part.tool, input)) return true
    const asked = yield* Effect.either(askPermission(
      step,
      { permission: "doom_loop", patterns: [part.tool], always: [part.tool], metadata: { tool: part.tool, input } },
      part,
      step.agent.permission
    ))
    if (asked._tag === "Right") return true
    noteFailure(step, asked.left)
    const now = Date.now()
    yield* writePart(step.deps, step.state, step.message, {
      ...part,
      state: { status: "error", input: part.state.input, error: asked.left.message, time: { start: now, end: now } }
    })
    return false
  })

/** The tool the call names (calls the model got wrong go to the invalid tool). */
export const resolveTool = (step: StepCalls, name: string) =>
  Effect.suspend(() => {
    const offered = step.tools.find((candidate) => candidate.id === name)
    return offered || name !== INVALID_TOOL ? Effect.succeed(offered) : step.deps.registry.get(INVALID_TOOL)
  })

/** Decodes the arguments, lets the interceptors see them, and runs the tool, as a span. */
export const execute = (step: StepCalls, tool: Tool.Tool, call: ToolCallInfo, input: unknown, context: Tool.ToolContext) => {
  const run = Tool.decodeInput(tool, input).pipe(
    Effect.flatMap((params) =>
      step.interceptors.reduce<Effect.Effect<unknown, Tool.ToolFailure>>(
        (decoded, interceptor) => interceptor.before ? Effect.flatMap(decoded, (value) => interceptor.before!(call, value)) : decoded,
        Effect.succeed(params)
      )
    ),
    Effect.flatMap((params) =>
      step.interceptors.length === 0 ? tool.execute(params, context) : Effect.catchAll(tool.execute(params, context), (failure) =>
        Effect.flatMap(
          step.interceptors.reduce<Effect.Effect<Tool.ToolFailure>>(
            (done, interceptor) => interceptor.failed ? Effect.flatMap(done, (value) => interceptor.failed!(call, value)) : done,
            Effect.succeed(failure)
          ),
          Effect.fail
        ))
    ),
    Effect.flatMap((result) =>
      step.interceptors.reduce<Effect.Effect<Tool.ToolResult, Tool.ToolFailure>>(
        (done, interceptor) => interceptor.after ? Effect.flatMap(done, (value) => interceptor.after!(call, value)) : done,
        Effect.succeed(result)
      )
    )
  )
  const logContent = step.deps.settings.logContent
  return tracedWith(
    GenAiSpans.toolSpanName(call.tool),
    () => ({
      kind: "internal",
      attributes: GenAiSpans.toolAttributes({ sessionID: call.sessionID, agent: call.agent.name, tool: call.tool, callID: call.callID, input }, logContent)
    }),
    (annotate) => annotate ? Effect.tap(run, (result) => annotate(GenAiSpans.toolResultAttributes(result.output, logContent))) : run
  )
}

/** Output past the limits is cut (kept in a file the model may read, or a subagent may search). */
export const truncateOutput = (step: StepCalls, result: Tool.ToolResult) =>
  result.truncated
    ? Effect.succeed({ content: result.output, truncated: true as boolean, outputPath: undefined as string | undefined })
    : Effect.map(
      step.deps.truncation.output(result.output, { canDelegate: step.tools.some((tool) => tool.id === "task") }),
      (cut) => ({ content: cut.content, truncated: cut.truncated, outputPath: "outputPath" in cut ? cut.outputPath : undefined })
    )

/** The completed part: output, title, metadata (live progress under the result's), attachments. */
export const completedPart = (
  part: ToolPart,
  started: number,
  live: Record<string, unknown>,
  result: Tool.ToolResult,
  cut: Effect.Effect.Success<ReturnType<typeof truncateOutput>>
): ToolPart => ({
  ...part,
  state: {
    status: "completed",
    input: part.state.input,
    output: cut.content,
    title: result.title,
    metadata: {
      ...live,
      ...result.metadata,
      ...(cut.truncated ? { truncated: true } : {}),
      ...(cut.outputPath ? { outputPath: cut.outputPath } : {})
    },
    time: { start: started, end: Date.now() },
    ...(result.attachments
      ? {
        attachments: result.attachments.map((attachment) => ({
          id: Identifier.ascending("part") as PartID,
          sessionID: part.sessionID,
          messageID: part.messageID,
          type: "file" as const,
          mime: attachment.mime,
          url: attachment.url,
          ...(attachment.filename ? { filename: attachment.filename } : {})
        }))
      }
      : {})
  }
})

// --- the pipeline ------------------------------------------------------------------------

/** Runs one call the model made and stores its result (or why it failed) as the part's state. */
export const runToolCall = (step: StepCalls, part: ToolPart, input: unknown): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { deps, state, message } = step
    const started = part.state.status === "running" ? part.state.time.start : Date.now()
    const progress: { metadata: Record<string, unknown>; title: string | undefined } = { metadata: {}, title: undefined }
    const fail = (error: string, metadata: Record<string, unknown> = {}) =>
      writePart(deps, state, message, {
        ...part,
        state: { status: "error", input: part.state.input, error, metadata, time: { start: started, end: Date.now() } }
      })
    const tool = yield* resolveTool(step, part.tool)
    if (!tool) {
      return yield* fail(`Unknown tool "${part.tool}". Available tools: ${step.tools.map((candidate) => candidate.id).join(", ")}`)
    }
    const context: Tool.ToolContext = {
      sessionID: state.sessionID,
      messageID: message.info.id,
      callID: part.callID,
      agent: step.agent,
      abort: step.abort,
      ask: (request) => askPermission(step, request, part),
      rules: step.toolRules,
      metadata: (update) =>
        Effect.suspend(() => {
          if (update.metadata) progress.metadata = { ...progress.metadata, ...update.metadata }
          if (update.title) progress.title = update.title
          return writePart(deps, state, message, {
            ...part,
            state: {
              status: "running",
              input: part.state.input,
              time: { start: started },
              metadata: progress.metadata,
              ...(progress.title ? { title: progress.title } : {})
            }
          })
        })
    }
    const exit = yield* Effect.exit(execute(step, tool, infoOf(step, part), input, context))
    if (Exit.isSuccess(exit)) {
      const cut = yield* truncateOutput(step, exit.value)
      return yield* writePart(deps, state, message, completedPart(part, started, progress.metadata, exit.value, cut))
    }
    const failure = Cause.failureOption(exit.cause)
    if (Option.isSome(failure)) {
      noteFailure(step, failure.value)
      return yield* fail(failure.value.message, progress.metadata)
    }
    if (Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
    yield* Effect.logError(`tool ${part.tool} crashed`, exit.cause)
    return yield* fail(`The ${part.tool} tool failed unexpectedly: ${Cause.pretty(exit.cause).split("\n")[0]}`, progress.metadata)
  })
