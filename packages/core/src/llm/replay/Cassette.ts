/**
 * Record a model's calls to a cassette file (CassetteFormat.ts), then replay them without a
 * network. Both sit at the provider boundary: they wrap or stand in for a `LanguageModelV3`,
 * so LLMService, the loop, tools, permissions and snapshots run for real.
 */
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult
} from "@ai-sdk/provider"
import * as fs from "node:fs"
import * as path from "node:path"
import { type CassetteHeader, type Kind, line, parseFile, type RecordedCall, requestSummary } from "./CassetteFormat.js"
import { ProviderError } from "../LLMService.js"
import { divergence } from "./Divergence.js"

export { CassetteFileError, decode, encode } from "./CassetteFormat.js"

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

// --- recording -------------------------------------------------------------------------------

/** A file being written; several models may record into it, their calls numbered in one sequence. */
export interface Recording {
  readonly file: string
  /** `model` recording into this file; `ref` (`provider/model`) is written with each call. */
  readonly wrap: (model: LanguageModelV3, ref?: string) => CassetteRecorder
  /** Calls recorded so far, by every model. */
  readonly calls: () => number
}

/** Creates (or truncates) `file` and writes its header. */
export const openRecording = (file: string, header: CassetteHeader): Recording => {
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
  fs.writeFileSync(file, line({ cassette: 1, ...header }))
  const append = (value: object) => fs.appendFileSync(file, line(value))
  let calls = 0
  const begin = (kind: Kind, options: LanguageModelV3CallOptions, ref: string | undefined) => {
    const call = ++calls
    append({ call, kind, ...(ref !== undefined ? { model: ref } : {}), request: requestSummary(options) })
    return call
  }
  return { file, calls: () => calls, wrap: (model, ref) => recorder(model, file, append, (kind, options) => begin(kind, options, ref), () => calls) }
}

/**
 * Wraps `model`: every call passes through and is appended to `file` (created, or truncated
 * when it exists). The parts reach the caller unchanged.
 */
export const record = (model: LanguageModelV3, file: string): CassetteRecorder =>
  openRecording(file, { provider: model.provider, modelId: model.modelId }).wrap(model)

const recorder = (
  model: LanguageModelV3,
  file: string,
  append: (value: object) => void,
  begin: (kind: Kind, options: LanguageModelV3CallOptions) => number,
  calls: () => number
): CassetteRecorder => ({
  specificationVersion: "v3",
  provider: model.provider,
  modelId: model.modelId,
  get supportedUrls() {
    return model.supportedUrls
  },
  file,
  calls,
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
    return { ...result, stream: tee(result.stream, call, append) }
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
})

/** The same stream, each part (and its end, failure or cancellation) appended to the file. */
const tee = (source: ReadableStream<LanguageModelV3StreamPart>, call: number, append: (value: object) => void) => {
  const reader = source.getReader()
  return new ReadableStream<LanguageModelV3StreamPart>({
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
}

// --- replaying -------------------------------------------------------------------------------

/**
 * A call that left the recording, saying which recorded call it was held against and what
 * differed: a provider error that is never retried and never taken for a context overflow,
 * whatever words the conversation holds.
 */
const diverged = (detail: string, provider: string, modelId: string) =>
  new ProviderError({ providerID: provider, modelID: modelId, detail, retryable: false, contextOverflow: false })

export interface PlayerOptions {
  /**
   * Compare each call's conversation with the recorded one (Divergence.ts) and match calls by
   * lane: calls offering tools (the agent's steps) and calls offering none (titles, summaries)
   * are each replayed in their own order, since a title is asked for alongside the first step.
   */
  readonly follow?: boolean
  /** The project directory now, compared with the recorded one as `<project>`. */
  readonly directory?: string
}

export interface Player {
  readonly file: string
  readonly header: CassetteHeader
  readonly recorded: number
  readonly replayed: () => number
  /** A model answering from this file (any number of them share its calls). */
  readonly model: (provider?: string, modelId?: string) => CassettePlayer
}

type Lane = "tools" | "plain"

const laneOf = (tools: ReadonlyArray<unknown> | undefined): Lane => (tools?.length ?? 0) > 0 ? "tools" : "plain"

/** Reads `file` (throws `CassetteFileError` when it is not a cassette). */
export const openPlayer = (file: string, options: PlayerOptions = {}): Player => {
  if (!fs.existsSync(file)) throw new Error(`Cassette: no recording at ${file}`)
  const { header, calls } = parseFile(file)
  const used = new Set<number>()
  // A person counts the agent's steps; the file numbers every call, titles included.
  const where = (call: RecordedCall) => {
    const lane = laneOf(call.request?.tools)
    const ordinal = calls.filter((other) => other.number <= call.number && laneOf(other.request?.tools) === lane).length
    return `${lane === "tools" ? "step" : "call without tools (a title or summary)"} ${ordinal} (model call ${call.number}, ${file}:${call.line})`
  }

  const take = (kind: Kind, request: LanguageModelV3CallOptions, provider: string, modelId: string): RecordedCall => {
    const ordinal = used.size + 1
    if (!options.follow) {
      const recorded = calls[used.size]
      if (recorded === undefined) {
        throw new Error(`Cassette ${file}: call ${ordinal} was made but only ${calls.length} calls were recorded`)
      }
      used.add(recorded.number)
      if (recorded.kind !== kind) {
        throw new Error(`Cassette ${file}: call ${ordinal} is a ${kind} call but a ${recorded.kind} call was recorded`)
      }
      return recorded
    }
    const lane = laneOf(request.tools)
    const recorded = calls.find((call) => !used.has(call.number) && laneOf(call.request?.tools) === lane)
    if (recorded === undefined) {
      const inLane = calls.filter((call) => laneOf(call.request?.tools) === lane).length
      throw diverged(
        `replay left the recording at ${lane === "tools" ? "step" : "call without tools"} ${inLane + 1}: the run asked the model again, ` +
          `but all ${inLane} ${lane === "tools" ? "steps" : "calls without tools (titles, summaries)"} recorded in ${file} were replayed`,
        provider,
        modelId
      )
    }
    used.add(recorded.number)
    if (recorded.kind !== kind) {
      throw diverged(`replay left the recording at ${where(recorded)}: a ${kind} call where a ${recorded.kind} call was recorded`, provider, modelId)
    }
    if (recorded.request !== undefined) {
      const difference = divergence(
        { prompt: recorded.request.prompt, tools: recorded.request.tools, directory: header.directory },
        { prompt: request.prompt, tools: request.tools?.map((tool) => tool.name), directory: options.directory }
      )
      if (difference) throw diverged(`replay left the recording at ${where(recorded)}: ${difference}`, provider, modelId)
    }
    return recorded
  }

  const model = (provider = header.provider, modelId = header.modelId): CassettePlayer => ({
    specificationVersion: "v3",
    provider,
    modelId,
    supportedUrls: {},
    file,
    recorded: calls.length,
    replayed: () => used.size,
    assertConsumed: () => {
      if (used.size !== calls.length) {
        throw new Error(`Cassette ${file}: ${used.size} of ${calls.length} recorded calls were replayed`)
      }
    },
    async doStream(options) {
      const recorded = take("stream", options, provider, modelId)
      if (recorded.response === undefined) throw recorded.error ?? new Error(`Cassette ${file}: call has no response`)
      return { ...recorded.response, stream: playback(recorded, options.abortSignal) }
    },
    async doGenerate(options) {
      const recorded = take("generate", options, provider, modelId)
      if (recorded.result === undefined) throw recorded.error ?? new Error(`Cassette ${file}: call has no result`)
      return recorded.result
    }
  })

  return { file, header, recorded: calls.length, replayed: () => used.size, model }
}

/** The recorded parts, then the recorded failure if the stream failed. */
const playback = (recorded: RecordedCall, signal: AbortSignal | undefined) => {
  const parts = [...recorded.parts]
  const failure = recorded.error
  return new ReadableStream<LanguageModelV3StreamPart>({
    pull(controller) {
      if (signal?.aborted) return controller.error(signal.reason)
      const part = parts.shift()
      if (part !== undefined) controller.enqueue(part)
      else if (failure !== undefined) controller.error(failure)
      else controller.close()
    }
  })
}

/**
 * A model that replays `file` call by call: the n-th call gets the n-th recorded call's parts
 * (or error), immediately and without any network. Calling more often than recorded, or with
 * `doStream` where `doGenerate` was recorded (or the reverse), throws.
 */
export const replay = (file: string): CassettePlayer => openPlayer(file).model()

/** Replays `file` when it exists, else records `live()` into it (VCR style). */
export const replayOrRecord = (file: string, live: () => LanguageModelV3): LanguageModelV3 =>
  fs.existsSync(file) ? replay(file) : record(live(), file)
