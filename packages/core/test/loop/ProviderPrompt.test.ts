import { ScriptedModel } from "@agent/testing"
import type { LanguageModelV3Prompt } from "@ai-sdk/provider"
import { describe, expect, it } from "@effect/vitest"
import type { ModelMessage } from "ai"
import { Chunk, Effect, Stream } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { type LLMEvent, LLMService } from "../../src/llm/LLMService.js"
import type { ResolvedModel } from "../../src/llm/ProviderRegistry.js"

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3])

const resolved = (model: ScriptedModel): ResolvedModel => ({
  info: { providerID: "test", modelID: "scripted", name: "scripted", limit: { context: 100_000, output: 4_000 } },
  language: model
})

/** One step through the live LLMService; the events it produced and the prompt the provider received. */
const step = (model: ScriptedModel, messages: ReadonlyArray<ModelMessage>, tools = ["read", "echo"]) =>
  Effect.gen(function*() {
    const llm = yield* LLMService
    const events = yield* llm.stream({
      model: resolved(model),
      system: ["You are a test."],
      messages,
      tools: tools.map((id) => ({ id, description: id, parameters: { type: "object", properties: {} } }))
    }).pipe(Stream.runCollect)
    return { events: Chunk.toArray(events), prompt: model.calls.at(-1)!.prompt as LanguageModelV3Prompt }
  }).pipe(Effect.provide(LLMService.layer))

/** A local HTTP server that serves a PNG, counting requests. */
const imageServer = Effect.acquireRelease(
  Effect.async<{ url: string; hits: () => number; close: () => void }>((resume) => {
    let hits = 0
    const server = http.createServer((_, response) => {
      hits++
      response.writeHead(200, { "content-type": "image/png" }).end(PNG)
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(Effect.succeed({ url: `http://127.0.0.1:${port}/cat.png`, hits: () => hits, close: () => server.close() }))
    })
  }),
  (server) => Effect.sync(() => server.close())
)

describe("the prompt the provider receives", () => {
  it.live("system first, attachments as base64 with their type, tool results answering their calls", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make(["ok"])
      const { prompt } = yield* step(model, [
        {
          role: "user",
          content: [
            { type: "text", text: "look" },
            { type: "file", data: `data:image/png;base64,${PNG.toString("base64")}`, mediaType: "image/png", filename: "cat.png" }
          ]
        },
        { role: "assistant", content: [{ type: "tool-call", toolCallId: "c1", toolName: "read", input: { filePath: "a" } }] },
        { role: "tool", content: [{ type: "tool-result", toolCallId: "c1", toolName: "read", output: { type: "text", value: "A" } }] }
      ])
      expect(prompt.map((message) => message.role)).toEqual(["system", "user", "assistant", "tool"])
      expect(prompt[0]).toEqual({ role: "system", content: "You are a test." })
      expect(prompt[1]!.content[1]).toEqual({ type: "file", data: PNG.toString("base64"), mediaType: "image/png", filename: "cat.png" })
      expect(prompt[3]!.content).toEqual([{ type: "tool-result", toolCallId: "c1", toolName: "read", output: { type: "text", value: "A" } }])
    }))

  it.scopedLive("an image URL the model cannot fetch is downloaded; one it can fetch is passed on", () =>
    Effect.gen(function*() {
      const server = yield* imageServer
      const message: ModelMessage = { role: "user", content: [{ type: "file", data: server.url, mediaType: "image/*" }] }

      const blind = ScriptedModel.make(["ok"])
      const downloaded = (yield* step(blind, [message])).prompt[1]!.content[0]
      expect(downloaded).toMatchObject({ type: "file", mediaType: "image/png" })
      expect(Buffer.from((downloaded as { data: Uint8Array }).data)).toEqual(PNG)
      expect(server.hits()).toBe(1)

      const seeing = ScriptedModel.make(["ok"])
      Object.assign(seeing, { supportedUrls: { "image/*": [/^http:\/\/127\.0\.0\.1/] } })
      const passed = (yield* step(seeing, [message])).prompt[1]!.content[0]
      expect((passed as { data: URL }).data.toString()).toBe(server.url)
      expect(server.hits()).toBe(1)
    }))

  it.live("a step sends what the history says, however often the same messages are sent again", () =>
    Effect.gen(function*() {
      const history: Array<ModelMessage> = [{ role: "user", content: [{ type: "text", text: "first" }] }]
      const model = ScriptedModel.make(["one", "two"])
      const first = (yield* step(model, history)).prompt
      history.push({ role: "assistant", content: [{ type: "text", text: "one" }] }, { role: "user", content: [{ type: "text", text: "second" }] })
      const second = (yield* step(model, history)).prompt
      expect(first.slice(1)).toEqual([{ role: "user", content: [{ type: "text", text: "first" }] }])
      expect(second.slice(1).map((message) => message.content)).toEqual([
        [{ type: "text", text: "first" }],
        [{ type: "text", text: "one" }],
        [{ type: "text", text: "second" }]
      ])
    }))
})

describe("tool calls from the provider", () => {
  const calls = (events: ReadonlyArray<LLMEvent>) => events.filter((event) => event.type === "tool-call")

  it.live("a name that differs only in case is repaired; an unknown name and broken JSON are marked invalid", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        [ScriptedModel.toolCall("READ", { filePath: "a" })],
        [ScriptedModel.toolCall("fly", { to: "moon" })],
        [ScriptedModel.toolCall("echo", '{"text": "unfinished')]
      ])
      const repaired = calls((yield* step(model, [{ role: "user", content: "go" }])).events)
      expect(repaired).toEqual([expect.objectContaining({ toolName: "read", input: { filePath: "a" } })])
      expect(repaired[0]).not.toHaveProperty("invalid")

      const unknown = calls((yield* step(model, [{ role: "user", content: "go" }])).events)
      expect(unknown[0]).toMatchObject({ toolName: "fly", input: { to: "moon" } })
      expect((unknown[0] as { invalid: string }).invalid).toBe("Model tried to call unavailable tool 'fly'. Available tools: read, echo.")

      const broken = calls((yield* step(model, [{ role: "user", content: "go" }])).events)
      expect(broken[0]).toMatchObject({ toolName: "echo", input: '{"text": "unfinished' })
      expect((broken[0] as { invalid: string }).invalid).toMatch(/^Invalid input for tool echo: JSON parsing failed: Text: \{"text": "unfinished\./)
    }))

  it.live("usage and finish reason arrive with the step's end", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[ScriptedModel.text("hi"), ScriptedModel.finish("stop", { input: 100, output: 7, cacheRead: 40 })]])
      const { events } = yield* step(model, [{ role: "user", content: "hi" }])
      expect(events.at(-1)).toMatchObject({ type: "finish-step", finishReason: "stop", usage: { input: 60, output: 7, cache: { read: 40 } } })
      expect(events.filter((event) => event.type === "text-delta").map((event) => (event as { text: string }).text).join("")).toBe("hi")
    }))
})

describe("the two forms of a model call", () => {
  const request = (model: ScriptedModel) => ({
    model: resolved(model),
    system: ["You are a test."],
    messages: [{ role: "user" as const, content: "go" }],
    tools: [{ id: "read", description: "read", parameters: { type: "object", properties: {} } }]
  })
  const turn = () => [
    ScriptedModel.text("one two three"),
    ScriptedModel.toolCall("read", { filePath: "a" }, "call_a"),
    ScriptedModel.fail({ statusCode: 500, message: "upstream broke mid-answer" }, "stream")
  ]
  /** Events by `call`, then the error it ended with (if any). */
  const viaCall = (llm: LLMService["Type"], model: ScriptedModel) =>
    Effect.gen(function*() {
      const events: Array<LLMEvent> = []
      const exit = yield* Effect.either(llm.call(request(model), (event) => Effect.sync(() => void events.push(event))))
      return { events, error: exit._tag === "Left" ? exit.left : undefined }
    })

  it.live("`call` hands over the same events as `stream`, in order, and ends with the same provider error", () =>
    Effect.gen(function*() {
      const llm = yield* LLMService
      const model = ScriptedModel.make([turn(), turn()])
      const streamed: Array<LLMEvent> = []
      const streamError = yield* llm.stream(request(model)).pipe(
        Stream.runForEach((event) => Effect.sync(() => void streamed.push(event))),
        Effect.flip
      )
      const called = yield* viaCall(llm, model)
      const text = streamed.flatMap((event) => event.type === "text-delta" ? [event.text] : []).join("")
      expect(text).toBe("one two three")
      expect(streamed.filter((event) => event.type === "tool-call")).toEqual([expect.objectContaining({ toolName: "read", input: { filePath: "a" } })])
      expect(called.events).toEqual(streamed)
      expect(called.error?.message).toBe(streamError.message)
      expect(streamError.message).toContain("upstream broke mid-answer")
    }).pipe(Effect.provide(LLMService.layer)))

  it.live("a backend given only as a stream still serves `call` (LLMService.fromStream)", () =>
    Effect.gen(function*() {
      const events: ReadonlyArray<LLMEvent> = [
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", text: "hi" },
        { type: "text-end", id: "t" }
      ]
      const custom = LLMService.fromStream(() => Stream.fromIterable(events))
      const seen: Array<LLMEvent> = []
      yield* custom.call(request(ScriptedModel.make([])), (event) => Effect.sync(() => void seen.push(event)))
      expect(seen).toEqual(events)
    }))
})

describe("the prompt of a growing conversation", () => {
  // Messages of one conversation, as the loop hands them over: the same objects step after step.
  const user = (text: string): ModelMessage => ({ role: "user", content: [{ type: "text", text }] })
  const call = (id: string): ModelMessage => ({
    role: "assistant",
    content: [{ type: "tool-call", toolCallId: id, toolName: "read", input: { filePath: id } }]
  })
  const result = (id: string): ModelMessage => ({
    role: "tool",
    content: [{ type: "tool-result", toolCallId: id, toolName: "read", output: { type: "text", value: `contents of ${id}` } }]
  })
  const emptyTool: ModelMessage = { role: "tool", content: [] }
  const emptyUser: ModelMessage = { role: "user", content: [] }

  it.live("each request equals a prompt built from scratch, however the conversation grew or changed", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make(Array.from({ length: 80 }, () => "ok"))
      const fresh = ScriptedModel.make(Array.from({ length: 80 }, () => "ok"))
      const conversation: Array<ModelMessage> = [user("start")]
      // Deterministic variety: tool results split over several messages, empty ones between
      // them (dropped from the prompt), a reminder replacing the last user message, and an
      // earlier message swapped for another.
      for (let turn = 0; turn < 40; turn++) {
        const kind = (turn * 7) % 5
        conversation.push(call(`c${turn}`))
        if (kind === 0) conversation.push(result(`c${turn}`), emptyTool, result(`c${turn}b`))
        else if (kind === 1) conversation.push(result(`c${turn}`), emptyUser, result(`c${turn}b`))
        else conversation.push(result(`c${turn}`))
        if (kind === 2) conversation.push(user(`more ${turn}`))
        if (kind === 3 && conversation.length > 6) conversation[3] = result(`swapped ${turn}`)
        const sent = kind === 4 ? [...conversation.slice(0, -1), user("with a reminder")] : [...conversation]
        const { prompt } = yield* step(model, sent)
        // the same messages as new objects: nothing to reuse
        const { prompt: expected } = yield* step(fresh, structuredClone(sent))
        expect(prompt).toEqual(expected)
      }
      // the tool results of one call end up in one tool message
      const { prompt } = yield* step(model, conversation)
      const tools = prompt.filter((message) => message.role === "tool")
      expect(tools.some((message) => message.content.length === 2)).toBe(true)
    }))
})
