/**
 * Record a model's calls to a JSONL file, then replay them without a network.
 *
 * One JSON object per line:
 * - `{ "cassette": 1, "provider", "modelId" }` first;
 * - `{ "call": n, "kind": "stream" | "generate", "request": {...} }` when call n starts (`request`
 *   holds the prompt, the tool names and the sampling settings, for a reader of the file);
 * - `{ "call": n, "response": {...} }` when `doStream` resolves (its `request`/`response` metadata);
 * - `{ "call": n, "part": <stream part> }` for each stream part, in order;
 * - `{ "call": n, "end": true }`, or `{ "call": n, "error": ... }` when the call or its stream
 *   failed, or `{ "call": n, "cancelled": true }` when the reader stopped early;
 * - `{ "call": n, "result": ... }` for `doGenerate`.
 *
 * Values JSON cannot hold (`Uint8Array`, `Date`, `Error`s — `APICallError` keeps its class —
 * `undefined`, `bigint`) are written as `{ "$cassette": kind, ... }` and revived on replay.
 */
import {
  APICallError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3GenerateResult,
  type LanguageModelV3StreamPart,
  type LanguageModelV3StreamResult
} from "@ai-sdk/provider"
import * as fs from "node:fs"
import * as path from "node:path"

type Kind = "stream" | "generate"

export interface CassetteRecorder extends LanguageModelV3 {
  readonly file: string
  /** Calls recorded so far. */
  readonly calls: () => number
}

export interface CassettePlayer extends LanguageModelV3 {
  readonly file: string
  /** Calls in the file. */
  readonly recorded: number
  /** Calls replayed so far. */
  readonly replayed: () => number
  /** Throws unless every recorded call was replayed. */
  readonly assertConsumed: () => void
}

/**
 * Wraps `model`: every call passes through and is appended to `file` (created, or truncated
 * when it exists). The parts reach the caller unchanged.
 */
export const record = (model: LanguageModelV3, file: string): CassetteRecorder => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, "")
  const append = (line: object) => fs.appendFileSync(file, JSON.stringify(encode(line)) + "\n")
  append({ cassette: 1, provider: model.provider, modelId: model.modelId })
  let calls = 0

  const begin = (kind: Kind, options: LanguageModelV3CallOptions) => {
    const call = ++calls
    append({ call, kind, request: requestSummary(options) })
    return call
  }

  return {
    specificationVersion: "v3",
    provider: model.provider,
    modelId: model.modelId,
    get supportedUrls() {
      return model.supportedUrls
    },
    file,
    calls: () => calls,
    async doStream(options) {
      const call = begin("stream", options)
      let result: LanguageModelV3StreamResult
      try {
        result = await model.doStream(options)
      } catch (error) {
        append({ call, error })
        throw error
      }
      append({ call, response: { request: result.request, response: result.response } })
      const reader = result.stream.getReader()
      const stream = new ReadableStream<LanguageModelV3StreamPart>({
        async pull(controller) {
          let next: Awaited<ReturnType<typeof reader.read>>
          try {
            next = await reader.read()
          } catch (error) {
            append({ call, error })
            throw error
          }
          if (next.done) {
            append({ call, end: true })
            controller.close()
          } else {
            append({ call, part: next.value })
            controller.enqueue(next.value)
          }
        },
        async cancel(reason) {
          append({ call, cancelled: true })
          await reader.cancel(reason)
        }
      })
      return { ...result, stream }
    },
    async doGenerate(options) {
      const call = begin("generate", options)
      try {
        const result = await model.doGenerate(options)
        append({ call, result })
        return result
      } catch (error) {
        append({ call, error })
        throw error
      }
    }
  }
}

/**
 * A model that replays `file` call by call: the n-th call gets the n-th recorded call's parts
 * (or error), immediately and without any network. Calling more often than recorded, or with
 * `doStream` where `doGenerate` was recorded (or the reverse), throws.
 */
export const replay = (file: string): CassettePlayer => {
  if (!fs.existsSync(file)) throw new Error(`Cassette: no recording at ${file}`)
  const { header, calls } = parseFile(file)
  let replayed = 0

  const take = (kind: Kind): RecordedCall => {
    const index = replayed++
    const recorded = calls[index]
    if (recorded === undefined) {
      throw new Error(
        `Cassette ${file}: call ${index + 1} was made but only ${calls.length} calls were recorded`
      )
    }
    if (recorded.kind !== kind) {
      throw new Error(`Cassette ${file}: call ${index + 1} is a ${kind} call but a ${recorded.kind} call was recorded`)
    }
    return recorded
  }

  return {
    specificationVersion: "v3",
    provider: header.provider,
    modelId: header.modelId,
    supportedUrls: {},
    file,
    recorded: calls.length,
    replayed: () => replayed,
    assertConsumed: () => {
      if (replayed !== calls.length) {
        throw new Error(`Cassette ${file}: ${replayed} of ${calls.length} recorded calls were replayed`)
      }
    },
    async doStream(options) {
      const recorded = take("stream")
      if (recorded.response === undefined) throw recorded.error ?? new Error(`Cassette ${file}: call has no response`)
      const parts = [...recorded.parts]
      const failure = recorded.error
      const signal = options.abortSignal
      const stream = new ReadableStream<LanguageModelV3StreamPart>({
        pull(controller) {
          if (signal?.aborted) return controller.error(signal.reason)
          const part = parts.shift()
          if (part !== undefined) controller.enqueue(part)
          else if (failure !== undefined) controller.error(failure)
          else controller.close()
        }
      })
      return { ...recorded.response, stream }
    },
    async doGenerate() {
      const recorded = take("generate")
      if (recorded.result === undefined) throw recorded.error ?? new Error(`Cassette ${file}: call has no result`)
      return recorded.result
    }
  }
}

/** Replays `file` when it exists, else records `live()` into it (VCR style). */
export const replayOrRecord = (file: string, live: () => LanguageModelV3): LanguageModelV3 =>
  fs.existsSync(file) ? replay(file) : record(live(), file)

// --- file format -----------------------------------------------------------------------------

interface RecordedCall {
  readonly kind: Kind
  readonly parts: Array<LanguageModelV3StreamPart>
  response?: Omit<LanguageModelV3StreamResult, "stream">
  result?: LanguageModelV3GenerateResult
  error?: unknown
}

const parseFile = (file: string) => {
  const lines = fs.readFileSync(file, "utf8").split("\n").filter((line) => line.trim().length > 0)
  const entries = lines.map((line, index) => {
    const value = decode(JSON.parse(line))
    if (!isRecord(value)) throw new Error(`Cassette ${file}:${index + 1}: not a JSON object`)
    return value
  })
  const first = entries[0]
  if (first === undefined || first["cassette"] !== 1) throw new Error(`Cassette ${file}: missing the header line`)
  const header = { provider: String(first["provider"]), modelId: String(first["modelId"]) }
  const calls: Array<RecordedCall> = []
  for (const [index, entry] of entries.slice(1).entries()) {
    const number = entry["call"]
    if (typeof number !== "number") throw new Error(`Cassette ${file}:${index + 2}: no call number`)
    const kind = entry["kind"]
    if (kind === "stream" || kind === "generate") {
      calls[number - 1] = { kind, parts: [] }
      continue
    }
    const call = calls[number - 1]
    if (call === undefined) throw new Error(`Cassette ${file}:${index + 2}: call ${number} was never started`)
    // The recorder wrote these values from the SDK's own types; decode restored their classes.
    if ("part" in entry) call.parts.push(entry["part"] as LanguageModelV3StreamPart)
    if ("response" in entry) call.response = entry["response"] as Omit<LanguageModelV3StreamResult, "stream">
    if ("result" in entry) call.result = entry["result"] as LanguageModelV3GenerateResult
    if ("error" in entry) call.error = entry["error"]
  }
  const missing = calls.findIndex((call) => call === undefined)
  if (missing !== -1) throw new Error(`Cassette ${file}: call ${missing + 1} is missing`)
  return { header, calls }
}

const requestSummary = (options: LanguageModelV3CallOptions) => ({
  prompt: options.prompt,
  tools: options.tools?.map((entry) => entry.name),
  toolChoice: options.toolChoice,
  temperature: options.temperature,
  topP: options.topP,
  maxOutputTokens: options.maxOutputTokens
})

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

// --- JSON-safe values ------------------------------------------------------------------------

const TAG = "$cassette"

/** A JSON-safe copy of `value` (see the module comment). */
export const encode = (value: unknown): unknown => {
  if (value === undefined) return { [TAG]: "undefined" }
  if (typeof value === "bigint") return { [TAG]: "bigint", value: value.toString() }
  if (typeof value === "function" || typeof value === "symbol") return { [TAG]: "undefined" }
  if (value === null || typeof value !== "object") return value
  if (value instanceof Date) return { [TAG]: "date", value: value.toISOString() }
  if (value instanceof Uint8Array) return { [TAG]: "bytes", base64: Buffer.from(value).toString("base64") }
  if (APICallError.isInstance(value)) {
    return {
      [TAG]: "api-call-error",
      message: value.message,
      url: value.url,
      requestBodyValues: encode(value.requestBodyValues),
      statusCode: encode(value.statusCode),
      responseHeaders: encode(value.responseHeaders),
      responseBody: encode(value.responseBody),
      isRetryable: value.isRetryable,
      data: encode(value.data)
    }
  }
  if (value instanceof Error) {
    const fields: Record<string, unknown> = {}
    for (const [key, field] of Object.entries(value)) fields[key] = encode(field)
    return { [TAG]: "error", name: value.name, message: value.message, fields }
  }
  if (Array.isArray(value)) return value.map(encode)
  if (value instanceof AbortSignal) return { [TAG]: "undefined" }
  const out: Record<string, unknown> = {}
  for (const [key, field] of Object.entries(value)) out[key] = encode(field)
  return out
}

/** Reverses `encode`. */
export const decode = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(decode)
  if (!isRecord(value)) return value
  const tag = value[TAG]
  if (tag === undefined) {
    const out: Record<string, unknown> = {}
    for (const [key, field] of Object.entries(value)) out[key] = decode(field)
    return out
  }
  switch (tag) {
    case "undefined":
      return undefined
    case "bigint":
      return BigInt(String(value["value"]))
    case "date":
      return new Date(String(value["value"]))
    case "bytes":
      return new Uint8Array(Buffer.from(String(value["base64"]), "base64"))
    case "api-call-error": {
      const statusCode = decode(value["statusCode"])
      const responseHeaders = decode(value["responseHeaders"])
      const responseBody = decode(value["responseBody"])
      return new APICallError({
        message: String(value["message"]),
        url: String(value["url"]),
        requestBodyValues: decode(value["requestBodyValues"]),
        ...(typeof statusCode === "number" ? { statusCode } : {}),
        ...(isStringRecord(responseHeaders) ? { responseHeaders } : {}),
        ...(typeof responseBody === "string" ? { responseBody } : {}),
        isRetryable: value["isRetryable"] === true,
        data: decode(value["data"])
      })
    }
    case "error": {
      const error = new Error(String(value["message"]))
      error.name = String(value["name"])
      const fields = decode(value["fields"])
      if (isRecord(fields)) Object.assign(error, fields)
      return error
    }
    default:
      throw new Error(`Cassette: unknown value kind ${String(tag)}`)
  }
}

const isStringRecord = (value: unknown): value is Record<string, string> =>
  isRecord(value) && Object.values(value).every((field) => typeof field === "string")
