/**
 * The script language shared by `ScriptedModel` (an in-process `LanguageModelV3`) and
 * `MockOpenAIServer` (a real HTTP server): a conversation is a list of turns, one per model
 * call, and a turn is a list of steps.
 */
import { Duration } from "effect"

/** Token counts of one call. `input` includes cached tokens, `output` includes reasoning tokens. */
export interface ScriptUsage {
  readonly input: number
  readonly output: number
  readonly reasoning?: number
  readonly cacheRead?: number
  readonly cacheWrite?: number
}

export type ScriptFinishReason = "stop" | "tool-calls" | "length" | "content-filter" | "other"

/**
 * An API failure as a provider reports it. `ScriptedModel` turns it into an `APICallError`
 * (what the ai SDK providers throw), `MockOpenAIServer` into an HTTP response with this status,
 * these headers and OpenAI's error JSON.
 */
export interface ScriptApiError {
  readonly statusCode: number
  readonly message: string
  /** Response headers, e.g. `{ "retry-after": "2" }`. */
  readonly headers?: Readonly<Record<string, string>>
  /** Default as the ai SDK decides: 408, 409, 429 and 5xx are retryable. */
  readonly isRetryable?: boolean
  /** OpenAI error `type`, e.g. `invalid_request_error`. */
  readonly type?: string
  /** OpenAI error `code`, e.g. `context_length_exceeded`. */
  readonly code?: string
  /** OpenAI error `param`, e.g. `messages`. */
  readonly param?: string
}

/**
 * Where an error step strikes:
 * - `call`: the model call itself fails (an HTTP error status before any byte of the stream);
 * - `stream`: the stream breaks after the preceding steps (a dropped connection);
 * - `part`: the provider reports an error inside the stream (an `error` part) and the turn goes on.
 *
 * Default: `call` when only delays precede the error in its turn, otherwise `stream`.
 */
export type ScriptErrorPlacement = "call" | "stream" | "part"

export type ScriptStep =
  | {
    readonly text: string
  }
  | {
    readonly reasoning: string
  }
  | {
    readonly toolCall: {
      readonly name: string
      /** An object is sent as JSON; a string is sent as is (it may be invalid JSON). */
      readonly input: object | string
      readonly id?: string
    }
  }
  | {
    /**
     * A real-time pause (milliseconds or any `Duration` input), implemented with `setTimeout`:
     * it does not follow Effect's `TestClock`, and an aborted call stops waiting at once.
     */
    readonly delay: Duration.DurationInput
  }
  | {
    readonly error: ScriptApiError | Error
    readonly at?: ScriptErrorPlacement
  }
  | {
    readonly finish: ScriptFinishReason
    readonly usage?: ScriptUsage
  }

/** A whole turn: a plain string is one text step, a single step needs no array. */
export type ScriptTurnSpec = string | ScriptStep | ReadonlyArray<ScriptStep>

/** A turn, or a function of the request (to look at the prompt) that returns one. */
export type ScriptTurn<Request> = ScriptTurnSpec | ((request: Request) => ScriptTurnSpec)

export const DEFAULT_USAGE: ScriptUsage = { input: 10, output: 5 }

// --- step builders ---------------------------------------------------------------------------

export const text = (value: string): ScriptStep => ({ text: value })

export const reasoning = (value: string): ScriptStep => ({ reasoning: value })

export const toolCall = (name: string, input: object | string, id?: string): ScriptStep => ({
  toolCall: id === undefined ? { name, input } : { name, input, id }
})

export const delay = (duration: Duration.DurationInput): ScriptStep => ({ delay: duration })

export const finish = (reason: ScriptFinishReason, usage?: ScriptUsage): ScriptStep =>
  usage === undefined ? { finish: reason } : { finish: reason, usage }

export const fail = (error: ScriptApiError | Error, at?: ScriptErrorPlacement): ScriptStep =>
  at === undefined ? { error } : { error, at }

/** HTTP 429 with `retry-after` (seconds, fractions allowed) when given. */
export const rateLimited = (
  options: { readonly retryAfterSeconds?: number; readonly retryAfterMs?: number; readonly at?: ScriptErrorPlacement } =
    {}
): ScriptStep => {
  const headers: Record<string, string> = {}
  if (options.retryAfterSeconds !== undefined) headers["retry-after"] = String(options.retryAfterSeconds)
  if (options.retryAfterMs !== undefined) headers["retry-after-ms"] = String(options.retryAfterMs)
  return fail({
    statusCode: 429,
    message: "Rate limit reached for requests. Please try again later.",
    headers,
    isRetryable: true,
    type: "requests",
    code: "rate_limit_exceeded"
  }, options.at)
}

/** HTTP 529 "Overloaded" as Anthropic sends it (retryable). */
export const overloaded = (options: { readonly at?: ScriptErrorPlacement } = {}): ScriptStep =>
  fail({ statusCode: 529, message: "Overloaded", isRetryable: true, type: "overloaded_error" }, options.at)

/** HTTP 500 (retryable). */
export const serverError = (
  options: { readonly message?: string; readonly at?: ScriptErrorPlacement } = {}
): ScriptStep =>
  fail({
    statusCode: 500,
    message: options.message ?? "The server had an error while processing your request.",
    isRetryable: true,
    type: "server_error"
  }, options.at)

/** HTTP 400 with OpenAI's context-length message and `code: context_length_exceeded` (not retryable). */
export const contextOverflow = (
  options: { readonly limit?: number; readonly requested?: number; readonly at?: ScriptErrorPlacement } = {}
): ScriptStep => {
  const limit = options.limit ?? 128_000
  const requested = options.requested ?? limit + 4_321
  return fail({
    statusCode: 400,
    message: `This model's maximum context length is ${limit} tokens. However, your messages resulted in ` +
      `${requested} tokens. Please reduce the length of the messages.`,
    isRetryable: false,
    type: "invalid_request_error",
    code: "context_length_exceeded",
    param: "messages"
  }, options.at)
}

// --- interpretation --------------------------------------------------------------------------

export const isApiError = (error: ScriptApiError | Error): error is ScriptApiError => !(error instanceof Error)

/** The ai SDK's default retry rule for HTTP statuses. */
export const defaultRetryable = (statusCode: number): boolean =>
  statusCode === 408 || statusCode === 409 || statusCode === 429 || statusCode >= 500

/** OpenAI's error body for an API error. */
export const errorBody = (error: ScriptApiError) => ({
  error: {
    message: error.message,
    type: error.type ?? null,
    param: error.param ?? null,
    code: error.code ?? null
  }
})

export const resolveTurn = <Request>(turn: ScriptTurn<Request>, request: Request): ReadonlyArray<ScriptStep> => {
  const spec = typeof turn === "function" ? turn(request) : turn
  if (typeof spec === "string") return [{ text: spec }]
  if (isStepList(spec)) return spec
  return [spec]
}

const isStepList = (spec: ScriptStep | ReadonlyArray<ScriptStep>): spec is ReadonlyArray<ScriptStep> =>
  Array.isArray(spec)

export const toMillis = (duration: Duration.DurationInput): number => Duration.toMillis(Duration.decode(duration))

/**
 * Splits a turn into the part that happens before the response starts (leading delays and a
 * `call` error) and the streamed rest.
 */
export const planTurn = (steps: ReadonlyArray<ScriptStep>): {
  readonly callError?: { readonly delays: ReadonlyArray<number>; readonly error: ScriptApiError | Error }
  readonly steps: ReadonlyArray<ScriptStep>
} => {
  let index = 0
  const delays: Array<number> = []
  for (; index < steps.length; index++) {
    const step = steps[index]!
    if ("delay" in step) delays.push(toMillis(step.delay))
    else break
  }
  const first = steps[index]
  if (first !== undefined && "error" in first && (first.at ?? "call") === "call") {
    return { callError: { delays, error: first.error }, steps: [] }
  }
  return { steps }
}

/** The error placement of a step in the streamed part of a turn. */
export const placementInStream = (step: { readonly at?: ScriptErrorPlacement }): "stream" | "part" =>
  step.at === "part" ? "part" : "stream"

export interface TurnOutcome {
  readonly finish: ScriptFinishReason
  readonly usage: ScriptUsage
}

/** The finish reason and usage of a turn: explicit, else `tool-calls` when it called tools. */
export const outcomeOf = (steps: ReadonlyArray<ScriptStep>): TurnOutcome => {
  let explicit: { finish: ScriptFinishReason; usage?: ScriptUsage } | undefined
  let calledTools = false
  for (const step of steps) {
    if ("finish" in step) explicit = step
    if ("toolCall" in step) calledTools = true
  }
  return {
    finish: explicit?.finish ?? (calledTools ? "tool-calls" : "stop"),
    usage: explicit?.usage ?? DEFAULT_USAGE
  }
}

/** Text as a model streams it: one delta per word (with its trailing whitespace). */
export const textDeltas = (value: string): ReadonlyArray<string> => {
  const pieces = value.match(/\s*\S+\s*|\s+/g)
  return pieces === null || pieces.length === 0 ? [value] : pieces
}

/** Tool arguments as a model streams them: in up to three pieces. */
export const argumentDeltas = (json: string): ReadonlyArray<string> => {
  if (json.length < 3) return [json]
  const size = Math.ceil(json.length / 3)
  const pieces: Array<string> = []
  for (let start = 0; start < json.length; start += size) pieces.push(json.slice(start, start + size))
  return pieces
}

export const toolInput = (input: object | string): string => typeof input === "string" ? input : JSON.stringify(input)

/** Waits `ms` of real time; rejects with the abort reason as soon as `signal` aborts. */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal))
    const onAbort = () => {
      clearTimeout(timer)
      reject(abortReason(signal!))
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort)
      resolve()
    }, ms)
    signal?.addEventListener("abort", onAbort, { once: true })
  })

export const abortReason = (signal: AbortSignal): unknown =>
  signal.reason ?? new DOMException("This operation was aborted", "AbortError")
