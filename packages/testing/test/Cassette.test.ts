import { Cassette, ScriptedModel, type ScriptedTurn, TestInstance } from "@agent/testing"
import { APICallError, type LanguageModelV3StreamPart } from "@ai-sdk/provider"
import { describe, expect, it } from "@effect/vitest"
import { stepCountIs, streamText } from "ai"
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test"
import { Effect } from "effect"
import * as fs from "node:fs"
import { collect, collectUntilFailure, quiet, readTool } from "./support.js"


const conversation = (): Array<ScriptedTurn> => [
  [
    { reasoning: "need the file" },
    { text: "Reading." },
    ScriptedModel.toolCall("read", { path: "notes.md" }, "call_1")
  ],
  [{ text: "It says hello." }, { finish: "stop", usage: { input: 321, output: 12, cacheRead: 300 } }]
]

const run = (model: Parameters<typeof streamText>[0]["model"]) =>
  collect(
    streamText({ model, prompt: "what is in notes.md?", tools: { read: readTool }, stopWhen: stepCountIs(3) }).fullStream
  )

const rawParts = (stream: ReadableStream<LanguageModelV3StreamPart>) =>
  Effect.promise(async () => {
    const parts: Array<LanguageModelV3StreamPart> = []
    const reader = stream.getReader()
    for (let next = await reader.read(); !next.done; next = await reader.read()) parts.push(next.value)
    return parts
  })

describe("Cassette", () => {
  it.scopedLive("replays a recorded streamText conversation part for part, without the model", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const file = box.path("cassettes/notes.jsonl")
      const model = ScriptedModel.make(conversation())
      const recorded = yield* run(Cassette.record(model, file))
      expect(model.calls).toHaveLength(2)

      const lines = fs.readFileSync(file, "utf8").trim().split("\n").map((line) => JSON.parse(line) as unknown)
      expect(lines[0]).toEqual({ cassette: 1, provider: "test", modelId: "scripted" })
      expect(lines.filter((line) => typeof line === "object" && line !== null && "kind" in line)).toHaveLength(2)

      const player = Cassette.replay(file)
      const replayed = yield* run(player)
      expect(replayed).toEqual(recorded)
      expect(replayed.map((part) => part.type)).toContain("tool-result")
      const finish = replayed.find((part) => part.type === "finish-step")
      expect(finish?.type === "finish-step" && finish.response.timestamp).toBeInstanceOf(Date)
      expect(model.calls).toHaveLength(2)
      player.assertConsumed()
    }))

  it.scopedLive("a different number of calls than recorded is a clear error", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const file = box.path("two.jsonl")
      yield* run(Cassette.record(ScriptedModel.make(conversation()), file))

      const partly = Cassette.replay(file)
      yield* collect(streamText({ model: partly, prompt: "x" }).fullStream)
      expect(() => partly.assertConsumed()).toThrow(`Cassette ${file}: 1 of 2 recorded calls were replayed`)

      const over = Cassette.replay(file)
      yield* run(over)
      const parts = yield* collect(streamText({ model: over, prompt: "x", maxRetries: 0, ...quiet }).fullStream)
      const errors = parts.flatMap((part) => part.type === "error" ? [part.error] : [])
      expect(errors.map((error) => (error as Error).message)).toEqual([
        `Cassette ${file}: call 3 was made but only 2 calls were recorded`
      ])
      expect(() => Cassette.replay(box.path("missing.jsonl"))).toThrow("Cassette: no recording at")
    }))

  it.scopedLive("bytes, dates and errors survive the file; failed calls and streams replay as failures", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const file = box.path("values.jsonl")
      const providerError = new APICallError({
        message: "upstream hiccup",
        url: "https://example.invalid",
        requestBodyValues: { a: 1 },
        statusCode: 502,
        responseHeaders: { "retry-after": "1" },
        isRetryable: true
      })
      const parts: Array<LanguageModelV3StreamPart> = [
        { type: "stream-start", warnings: [] },
        { type: "response-metadata", id: "r1", timestamp: new Date("2025-01-02T03:04:05.000Z") },
        { type: "file", mediaType: "image/png", data: new Uint8Array([0, 1, 2, 255]) },
        { type: "error", error: providerError },
        {
          type: "finish",
          finishReason: { unified: "stop", raw: undefined },
          usage: {
            inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
            outputTokens: { total: 1, text: 1, reasoning: undefined }
          }
        }
      ]
      const inner = new MockLanguageModelV3({ doStream: { stream: convertArrayToReadableStream(parts) } })
      const recorder = Cassette.record(inner, file)
      const original = yield* rawParts((yield* Effect.promise(() => recorder.doStream({ prompt: [] }))).stream)
      expect(original).toEqual(parts)

      const replayed = yield* rawParts(
        (yield* Effect.promise(() => Cassette.replay(file).doStream({ prompt: [] }))).stream
      )
      expect(replayed).toStrictEqual(parts)
      const file_ = replayed[2]
      expect(file_?.type === "file" && file_.data).toBeInstanceOf(Uint8Array)
      const error = replayed[3]?.type === "error" ? replayed[3].error : undefined
      expect(APICallError.isInstance(error)).toBe(true)
      expect(error).toMatchObject({ statusCode: 502, responseHeaders: { "retry-after": "1" }, isRetryable: true })

      // A call that failed, and a stream that broke after its first text.
      const failing = box.path("failing.jsonl")
      const scripted = ScriptedModel.make([
        ScriptedModel.rateLimited({ retryAfterSeconds: 2 }),
        [{ text: "half" }, { error: new Error("socket hang up") }]
      ])
      const failingRecorder = Cassette.record(scripted, failing)
      yield* collect(streamText({ model: failingRecorder, prompt: "x", maxRetries: 0, ...quiet }).fullStream)
      yield* collectUntilFailure(streamText({ model: failingRecorder, prompt: "x", ...quiet }).fullStream)

      const player = Cassette.replay(failing)
      const first = yield* collect(streamText({ model: player, prompt: "x", maxRetries: 0, ...quiet }).fullStream)
      const callError = first.flatMap((part) => part.type === "error" ? [part.error] : [])[0]
      expect(APICallError.isInstance(callError) && callError.statusCode).toBe(429)
      const second = yield* collectUntilFailure(streamText({ model: player, prompt: "x", ...quiet }).fullStream)
      expect(second.items.flatMap((part) => part.type === "text-delta" ? [part.text] : [])).toEqual(["half"])
      expect((second.failure as Error).message).toBe("socket hang up")
    }))
})
