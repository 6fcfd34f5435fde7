import { modelFetch } from "@agent/core"
import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { APICallError } from "@ai-sdk/provider"
import { describe, expect, it } from "@effect/vitest"
import { generateText, stepCountIs, streamText } from "ai"
import { Effect } from "effect"
import { collect, collectUntilFailure, quiet, readTool, timed } from "./support.js"



const errorsOf = (parts: ReadonlyArray<{ type: string }>): Array<unknown> =>
  parts.flatMap((part) => part.type === "error" && "error" in part ? [part.error] : [])

// Every case runs over node's fetch and over the transport the providers are given (modelFetch):
// both must look the same to the SDK.
describe.each([
  { transport: "node's fetch", viaFetch: undefined },
  { transport: "modelFetch", viaFetch: modelFetch }
])("MockOpenAIServer over $transport", ({ viaFetch }) => {
  const chatModel = (server: MockOpenAIServer.MockOpenAIServer, includeUsage = true) =>
    createOpenAICompatible({ name: "mock", baseURL: server.url, apiKey: "test-key", includeUsage, ...(viaFetch ? { fetch: viaFetch } : {}) })
      .chatModel("gpt-mock")

  it.scopedLive("streams text and usage over SSE to @ai-sdk/openai-compatible", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [{ text: "Hello from the wire" }, { finish: "stop", usage: { input: 500, output: 30, cacheRead: 200 } }]
      ])
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/)
      const result = streamText({ model: chatModel(server), prompt: "hi", temperature: 0.3 })
      const parts = yield* collect(result.fullStream)
      expect(parts.flatMap((part) => part.type === "text-delta" ? [part.text] : [])).toEqual([
        "Hello ",
        "from ",
        "the ",
        "wire"
      ])
      expect(yield* Effect.promise(() => result.finishReason)).toBe("stop")
      const usage = yield* Effect.promise(() => result.totalUsage)
      expect(usage.inputTokens).toBe(500)
      expect(usage.outputTokens).toBe(30)
      expect(usage.inputTokenDetails.cacheReadTokens).toBe(200)
      expect(usage.inputTokenDetails.noCacheTokens).toBe(300)

      expect(server.requests).toHaveLength(1)
      const request = server.requests[0]!
      expect(request.model).toBe("gpt-mock")
      expect(request.stream).toBe(true)
      expect(request.stream_options).toEqual({ include_usage: true })
      expect(request["temperature"]).toBe(0.3)
      expect(request.messages).toEqual([{ role: "user", content: "hi" }])
    }))

  it.scopedLive("without include_usage no usage chunk is sent", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[{ text: "x" }, { finish: "stop", usage: { input: 9, output: 9 } }]])
      const result = streamText({ model: chatModel(server, false), prompt: "hi" })
      expect(yield* Effect.promise(() => result.text)).toBe("x")
      expect((yield* Effect.promise(() => result.totalUsage)).inputTokens).toBeUndefined()
      expect(server.requests[0]!.stream_options).toBeUndefined()
    }))

  it.scopedLive("streams reasoning and tool calls; the next request carries the tool result", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [{ reasoning: "I should read it" }, { toolCall: { name: "read", input: { path: "a.txt" }, id: "call_a" } }],
        (request) => `Seen ${request.messages.length} messages`
      ])
      const result = streamText({
        model: chatModel(server),
        prompt: "read a.txt",
        tools: { read: readTool },
        stopWhen: stepCountIs(3)
      })
      const parts = yield* collect(result.fullStream)
      expect(parts.flatMap((part) => part.type === "reasoning-delta" ? [part.text] : []).join("")).toBe(
        "I should read it"
      )
      expect(parts.find((part) => part.type === "tool-call")).toMatchObject({
        toolCallId: "call_a",
        toolName: "read",
        input: { path: "a.txt" }
      })
      expect(parts.find((part) => part.type === "tool-result")).toMatchObject({ output: "contents of a.txt" })
      expect(yield* Effect.promise(() => result.text)).toBe("Seen 3 messages")

      expect(server.requests).toHaveLength(2)
      expect(server.requests[0]!.tools?.map((entry) => entry.function.name)).toEqual(["read"])
      const [user, assistant, toolMessage] = server.requests[1]!.messages
      expect(user).toMatchObject({ role: "user" })
      expect(assistant).toMatchObject({
        role: "assistant",
        tool_calls: [{ id: "call_a", type: "function", function: { name: "read", arguments: `{"path":"a.txt"}` } }]
      })
      expect(toolMessage).toMatchObject({ role: "tool", tool_call_id: "call_a", content: "contents of a.txt" })
    }))

  it.scopedLive("answers 429 with retry-after, and the SDK retries after that delay", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        ScriptedModel.rateLimited({ retryAfterSeconds: 0.2 }),
        "recovered"
      ])
      const [text, elapsed] = yield* timed(
        Effect.promise(() => streamText({ model: chatModel(server), prompt: "x", maxRetries: 1 }).text)
      )
      expect(text).toBe("recovered")
      expect(server.requests).toHaveLength(2)
      expect(elapsed).toBeGreaterThanOrEqual(190)
      // 200 ms from the header, not the SDK's 2 s default backoff.
      expect(elapsed).toBeLessThan(1_900)
    }))

  it.scopedLive("error statuses reach the caller as APICallErrors with OpenAI's error body", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        ScriptedModel.contextOverflow({ limit: 8192, requested: 9000 }),
        ScriptedModel.serverError(),
        ScriptedModel.rateLimited({ retryAfterSeconds: 7 })
      ])
      const failures: Array<unknown> = []
      for (let call = 0; call < 3; call++) {
        const parts = yield* collect(streamText({ model: chatModel(server), prompt: "x", maxRetries: 0, ...quiet }).fullStream)
        failures.push(...errorsOf(parts))
      }
      const [overflow, internal, limited] = failures
      if (!APICallError.isInstance(overflow)) throw new Error("expected an APICallError")
      expect(overflow.statusCode).toBe(400)
      expect(overflow.isRetryable).toBe(false)
      expect(overflow.message).toBe(
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. " +
          "Please reduce the length of the messages."
      )
      expect(overflow.data).toMatchObject({ error: { code: "context_length_exceeded", type: "invalid_request_error" } })
      if (!APICallError.isInstance(internal)) throw new Error("expected an APICallError")
      expect(internal.statusCode).toBe(500)
      expect(internal.isRetryable).toBe(true)
      if (!APICallError.isInstance(limited)) throw new Error("expected an APICallError")
      expect(limited.statusCode).toBe(429)
      expect(limited.responseHeaders?.["retry-after"]).toBe("7")
    }))

  it.scopedLive("a dropped connection fails the stream after the text already sent", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[{ text: "partial" }, { error: new Error("drop"), at: "stream" }]])
      const result = streamText({ model: chatModel(server), prompt: "x", maxRetries: 0, ...quiet })
      const { failure, items } = yield* collectUntilFailure(result.fullStream)
      expect(items.flatMap((part) => part.type === "text-delta" ? [part.text] : [])).toEqual(["partial"])
      // The provider wraps undici's "terminated" body error.
      expect(APICallError.isInstance(failure)).toBe(true)
      expect((failure as Error).message).toBe("Failed to process successful response")
      expect(items.some((part) => part.type === "finish-step" && part.finishReason === "stop")).toBe(false)
    }))

  it.scopedLive("an error chunk inside the stream becomes an error part", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[{ text: "a" }, ScriptedModel.overloaded({ at: "part" })]])
      const parts = yield* collect(streamText({ model: chatModel(server), prompt: "x", ...quiet }).fullStream)
      const errors = errorsOf(parts)
      expect(errors).toHaveLength(1)
      expect(errors[0]).toMatchObject({ message: "Overloaded", type: "overloaded_error" })
    }))

  it.scopedLive("answers non-streaming requests with one completion", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [{ text: "A title" }, { finish: "stop", usage: { input: 40, output: 3 } }]
      ])
      const result = yield* Effect.promise(() => generateText({ model: chatModel(server), prompt: "title this" }))
      expect(result.text).toBe("A title")
      expect(result.usage.inputTokens).toBe(40)
      expect(result.usage.outputTokens).toBe(3)
      expect(server.requests[0]!.stream).toBeUndefined()
    }))

  it.scopedLive("says so when the script runs out, and push adds turns", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start()
      const parts = yield* collect(streamText({ model: chatModel(server), prompt: "x", ...quiet }).fullStream)
      expect(errorsOf(parts).map((error) => (error as Error).message)).toEqual([
        "MockOpenAIServer: no turn left for request 1 (all 0 scripted turns were consumed)"
      ])
      server.push("late turn")
      expect(server.remaining()).toBe(1)
      expect(yield* Effect.promise(() => streamText({ model: chatModel(server), prompt: "x" }).text)).toBe("late turn")
    }))

  it.live("closes the server when its scope closes", () =>
    Effect.gen(function*() {
      const url = yield* Effect.scoped(Effect.map(MockOpenAIServer.start(), (server) => server.url))
      const refused = yield* Effect.promise(() =>
        fetch(`${url}/chat/completions`, { method: "POST", body: "{}" }).then(() => false, () => true)
      )
      expect(refused).toBe(true)
    }))
})
