import { CassetteLayer, MockOpenAIServer, ScriptedModel, TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { makeAppLayer } from "../../src/AppLayer.js"
import * as Database from "../../src/store/Database.js"
import { Instance } from "../../src/runtime/Instance.js"
import { ModelNotConfigured, ProviderRegistry } from "../../src/llm/ProviderRegistry.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import { echo } from "./tools.js"

const { text, toolCall } = ScriptedModel

/** The runtime exactly as the CLI builds it, with providers from a config file. */
const runtimeWith = (config: object) =>
  Effect.gen(function*() {
    const box = yield* TestInstance.sandbox({ files: { "project/agent.json": config } })
    return makeAppLayer({ instance: Layer.succeed(Instance, box.instance), database: Database.layerMemory, tools: [echo] })
  })

describe("through a real provider package and HTTP", () => {
  it.scopedLive("an OpenAI-compatible server drives a tool session end to end", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [text("Checking."), toolCall("echo", { text: "over the wire" }), ScriptedModel.finish("tool-calls", { input: 120, output: 30, cacheRead: 100 })],
        [text("It said: over the wire."), ScriptedModel.finish("stop", { input: 160, output: 12 })]
      ])
      const titles = yield* MockOpenAIServer.start(Array.from({ length: 5 }, () => "Wire test"))
      const layer = yield* runtimeWith({
        model: "mock/gpt-test",
        small_model: "titles/small",
        provider: {
          mock: {
            npm: "@ai-sdk/openai-compatible",
            options: { baseURL: server.url, apiKey: "sk-test" },
            models: { "gpt-test": { limit: { context: 100_000, output: 4_000 }, cost: { input: 2, output: 8, cache_read: 0.5 } } }
          },
          titles: { npm: "@ai-sdk/openai-compatible", options: { baseURL: titles.url }, models: { small: {} } }
        }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create()
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "echo over the wire" }] })
        expect(outcome.reason).toBe("completed")
        const [, first, last] = yield* store.messages(session.id)
        const tool = first!.parts.find((part) => part.type === "tool")
        expect(tool).toMatchObject({ tool: "echo", state: { status: "completed", output: "over the wire" } })
        expect(last!.parts.find((part) => part.type === "text")).toMatchObject({ text: "It said: over the wire." })
        // usage: input excludes cached tokens; cost per 1M tokens from config
        expect(first!.info.role === "assistant" && first!.info.tokens).toMatchObject({ input: 20, output: 30, cache: { read: 100 } })
        expect(first!.info.role === "assistant" && first!.info.cost).toBeCloseTo((20 * 2 + 30 * 8 + 100 * 0.5) / 1e6, 10)

        expect(server.requests).toHaveLength(2)
        const [request1, request2] = server.requests
        expect(request1!.model).toBe("gpt-test")
        // built-in tools (apply_patch rather than edit/write for a "gpt-" model), ours, and task;
        // no skill tool without skills
        expect(request1!.tools?.map((entry) => entry.function.name)).toEqual([
          "question", "bash", "read", "glob", "grep", "list", "webfetch", "todowrite", "todoread", "apply_patch", "echo", "task"
        ])
        expect(request1!.messages[0]).toMatchObject({ role: "system" })
        expect(JSON.stringify(request2!.messages)).toContain('"role":"tool"')
        expect(JSON.stringify(request2!.messages)).toContain("over the wire")
      }).pipe(Effect.provide(layer))
    }))

  it.scopedLive("a session recorded against a real provider replays identically without the network", () =>
    Effect.gen(function*() {
      const live = yield* MockOpenAIServer.start([[text("Let me echo."), toolCall("echo", { text: "recorded" })], "Echoed: recorded."])
      const box = yield* TestInstance.sandbox({
        files: {
          "project/agent.json": {
            model: "mock/gpt-test",
            small_model: "mock/gpt-test",
            provider: { mock: { npm: "@ai-sdk/openai-compatible", options: { baseURL: live.url }, models: { "gpt-test": {} } } }
          }
        }
      })
      const cassettes = box.path("cassettes")
      const conversation = (providers: Layer.Layer<ProviderRegistry, never, any>) =>
        Effect.gen(function*() {
          const store = yield* SessionStore
          // a titled session: no title call, so the cassette holds the conversation only
          const session = yield* store.create({ title: "Recorded" })
          const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "echo it" }] })
          const messages = yield* store.messages(session.id)
          return {
            reason: outcome.reason,
            parts: messages.map((message) => message.parts.map((part) =>
              part.type === "text" ? `text:${part.text}` : part.type === "tool" ? `tool:${part.tool}:${part.state.status}:${part.state.status === "completed" ? part.state.output : ""}` : part.type
            ))
          }
        }).pipe(
          Effect.provide(
            makeAppLayer({ instance: Layer.succeed(Instance, box.instance), database: Database.layerMemory, tools: [echo], providers })
          ),
          Effect.scoped
        )
      const recorded = yield* conversation(CassetteLayer.layerRecord(cassettes).pipe(Layer.provide(ProviderRegistry.layer)))
      expect(live.requests).toHaveLength(2)
      const replayed = yield* conversation(CassetteLayer.layerReplay(cassettes, { defaultModel: "mock/gpt-test" }))
      expect(live.requests).toHaveLength(2) // nothing went over the network the second time
      expect(replayed).toEqual(recorded)
      expect(recorded.parts[2]).toContain("text:Echoed: recorded.")
    }))

  it.scopedLive("a missing model says how to configure one, naming local servers", () =>
    Effect.gen(function*() {
      const layer = yield* runtimeWith({})
      const error = yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create()
        return yield* Effect.flip((yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "hi" }] }))
      }).pipe(Effect.provide(layer))
      expect(error).toBeInstanceOf(ModelNotConfigured)
      expect(error.message).toMatch(/ANTHROPIC_API_KEY/)
      expect(error.message).toMatch(/@ai-sdk\/openai-compatible/)
      expect(error.message).toMatch(/ollama/)
    }))

  it.scopedLive("a provider without a key names the variable to set; nothing is stored", () =>
    Effect.gen(function*() {
      const layer = yield* runtimeWith({ model: "anthropic/claude-sonnet-4-5" })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create()
        const error = yield* Effect.flip((yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "hi" }] }))
        expect(error.message).toMatch(/no API key for provider "anthropic": set ANTHROPIC_API_KEY/)
        expect(yield* store.messages(session.id)).toEqual([])
      }).pipe(Effect.provide(layer))
    }))
})
