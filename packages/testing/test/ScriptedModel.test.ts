import { ScriptedModel } from "@agent/testing"
import { APICallError } from "@ai-sdk/provider"
import { describe, expect, it } from "@effect/vitest"
import { generateText, stepCountIs, streamText } from "ai"
import { Effect } from "effect"
import { collect, collectUntilFailure, quiet, readTool, timed, toolOutputs } from "./support.js"


/** The error parts of a `fullStream`. */
const errorsOf = (parts: ReadonlyArray<{ type: string }>): Array<unknown> =>
  parts.flatMap((part) => part.type === "error" && "error" in part ? [part.error] : [])

describe("ScriptedModel", () => {
  it.live("streams a text turn word by word and finishes with the scripted reason and usage", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[
        { text: "Hello there, world" },
        { finish: "length", usage: { input: 1200, output: 40, reasoning: 10, cacheRead: 1000, cacheWrite: 100 } }
      ]])
      const result = streamText({ model, prompt: "hi" })
      const parts = yield* collect(result.fullStream)
      expect(parts.flatMap((part) => part.type === "text-delta" ? [part.text] : [])).toEqual([
        "Hello ",
        "there, ",
        "world"
      ])
      expect(yield* Effect.promise(() => result.finishReason)).toBe("length")
      const usage = yield* Effect.promise(() => result.totalUsage)
      expect(usage.inputTokens).toBe(1200)
      expect(usage.outputTokens).toBe(40)
      expect(usage.inputTokenDetails).toEqual({ noCacheTokens: 100, cacheReadTokens: 1000, cacheWriteTokens: 100 })
      expect(usage.outputTokenDetails).toEqual({ textTokens: 30, reasoningTokens: 10 })
    }))

  it.live("streams reasoning before text", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[{ reasoning: "think first" }, { text: "answer" }]])
      const result = streamText({ model, prompt: "hi" })
      const parts = yield* collect(result.fullStream)
      const kinds = parts.map((part) => part.type).filter((type) => type.startsWith("reasoning") || type.startsWith("text"))
      expect(kinds).toEqual([
        "reasoning-start",
        "reasoning-delta",
        "reasoning-delta",
        "reasoning-end",
        "text-start",
        "text-delta",
        "text-end"
      ])
      expect(yield* Effect.promise(() => result.reasoningText)).toBe("think first")
    }))

  it.live("a tool call runs through the SDK's tool loop and the next call sees the tool result", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        [{ text: "Let me read it." }, ScriptedModel.toolCall("read", { path: "a.txt" }, "call_read")],
        (options) => `The file says: ${toolOutputs(options.prompt).join()}`
      ])
      const result = streamText({
        model,
        prompt: "read a.txt",
        tools: { read: readTool },
        stopWhen: stepCountIs(3),
        temperature: 0.2
      })
      const parts = yield* collect(result.fullStream)
      const inputDeltas = parts.flatMap((part) => part.type === "tool-input-delta" ? [part.delta] : [])
      expect(inputDeltas.length).toBeGreaterThan(1)
      expect(inputDeltas.join("")).toBe(`{"path":"a.txt"}`)
      const call = parts.find((part) => part.type === "tool-call")
      expect(call).toMatchObject({ toolCallId: "call_read", toolName: "read", input: { path: "a.txt" } })
      expect(yield* Effect.promise(() => result.text)).toBe("The file says: contents of a.txt")

      const steps = yield* Effect.promise(() => result.steps)
      expect(steps.map((step) => step.finishReason)).toEqual(["tool-calls", "stop"])
      expect(model.calls).toHaveLength(2)
      expect(model.calls[0]!.tools?.map((entry) => entry.name)).toEqual(["read"])
      expect(model.calls[0]!.temperature).toBe(0.2)
      expect(model.calls[1]!.prompt.map((message) => message.role)).toEqual(["user", "assistant", "tool"])
    }))

  it.live("a tool call with invalid JSON input reaches the SDK as an invalid call", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        [ScriptedModel.toolCall("read", `{"path": "a.txt"`)],
        "sorry"
      ])
      const result = streamText({ model, prompt: "x", tools: { read: readTool }, stopWhen: stepCountIs(2) })
      const parts = yield* collect(result.fullStream)
      const error = parts.find((part) => part.type === "tool-error")
      expect(error).toMatchObject({ toolName: "read", input: `{"path": "a.txt"` })
      expect(parts.some((part) => part.type === "tool-result")).toBe(false)
    }))

  it.live("a turn function sees the prompt of its call", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([(options) => `You said: ${ScriptedModel.lastUserText(options)}`])
      const result = streamText({ model, prompt: "ping" })
      expect(yield* Effect.promise(() => result.text)).toBe("You said: ping")
    }))

  it.live("a rate limit makes the SDK retry after the retry-after delay", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([ScriptedModel.rateLimited({ retryAfterSeconds: 0.2 }), "recovered"])
      const [text, elapsed] = yield* timed(
        Effect.promise(() => streamText({ model, prompt: "x", maxRetries: 1 }).text)
      )
      expect(text).toBe("recovered")
      expect(model.calls).toHaveLength(2)
      // 200 ms from the header, not the SDK's 2 s default backoff.
      expect(elapsed).toBeGreaterThanOrEqual(190)
      expect(elapsed).toBeLessThan(1_900)
    }))

  it.live("call errors are APICallErrors with status, headers and retryability", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        ScriptedModel.rateLimited({ retryAfterSeconds: 3 }),
        ScriptedModel.contextOverflow({ limit: 128_000 }),
        ScriptedModel.overloaded()
      ])
      const failures: Array<unknown> = []
      for (let call = 0; call < 3; call++) {
        const parts = yield* collect(streamText({ model, prompt: "x", maxRetries: 0, ...quiet }).fullStream)
        failures.push(...errorsOf(parts))
      }
      expect(failures).toHaveLength(3)
      const [limited, overflow, overloaded] = failures
      if (!APICallError.isInstance(limited)) throw new Error("expected an APICallError")
      expect(limited.statusCode).toBe(429)
      expect(limited.responseHeaders?.["retry-after"]).toBe("3")
      expect(limited.isRetryable).toBe(true)
      if (!APICallError.isInstance(overflow)) throw new Error("expected an APICallError")
      expect(overflow.statusCode).toBe(400)
      expect(overflow.isRetryable).toBe(false)
      expect(overflow.message).toMatch(/^This model's maximum context length is 128000 tokens/)
      expect(overflow.data).toMatchObject({ error: { code: "context_length_exceeded" } })
      if (!APICallError.isInstance(overloaded)) throw new Error("expected an APICallError")
      expect(overloaded.statusCode).toBe(529)
      expect(overloaded.isRetryable).toBe(true)
    }))

  it.live("an error after text breaks the stream; an error part lets the turn finish", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        [{ text: "partial" }, { error: new Error("connection reset") }, { text: "never sent" }],
        [{ text: "before" }, ScriptedModel.serverError({ at: "part" }), { text: " after" }]
      ])
      // A broken stream surfaces as a failing `fullStream`, as a dropped connection does.
      const broken = streamText({ model, prompt: "x", maxRetries: 0, ...quiet })
      const { failure, items } = yield* collectUntilFailure(broken.fullStream)
      expect(items.flatMap((part) => part.type === "text-delta" ? [part.text] : [])).toEqual(["partial"])
      expect(failure).toBeInstanceOf(Error)
      expect((failure as Error).message).toBe("connection reset")
      expect(items.some((part) => part.type === "finish-step")).toBe(false)

      const reported = streamText({ model, prompt: "x", maxRetries: 0, ...quiet })
      const reportedParts = yield* collect(reported.fullStream)
      expect(errorsOf(reportedParts)).toHaveLength(1)
      expect(reportedParts.flatMap((part) => part.type === "text-delta" ? [part.text] : []).join("")).toBe(
        "before after"
      )
      expect(reportedParts.find((part) => part.type === "finish-step")).toMatchObject({ finishReason: "stop" })
    }))

  it.live("delays wait in real time", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[{ text: "a" }, { delay: 150 }, { text: "b" }]])
      const [text, elapsed] = yield* timed(Effect.promise(() => streamText({ model, prompt: "x" }).text))
      expect(text).toBe("ab")
      expect(elapsed).toBeGreaterThanOrEqual(140)
    }))

  it.live("an abort ends a pending delay at once", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[{ text: "started" }, { delay: "60 seconds" }, { text: "never" }]])
      const controller = new AbortController()
      setTimeout(() => controller.abort(), 50)
      const [parts, elapsed] = yield* timed(
        collect(streamText({ model, prompt: "x", abortSignal: controller.signal }).fullStream)
      )
      expect(elapsed).toBeLessThan(5_000)
      expect(parts.some((part) => part.type === "abort")).toBe(true)
      expect(parts.flatMap((part) => part.type === "text-delta" ? [part.text] : [])).toEqual(["started"])
    }))

  it.live("running out of turns is a clear error, and push adds turns", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make(["one"])
      expect(yield* Effect.promise(() => streamText({ model, prompt: "x" }).text)).toBe("one")
      const parts = yield* collect(streamText({ model, prompt: "x", maxRetries: 0, ...quiet }).fullStream)
      expect(errorsOf(parts).map((error) => (error as Error).message)).toEqual([
        "ScriptedModel: no turn left for call 2 (all 1 scripted turns were consumed)"
      ])
      model.push("two")
      expect(model.remaining).toBe(1)
      expect(yield* Effect.promise(() => streamText({ model, prompt: "x" }).text)).toBe("two")
    }))

  it.live("generateText plays a turn through doGenerate", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[{ text: "A short title" }, { finish: "stop", usage: { input: 7, output: 3 } }]])
      const result = yield* Effect.promise(() => generateText({ model, prompt: "title this" }))
      expect(result.text).toBe("A short title")
      expect(result.usage.inputTokens).toBe(7)
      expect(model.calls.map((call) => call.kind)).toEqual(["generate"])
    }))
})
