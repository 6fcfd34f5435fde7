import type { FinishReason, TokenUsage } from "@agent/domain"
import { APICallError, InvalidResponseDataError, type LanguageModelV3FunctionTool, type SharedV3ProviderOptions, type LanguageModelV3StreamPart } from "@ai-sdk/provider"
import type { ModelMessage } from "ai"
import { Chunk, Context, Effect, Layer, Option, Schema, Stream } from "effect"
import type { ModelInfo, ResolvedModel } from "./ProviderRegistry.js"
import { providerOptions } from "./ProviderOptions.js"
import { costOf, sdkUsage, toTokenUsage } from "./Usage.js"
import { toProviderPrompt } from "./ProviderPrompt.js"
import { traced } from "../runtime/Tracing.js"

/** A tool as the model sees it. */
export interface ToolSpec {
  readonly id: string
  readonly description: string
  readonly parameters: Record<string, unknown>
}

export interface LLMRequest {
  readonly model: ResolvedModel
  readonly system: ReadonlyArray<string>
  readonly messages: ReadonlyArray<ModelMessage>
  readonly tools: ReadonlyArray<ToolSpec>
  readonly toolChoice?: "auto" | "required" | "none"
  readonly temperature?: number
  readonly topP?: number
  readonly maxOutputTokens?: number
  /** Provider options of this call (the agent's, a variant's), merged over the model's own `options`. */
  readonly options?: Readonly<Record<string, unknown>>
  readonly abortSignal?: AbortSignal
  /** The session and agent the call is for: attributes of its span only. */
  readonly sessionID?: string
  readonly agent?: string
}

/** The stream of one model step, reduced to what the session processor needs. */
export type LLMEvent =
  | { readonly type: "text-start"; readonly id: string }
  | { readonly type: "text-delta"; readonly id: string; readonly text: string }
  | { readonly type: "text-end"; readonly id: string }
  | { readonly type: "reasoning-start"; readonly id: string }
  | { readonly type: "reasoning-delta"; readonly id: string; readonly text: string }
  | { readonly type: "reasoning-end"; readonly id: string }
  | { readonly type: "tool-input-start"; readonly id: string; readonly toolName: string }
  | { readonly type: "tool-input-delta"; readonly id: string; readonly delta: string }
  | {
    readonly type: "tool-call"
    readonly toolCallId: string
    readonly toolName: string
    readonly input: unknown
    /** Set when the call names no known tool or its arguments are not valid JSON. */
    readonly invalid?: string
  }
  | {
    readonly type: "finish-step"
    readonly finishReason: FinishReason
    readonly usage: TokenUsage
    readonly cost: number
    /** The model that answered, when the provider named it (a span attribute). */
    readonly responseModel?: string
  }

/** A failed model call, classified for the retry and compaction logic. */
export class ProviderError extends Schema.TaggedError<ProviderError>()("ProviderError", {
  providerID: Schema.String,
  modelID: Schema.String,
  detail: Schema.String,
  statusCode: Schema.optional(Schema.Number),
  retryable: Schema.Boolean,
  /** Delay the provider asked for, from `retry-after-ms` / `retry-after`. */
  retryAfterMs: Schema.optional(Schema.Number),
  /** The prompt no longer fits the model's context window: compact, never retry. */
  contextOverflow: Schema.Boolean
}) {
  override get message() {
    const status = this.statusCode ? ` (HTTP ${this.statusCode})` : ""
    return `${this.providerID}/${this.modelID}${status}: ${this.detail}`
  }
}

/** The name of the tool that receives unknown or malformed calls (never offered to the model). */
export const INVALID_TOOL = "invalid"

export interface LLMServiceShape {
  /** One model call as a stream of events. */
  readonly stream: (request: LLMRequest) => Stream.Stream<LLMEvent, ProviderError>
  /**
   * The same call folded: each event goes to `onEvent` in order, and the effect ends with the
   * response. The session loop uses this form once per step: running a Stream costs about 500
   * Effect operations of set-up and tear-down whatever its length, a fifth of a step's work.
   */
  readonly call: <E>(
    request: LLMRequest,
    onEvent: (event: LLMEvent) => Effect.Effect<void, E>
  ) => Effect.Effect<void, ProviderError | E>
}

export class LLMService extends Context.Tag("@agent/core/LLMService")<LLMService, LLMServiceShape>() {
  /** The provider's `doStream`, one step per call, no SDK retries (the loop retries). */
  static readonly layer: Layer.Layer<LLMService> = Layer.sync(LLMService, () => {
    const open = openStep(recentSystems())
    return {
      stream: (request) =>
        Stream.unwrapScoped(Effect.uninterruptibleMask((restore) =>
          restore(open(request)).pipe(
            Effect.tap((step) => Effect.addFinalizer(() => Effect.sync(step.release))),
            Effect.map(({ next }) =>
              Stream.repeatEffectChunkOption(next.pipe(
                Effect.mapError(Option.some),
                Effect.flatMap((batch) => batch ? Effect.succeed(Chunk.unsafeFromArray(batch)) : Effect.fail(Option.none()))
              )))
          ))).pipe(Stream.withSpan("LLMService.stream", spanOptions(request))),
      // No scope: closing one runs each finalizer with the fiber's services diffed and restored
      // (~0.1 ms per step with the runtime's 26-43 services); `ensuring` does not.
      call: (request, onEvent) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(restore(open(request)), ({ next, release }) =>
            restore(Effect.gen(function*() {
              for (;;) {
                const batch = yield* next
                if (!batch) return
                for (const event of batch) yield* onEvent(event)
              }
            })).pipe(Effect.ensuring(Effect.sync(release))))).pipe(
          // Not `Effect.fn`: `call` is generic in the callback's error, and once per step a stack
          // trace is not worth its capture; a span only where spans are recorded (Tracing.traced).
          traced("LLMService.call", spanOptions(request))
        )
    }
  })

  /** A service from a stream alone (a custom or wrapped model backend); `call` folds the stream. */
  static readonly fromStream = (stream: LLMServiceShape["stream"]): LLMServiceShape => ({
    stream,
    call: (request, onEvent) => Stream.runForEach(stream(request), onEvent)
  })
}

/** The model call's span: which session, agent and model it is for. */
const spanOptions = (request: LLMRequest) => ({
  attributes: {
    "model.provider": request.model.info.providerID,
    "model.id": request.model.info.modelID,
    ...(request.sessionID !== undefined ? { "session.id": request.sessionID } : {}),
    ...(request.agent !== undefined ? { agent: request.agent } : {})
  },
  kind: "client" as const,
  captureStackTrace: false
})

// --- errors ----------------------------------------------------------------------------------

const OVERFLOW_PATTERNS = [
  /maximum context length/i,
  /context[_ ]length[_ ]exceeded/i,
  /prompt is too long/i,
  /input is too long/i,
  /exceeds? the context window/i,
  /context window (?:is )?exceeded/i,
  /too many tokens/i,
  /request too large/i
]
const RATE_LIMIT_PATTERNS = [/rate increased too quickly/i, /rate limit/i, /too many requests/i]

const retryAfterMs = (headers: Record<string, string> | undefined, now = Date.now()): number | undefined => {
  if (!headers) return undefined
  const lower = Object.fromEntries(Object.entries(headers).map(([key, value]) => [key.toLowerCase(), value]))
  const ms = Number(lower["retry-after-ms"])
  if (lower["retry-after-ms"] !== undefined && Number.isFinite(ms)) return Math.max(0, ms)
  const after = lower["retry-after"]
  if (after === undefined) return undefined
  const seconds = Number(after)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(after)
  return Number.isFinite(date) ? Math.max(0, date - now) : undefined
}

/** Whether a JSON error body says "rate limited" or "temporarily unavailable". */
const bodySaysRetry = (body: string | undefined): boolean => {
  if (!body) return false
  try {
    const parsed = JSON.parse(body) as { type?: string; code?: unknown; error?: { type?: string; code?: unknown } }
    if (parsed.type === "error" && parsed.error?.type === "too_many_requests") return true
    const codes = [parsed.code, parsed.error?.code].filter((code): code is string => typeof code === "string")
    return codes.some((code) => /exhausted|unavailable|rate_limit/i.test(code))
  } catch {
    return false
  }
}

export const classifyError = (info: ModelInfo, error: unknown): ProviderError => {
  const base = { providerID: info.providerID, modelID: info.modelID }
  if (error instanceof ProviderError) return error
  const text = error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error)
  if (APICallError.isInstance(error)) {
    const body = error.responseBody
    const overflow = OVERFLOW_PATTERNS.some((pattern) => pattern.test(text) || (body !== undefined && pattern.test(body)))
    const retryable = !overflow &&
      (error.isRetryable || (error.statusCode ?? 0) >= 500 || error.statusCode === 429 ||
        RATE_LIMIT_PATTERNS.some((pattern) => pattern.test(text)) || bodySaysRetry(body))
    const after = retryAfterMs(error.responseHeaders)
    return new ProviderError({
      ...base,
      detail: text,
      retryable,
      contextOverflow: overflow,
      ...(error.statusCode !== undefined ? { statusCode: error.statusCode } : {}),
      ...(after !== undefined ? { retryAfterMs: after } : {})
    })
  }
  const overflow = OVERFLOW_PATTERNS.some((pattern) => pattern.test(text))
  return new ProviderError({
    ...base,
    detail: text,
    retryable: !overflow && (RATE_LIMIT_PATTERNS.some((pattern) => pattern.test(text)) || bodySaysRetry(text)),
    contextOverflow: overflow
  })
}

/** The innermost causes' messages, outermost first, without repeats: "terminated: other side closed". */
const causeChain = (error: unknown): string => {
  const messages: Array<string> = []
  const seen = new Set<unknown>()
  for (let current = error; current instanceof Error && !seen.has(current); current = current.cause) {
    seen.add(current)
    if (current.message && !messages.includes(current.message)) messages.push(current.message)
  }
  return messages.join(": ")
}

/**
 * A response that broke off after it had started: the connection dropped mid-answer (the SDK wraps
 * that as "HTTP 200: Failed to process successful response") or the body ended without a finish
 * reason. Both are transient, so retried, and told as what they are.
 */
export const streamCutError = (info: ModelInfo, error: unknown, afterEvents: number): ProviderError | undefined => {
  const dropped = APICallError.isInstance(error) && error.statusCode !== undefined && error.statusCode < 300
  const unfinished = InvalidResponseDataError.isInstance(error) && /without a finish reason/i.test(error.message)
  if (!dropped && !unfinished) return undefined
  const how = dropped ? causeChain(error.cause) || "connection closed" : "the body ended without a finish reason"
  return new ProviderError({
    providerID: info.providerID,
    modelID: info.modelID,
    detail: `the response stream was cut off mid-answer, after ${afterEvents} event${afterEvents === 1 ? "" : "s"} (${how})`,
    retryable: true,
    contextOverflow: false
  })
}

// --- streaming -------------------------------------------------------------------------------

/** The SDK's wording for calls the model got wrong, which models have seen in training. */
const unknownToolMessage = (name: string, available: ReadonlyArray<string>) =>
  `Model tried to call unavailable tool '${name}'. Available tools: ${available.join(", ")}.`

/** Decodes the arguments of a finished tool call; a name that differs only in case is repaired. */
const parseToolCall = (
  toolNames: ReadonlySet<string>,
  call: { readonly toolCallId: string; readonly toolName: string; readonly input: string }
): Extract<LLMEvent, { type: "tool-call" }> => {
  const lower = call.toolName.toLowerCase()
  const toolName = toolNames.has(call.toolName) ? call.toolName : toolNames.has(lower) ? lower : undefined
  let input: unknown = call.input
  let parseError: string | undefined
  if (call.input.trim() === "") input = {}
  else {
    try {
      input = JSON.parse(call.input)
    } catch (error) {
      parseError = error instanceof Error ? error.message : String(error)
    }
  }
  if (toolName === undefined) {
    return { type: "tool-call", toolCallId: call.toolCallId, toolName: call.toolName, input, invalid: unknownToolMessage(call.toolName, [...toolNames]) }
  }
  if (parseError !== undefined) {
    return {
      type: "tool-call",
      toolCallId: call.toolCallId,
      toolName,
      input,
      invalid: `Invalid input for tool ${toolName}: JSON parsing failed: Text: ${call.input}.\nError message: ${parseError}`
    }
  }
  return { type: "tool-call", toolCallId: call.toolCallId, toolName, input }
}

/**
 * The system prompt as one string, the same string while its parts are the same: every step of
 * every session of an agent sends the same tens of KB, and the provider holds that string for the
 * whole model call, long enough to be moved to the old generation; one copy kept here is not.
 * Each service (so each runtime) keeps its own few.
 */
const recentSystems = () => {
  const recent: Array<{ readonly parts: ReadonlyArray<string>; readonly joined: string }> = []
  return (parts: ReadonlyArray<string>): string => {
    for (const entry of recent) {
      if (entry.parts.length === parts.length && entry.parts.every((part, index) => part === parts[index])) return entry.joined
    }
    const joined = parts.join("\n\n")
    recent.unshift({ parts: [...parts], joined })
    if (recent.length > RECENT_SYSTEMS) recent.pop()
    return joined
  }
}
/** Agents (and models) a server runs at once, each with its own system prompt. */
const RECENT_SYSTEMS = 16

/** Parts read ahead of the loop before the pump waits for it (an answer's parts are small). */
const PUMP_HIGH_WATER = 1024

/**
 * One step straight on the provider's `doStream`. `streamText` validated and converted the
 * whole history with zod on every call (O(history) per step, most of a long session's CPU);
 * the prompt is built by `toProviderPrompt`, which reuses converted messages across steps.
 * No SDK retries: the loop retries.
 */
interface OpenStep {
  /** The next batch of events, or undefined once the response has ended. */
  readonly next: Effect.Effect<ReadonlyArray<LLMEvent> | undefined, ProviderError>
  /** Lets go of the response (and aborts it unless it finished); the caller calls it once, at the end. */
  readonly release: () => void
}

const openStep = (joinedSystem: (parts: ReadonlyArray<string>) => string) => (request: LLMRequest): Effect.Effect<OpenStep, ProviderError> => {
  const info = request.model.info
  const model = request.model.language
  const toolNames = new Set(request.tools.map((spec) => spec.id))
  const options = providerOptions(request.model, request.options)
  const tools: Array<LanguageModelV3FunctionTool> = request.tools.map((spec) => ({
    type: "function",
    name: spec.id,
    description: spec.description,
    inputSchema: spec.parameters as LanguageModelV3FunctionTool["inputSchema"]
  }))

  return Effect.suspend(() => {
    const controller = new AbortController()
    const onOuterAbort = () => controller.abort(request.abortSignal?.reason)
    if (request.abortSignal?.aborted) controller.abort(request.abortSignal.reason)
    request.abortSignal?.addEventListener("abort", onOuterAbort, { once: true })
    let finished = false
    let ended = false
    let reader: ReadableStreamDefaultReader<LanguageModelV3StreamPart> | undefined
    const release = () => {
      // Stopping early (the consumer is done or interrupted) releases the response.
      if (reader && !ended) reader.cancel().catch(() => undefined)
      request.abortSignal?.removeEventListener("abort", onOuterAbort)
      // A finished response needs no abort (each abort walks the fetch's listeners).
      if (!finished) controller.abort()
    }
    return Effect.tryPromise({
      try: async () => {
        const prompt = await toProviderPrompt(model, joinedSystem(request.system), request.messages, controller.signal)
        return model.doStream({
          prompt,
          abortSignal: controller.signal,
          ...(tools.length > 0 ? { tools, toolChoice: { type: request.toolChoice ?? "auto" } } : {}),
          ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
          ...(request.topP !== undefined ? { topP: request.topP } : {}),
          ...(request.maxOutputTokens !== undefined ? { maxOutputTokens: request.maxOutputTokens } : {}),
          ...(options ? { providerOptions: options as SharedV3ProviderOptions } : {})
        })
      },
      catch: (error) => classifyError(info, error)
    }).pipe(
      Effect.onInterrupt(() => Effect.sync(() => controller.abort())),
      Effect.catchAll((error) => controller.signal.aborted ? Effect.interrupt : Effect.fail(error)),
      Effect.map((result) => read(result.stream.getReader())),
      Effect.onError(() => Effect.sync(release))
    )

    // The response is read by a small pump into a buffer, and each pull takes everything
    // buffered so far: one wait per batch of parts, and no stream stage per part.
    function read(response: ReadableStreamDefaultReader<LanguageModelV3StreamPart>): OpenStep {
      reader = response
      const buffer: Array<LLMEvent> = []
      let terminal: Effect.Effect<undefined, ProviderError> | undefined
      let reading = false
      let waiting: ((effect: Effect.Effect<ReadonlyArray<LLMEvent> | undefined, ProviderError>) => void) | undefined
      // Events read from this response so far (named in the error when it is cut off).
      let received = 0
      let responseModel: string | undefined
      // A stream cut off by our own abort ends as an interruption, not as a provider error.
      const failWith = (error: unknown) =>
        controller.signal.aborted && !finished
          ? Effect.interrupt
          : Effect.fail(streamCutError(info, error, received) ?? classifyError(info, error))
      const take = () => buffer.splice(0, buffer.length)
      const deliver = () => {
        const resume = waiting
        if (!resume || (buffer.length === 0 && !terminal)) return
        waiting = undefined
        resume(buffer.length > 0 ? Effect.succeed(take()) : terminal!)
      }
      const pump = (): void => {
        if (reading || terminal || buffer.length >= PUMP_HIGH_WATER) return
        reading = true
        response.read().then(
          ({ done, value }) => {
            reading = false
            if (done) {
              ended = true
              terminal = Effect.succeed(undefined)
            } else if (value.type === "error") {
              terminal = failWith(value.error)
            } else {
              const event = toEvent(value)
              if (event) {
                received++
                buffer.push(event)
              }
              pump()
            }
            deliver()
          },
          (error: unknown) => {
            reading = false
            ended = true
            terminal = failWith(error)
            deliver()
          }
        )
      }
      const toEvent = (part: LanguageModelV3StreamPart): LLMEvent | undefined => {
        switch (part.type) {
          case "text-start":
          case "text-end":
          case "reasoning-start":
          case "reasoning-end":
            return { type: part.type, id: part.id }
          case "text-delta":
          case "reasoning-delta":
            return { type: part.type, id: part.id, text: part.delta }
          case "tool-input-start":
            return part.providerExecuted ? undefined : { type: "tool-input-start", id: part.id, toolName: part.toolName }
          case "tool-input-delta":
            return { type: "tool-input-delta", id: part.id, delta: part.delta }
          case "tool-call":
            return part.providerExecuted ? undefined : parseToolCall(toolNames, part)
          case "finish": {
            finished = true
            const usage = toTokenUsage(sdkUsage(part.usage))
            const model = responseModel ? { responseModel } : {}
            return { type: "finish-step", finishReason: part.finishReason.unified, usage, cost: costOf(info, usage), ...model }
          }
          case "response-metadata":
            responseModel = part.modelId ?? responseModel
            return undefined
          default:
            return undefined
        }
      }
      const next = Effect.suspend((): Effect.Effect<ReadonlyArray<LLMEvent> | undefined, ProviderError> => {
        if (buffer.length > 0) {
          const batch = take()
          pump()
          return Effect.succeed(batch)
        }
        if (terminal) return terminal
        return Effect.async((resume) => {
          waiting = resume
          pump()
          return Effect.sync(() => void (waiting = undefined))
        })
      })
      return { next, release }
    }
  })
}
