import { ProviderRegistry } from "@agent/core"
import { FakeLLM, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { streamText } from "ai"
import { Effect } from "effect"

describe("FakeLLM", () => {
  it.live("resolves any model reference to the scripted model, which drives streamText", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make(["from the fake"])
      const registry = yield* Effect.provide(ProviderRegistry, FakeLLM.layer(model))
      const resolved = yield* registry.resolve({ providerID: "anthropic", modelID: "claude-sonnet-4-5" })
      expect(resolved.language).toBe(model)
      expect(resolved.info).toEqual({
        providerID: "anthropic",
        modelID: "claude-sonnet-4-5",
        name: "anthropic/claude-sonnet-4-5",
        limit: { context: 200_000, output: 32_000 }
      })
      expect(yield* registry.defaultModel()).toEqual({ providerID: "test", modelID: "scripted" })
      expect(yield* registry.smallModel()).toBeUndefined()
      const text = yield* Effect.promise(() => streamText({ model: resolved.language, prompt: "hi" }).text)
      expect(text).toBe("from the fake")
    }))

  it.effect("takes model info, a default and a small model from its options", () =>
    Effect.gen(function*() {
      const layer = FakeLLM.layer(
        ScriptedModel.make([]),
        { limit: { context: 8_000, output: 1_000 }, cost: { input: 3, output: 15 } },
        { defaultModel: "openai/gpt-5", smallModel: "openai/gpt-5-mini" }
      )
      const registry = yield* Effect.provide(ProviderRegistry, layer)
      const { info } = yield* registry.resolve({ providerID: "openai", modelID: "gpt-5" })
      expect(info.limit).toEqual({ context: 8_000, output: 1_000 })
      expect(info.cost).toEqual({ input: 3, output: 15 })
      expect(yield* registry.defaultModel()).toEqual({ providerID: "openai", modelID: "gpt-5" })
      expect(yield* registry.smallModel()).toEqual({ providerID: "openai", modelID: "gpt-5-mini" })
    }))

  it.effect("layerModels serves several models by reference and rejects unknown ones", () =>
    Effect.gen(function*() {
      const main = ScriptedModel.make([], { modelID: "main" })
      const small = ScriptedModel.make([], { modelID: "small" })
      const layer = FakeLLM.layerModels(
        { "test/main": main, "test/small": small },
        { smallModel: "test/small", info: { "test/small": { limit: { context: 16_000, output: 2_000 } } } }
      )
      const registry = yield* Effect.provide(ProviderRegistry, layer)
      expect((yield* registry.resolve({ providerID: "test", modelID: "main" })).language).toBe(main)
      const resolvedSmall = yield* registry.resolve({ providerID: "test", modelID: "small" })
      expect(resolvedSmall.language).toBe(small)
      expect(resolvedSmall.info.limit).toEqual({ context: 16_000, output: 2_000 })
      expect(yield* registry.defaultModel()).toEqual({ providerID: "test", modelID: "main" })
      expect(yield* registry.smallModel()).toEqual({ providerID: "test", modelID: "small" })

      const error = yield* Effect.flip(registry.resolve({ providerID: "openai", modelID: "gpt-5" }))
      expect(error._tag).toBe("ModelNotConfigured")
      expect(error.message).toContain(`Model "openai/gpt-5" is not usable`)
      expect(error.message).toContain("test/main, test/small")
    }))

  it("layerModels refuses keys that are not provider/model references", () => {
    expect(() => FakeLLM.layerModels({ scripted: ScriptedModel.make([]) })).toThrow(
      `"scripted" is not a "provider/model" reference`
    )
  })
})
