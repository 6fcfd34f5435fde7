/**
 * The cassette file: a model's calls, one JSON object per line, so a run can be replayed
 * without a network (see Cassette.ts).
 *
 * - `{ "cassette": 1, "provider", "modelId" }` first; `agent run --record` adds `model`
 *   (the run's default `provider/model`) and `directory` (the project it ran in);
 * - `{ "call": n, "kind": "stream" | "generate", "request": {...} }` when call n starts (`request`
 *   holds the prompt, the tool names and the sampling settings; replay compares the conversation
 *   against it); `model` names the `provider/model` when several models share the file;
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
  type LanguageModelV3CallOptions,
  type LanguageModelV3GenerateResult,
  type LanguageModelV3Prompt,
  type LanguageModelV3StreamPart,
  type LanguageModelV3StreamResult
} from "@ai-sdk/provider"
import { Either, ParseResult, Schema } from "effect"
import * as fs from "node:fs"

export type Kind = "stream" | "generate"

/** The first line of a file. */
export interface CassetteHeader {
  readonly provider: string
  readonly modelId: string
  /** The run's default model, `provider/model` (written by `agent run --record`). */
  readonly model?: string
  /** The project directory the recording ran in. */
  readonly directory?: string
}

/** What a call was asked, as written to the file. */
export interface RequestSummary {
  readonly prompt: LanguageModelV3Prompt
  readonly tools?: ReadonlyArray<string>
  readonly toolChoice?: unknown
  readonly temperature?: number
  readonly topP?: number
  readonly maxOutputTokens?: number
}

export interface RecordedCall {
  /** 1-based, as in the file. */
  readonly number: number
  /** The line of the file where the call starts. */
  readonly line: number
  readonly kind: Kind
  readonly model?: string
  readonly request?: RequestSummary
  readonly parts: Array<LanguageModelV3StreamPart>
  response?: Omit<LanguageModelV3StreamResult, "stream">
  result?: LanguageModelV3GenerateResult
  error?: unknown
}

export interface Cassette {
  readonly header: CassetteHeader
  readonly calls: ReadonlyArray<RecordedCall>
}


// --- file format -----------------------------------------------------------------------------

/** A file that is not a cassette, or a broken one: names the file and line. */
export class CassetteFileError extends Error {
  override readonly name = "CassetteFileError"
}

const Header = Schema.Struct({
  cassette: Schema.Literal(1),
  provider: Schema.String,
  modelId: Schema.String,
  model: Schema.optionalWith(Schema.String, { exact: true }),
  directory: Schema.optionalWith(Schema.String, { exact: true })
})

// The envelope of a line; what it carries (parts, results, errors) the recorder wrote from the
// SDK's own types, and `decode` restored their classes.
const Entry = Schema.Struct({
  call: Schema.Int.pipe(Schema.positive()),
  kind: Schema.optional(Schema.Literal("stream", "generate")),
  model: Schema.optional(Schema.String),
  request: Schema.optional(Schema.Struct({ prompt: Schema.Array(Schema.Unknown) }, Schema.Record({ key: Schema.String, value: Schema.Unknown }))),
  part: Schema.optional(Schema.Struct({ type: Schema.String }, Schema.Record({ key: Schema.String, value: Schema.Unknown })))
}, Schema.Record({ key: Schema.String, value: Schema.Unknown }))

const problem = (error: ParseResult.ParseError) => ParseResult.TreeFormatter.formatErrorSync(error).split("\n").slice(-1)[0]!.trim()

/** Reads and checks a cassette file. Throws `CassetteFileError` naming the line that is wrong. */
export const parseFile = (file: string): Cassette => {
  const lines = fs.readFileSync(file, "utf8").split("\n")
  const entries: Array<{ readonly line: number; readonly value: Record<string, unknown> }> = []
  lines.forEach((text, index) => {
    if (text.trim().length === 0) return
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      throw new CassetteFileError(`${file}:${index + 1}: not JSON`)
    }
    const value = decode(json)
    if (!isRecord(value)) throw new CassetteFileError(`${file}:${index + 1}: not a JSON object`)
    entries.push({ line: index + 1, value })
  })
  const first = entries[0]
  const header = first && Schema.decodeUnknownEither(Header)(first.value)
  if (!header || Either.isLeft(header)) {
    throw new CassetteFileError(`${file}: not a cassette (the first line must be {"cassette": 1, "provider": ..., "modelId": ...})`)
  }
  const calls: Array<RecordedCall> = []
  for (const { line, value } of entries.slice(1)) {
    const decoded = Schema.decodeUnknownEither(Entry)(value)
    if (Either.isLeft(decoded)) throw new CassetteFileError(`${file}:${line}: ${problem(decoded.left)}`)
    const entry = decoded.right
    if (entry.kind !== undefined) {
      calls[entry.call - 1] = {
        number: entry.call,
        line,
        kind: entry.kind,
        ...(entry.model !== undefined ? { model: entry.model } : {}),
        ...(entry.request !== undefined ? { request: entry.request as unknown as RequestSummary } : {}),
        parts: []
      }
      continue
    }
    const call = calls[entry.call - 1]
    if (call === undefined) throw new CassetteFileError(`${file}:${line}: call ${entry.call} was never started`)
    if (entry.part !== undefined) call.parts.push(entry.part as unknown as LanguageModelV3StreamPart)
    if ("response" in value) call.response = value["response"] as Omit<LanguageModelV3StreamResult, "stream">
    if ("result" in value) call.result = value["result"] as LanguageModelV3GenerateResult
    if ("error" in value) call.error = value["error"]
  }
  for (let index = 0; index < calls.length; index++) {
    if (calls[index] === undefined) throw new CassetteFileError(`${file}: call ${index + 1} is missing`)
  }
  const { cassette: _, ...rest } = header.right
  return { header: rest, calls }
}

/** What the file keeps of a call's options. */
export const requestSummary = (options: LanguageModelV3CallOptions): RequestSummary => ({
  prompt: options.prompt,
  ...(options.tools ? { tools: options.tools.map((entry) => entry.name) } : {}),
  ...(options.toolChoice !== undefined ? { toolChoice: options.toolChoice } : {}),
  ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
  ...(options.topP !== undefined ? { topP: options.topP } : {}),
  ...(options.maxOutputTokens !== undefined ? { maxOutputTokens: options.maxOutputTokens } : {})
})

/** One line of the file. */
export const line = (value: object): string => JSON.stringify(encode(value)) + "\n"

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
