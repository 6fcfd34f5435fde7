import {
  APICallError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3Content,
  type LanguageModelV3FinishReason,
  type LanguageModelV3GenerateResult,
  type LanguageModelV3StreamPart,
  type LanguageModelV3StreamResult,
  type LanguageModelV3Usage
} from "@ai-sdk/provider"
import * as Script from "./Script.js"

export type ScriptedTurn = Script.ScriptTurn<LanguageModelV3CallOptions>

export interface ScriptedModelOptions {
  readonly providerID?: string
  readonly modelID?: string
}

/** One call the model received: the options the ai SDK passed, and which method it called. */
export type ScriptedCall = LanguageModelV3CallOptions & { readonly kind: "stream" | "generate" }

/**
 * A `LanguageModelV3` that plays a script: each `doStream` (or `doGenerate`) call consumes the
 * next turn and streams it as a provider would (text in per-word deltas, tool arguments in
 * pieces, then `finish` with usage). It sits at the provider boundary, so everything above it
 * (LLMService, retries, tool execution, the loop) runs for real.
 *
 * ```ts
 * const model = ScriptedModel.make([
 *   [{ toolCall: { name: "read", input: { path: "a.txt" } } }],
 *   "The file says hello."
 * ])
 * ```
 *
 * `delay` steps wait in real time (`setTimeout`), not on Effect's `TestClock`; use `it.live`.
 */
export class ScriptedModel implements LanguageModelV3 {
  readonly specificationVersion = "v3"
  readonly provider: string
  readonly modelId: string
  readonly supportedUrls: Record<string, Array<RegExp>> = {}

  readonly #turns: Array<ScriptedTurn>
  readonly #calls: Array<ScriptedCall> = []

  constructor(turns: ReadonlyArray<ScriptedTurn>, options: ScriptedModelOptions = {}) {
    this.#turns = [...turns]
    this.provider = options.providerID ?? "test"
    this.modelId = options.modelID ?? "scripted"
  }

  static make(turns: ReadonlyArray<ScriptedTurn>, options: ScriptedModelOptions = {}): ScriptedModel {
    return new ScriptedModel(turns, options)
  }

  // Step builders, re-exported here so a test needs only `ScriptedModel`.
  static readonly text = Script.text
  static readonly reasoning = Script.reasoning
  static readonly toolCall = Script.toolCall
  static readonly delay = Script.delay
  static readonly finish = Script.finish
  static readonly fail = Script.fail
  static readonly rateLimited = Script.rateLimited
  static readonly overloaded = Script.overloaded
  static readonly serverError = Script.serverError
  static readonly contextOverflow = Script.contextOverflow
  /** The `APICallError` a provider would throw for this failure. */
  static readonly apiCallError = (error: Script.ScriptApiError, requestBodyValues: unknown = {}): APICallError =>
    toApiCallError(error, requestBodyValues)

  /** The text of the last user message of a prompt (for turns that are functions of the call). */
  static readonly lastUserText = (options: LanguageModelV3CallOptions): string => {
    const message = options.prompt.findLast((entry) => entry.role === "user")
    if (message === undefined) return ""
    return message.content.map((part) => part.type === "text" ? part.text : "").join("")
  }

  /** Every call received so far, in order. */
  get calls(): ReadonlyArray<ScriptedCall> {
    return this.#calls
  }

  /** Turns not yet consumed. */
  get remaining(): number {
    return this.#turns.length
  }

  /** Appends turns to the script (e.g. from inside a test, after inspecting earlier calls). */
  push(...turns: ReadonlyArray<ScriptedTurn>): void {
    this.#turns.push(...turns)
  }

  async doStream(options: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const steps = this.#next("stream", options)
    const plan = Script.planTurn(steps)
    if (plan.callError) {
      for (const ms of plan.callError.delays) await Script.sleep(ms, options.abortSignal)
      throw toError(plan.callError.error, options)
    }
    const parts = this.#parts(plan.steps, options, this.#calls.length)
    const signal = options.abortSignal
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      async pull(controller) {
        if (signal?.aborted) throw Script.abortReason(signal)
        const next = await parts.next()
        if (next.done) controller.close()
        else controller.enqueue(next.value)
      },
      async cancel() {
        await parts.return(undefined)
      }
    })
    return { stream, request: { body: { scripted: true } }, response: { headers: {} } }
  }

  async doGenerate(options: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> {
    const steps = this.#next("generate", options)
    const call = this.#calls.length
    const plan = Script.planTurn(steps)
    if (plan.callError) {
      for (const ms of plan.callError.delays) await Script.sleep(ms, options.abortSignal)
      throw toError(plan.callError.error, options)
    }
    const content: Array<LanguageModelV3Content> = []
    let finish: { finishReason: LanguageModelV3FinishReason; usage: LanguageModelV3Usage } | undefined
    for await (const part of this.#parts(plan.steps, options, call)) {
      switch (part.type) {
        case "text-delta":
        case "reasoning-delta": {
          const type = part.type === "text-delta" ? "text" : "reasoning"
          const last = content.at(-1)
          if (last !== undefined && last.type === type) content[content.length - 1] = { type, text: last.text + part.delta }
          else content.push({ type, text: part.delta })
          break
        }
        case "tool-call":
          content.push(part)
          break
        case "error":
          throw part.error
        case "finish":
          finish = { finishReason: part.finishReason, usage: part.usage }
          break
      }
    }
    const outcome = Script.outcomeOf(plan.steps)
    return {
      content,
      finishReason: finish?.finishReason ?? finishReason(outcome.finish),
      usage: finish?.usage ?? toUsage(outcome.usage),
      warnings: [],
      response: { id: `scripted-${call}`, modelId: this.modelId, timestamp: new Date() }
    }
  }

  #next(kind: ScriptedCall["kind"], options: LanguageModelV3CallOptions): ReadonlyArray<Script.ScriptStep> {
    this.#calls.push({ ...options, kind })
    const turn = this.#turns.shift()
    if (turn === undefined) {
      throw new Error(
        `ScriptedModel: no turn left for call ${this.#calls.length} ` +
          `(all ${this.#calls.length - 1} scripted turns were consumed)`
      )
    }
    return Script.resolveTurn(turn, options)
  }

  async *#parts(
    steps: ReadonlyArray<Script.ScriptStep>,
    options: LanguageModelV3CallOptions,
    call: number
  ): AsyncGenerator<LanguageModelV3StreamPart, void, undefined> {
    yield { type: "stream-start", warnings: [] }
    yield { type: "response-metadata", id: `scripted-${call}`, modelId: this.modelId, timestamp: new Date() }
    let tools = 0
    for (const [index, step] of steps.entries()) {
      if ("text" in step) {
        const id = `text-${index}`
        yield { type: "text-start", id }
        for (const delta of Script.textDeltas(step.text)) yield { type: "text-delta", id, delta }
        yield { type: "text-end", id }
      } else if ("reasoning" in step) {
        const id = `reasoning-${index}`
        yield { type: "reasoning-start", id }
        for (const delta of Script.textDeltas(step.reasoning)) yield { type: "reasoning-delta", id, delta }
        yield { type: "reasoning-end", id }
      } else if ("toolCall" in step) {
        const id = step.toolCall.id ?? `call_${call}_${tools}`
        tools++
        const input = Script.toolInput(step.toolCall.input)
        yield { type: "tool-input-start", id, toolName: step.toolCall.name }
        for (const delta of Script.argumentDeltas(input)) yield { type: "tool-input-delta", id, delta }
        yield { type: "tool-input-end", id }
        yield { type: "tool-call", toolCallId: id, toolName: step.toolCall.name, input }
      } else if ("delay" in step) {
        await Script.sleep(Script.toMillis(step.delay), options.abortSignal)
      } else if ("error" in step) {
        const error = toError(step.error, options)
        if (Script.placementInStream(step) === "stream") throw error
        yield { type: "error", error }
      }
    }
    const outcome = Script.outcomeOf(steps)
    yield { type: "finish", finishReason: finishReason(outcome.finish), usage: toUsage(outcome.usage) }
  }
}

const RAW_FINISH: Record<Script.ScriptFinishReason, string> = {
  "stop": "stop",
  "tool-calls": "tool_calls",
  "length": "length",
  "content-filter": "content_filter",
  "other": "other"
}

const finishReason = (reason: Script.ScriptFinishReason): LanguageModelV3FinishReason => ({
  unified: reason,
  raw: RAW_FINISH[reason]
})

/** Script usage in the V3 shape (totals include cached input and reasoning output). */
export const toUsage = (usage: Script.ScriptUsage): LanguageModelV3Usage => {
  const cacheRead = usage.cacheRead ?? 0
  const cacheWrite = usage.cacheWrite ?? 0
  const reasoning = usage.reasoning ?? 0
  return {
    inputTokens: {
      total: usage.input,
      noCache: Math.max(0, usage.input - cacheRead - cacheWrite),
      cacheRead,
      cacheWrite
    },
    outputTokens: { total: usage.output, text: Math.max(0, usage.output - reasoning), reasoning }
  }
}

const toError = (error: Script.ScriptApiError | Error, options: LanguageModelV3CallOptions): Error =>
  Script.isApiError(error) ? toApiCallError(error, { prompt: options.prompt }) : error

const toApiCallError = (error: Script.ScriptApiError, requestBodyValues: unknown): APICallError => {
  const body = Script.errorBody(error)
  return new APICallError({
    message: error.message,
    url: "https://scripted.invalid/v1/chat/completions",
    requestBodyValues,
    statusCode: error.statusCode,
    responseHeaders: { "content-type": "application/json", ...error.headers },
    responseBody: JSON.stringify(body),
    isRetryable: error.isRetryable ?? Script.defaultRetryable(error.statusCode),
    data: body
  })
}
