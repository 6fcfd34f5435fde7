import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ConfigService, loadConfig } from "../../src/config/ConfigService.js"
import { ProviderRegistry, providerCatalog } from "../../src/llm/ProviderRegistry.js"
import { Instance } from "../../src/runtime/Instance.js"
import { makeSandbox } from "./helpers.js"

const keys = { ANTHROPIC_API_KEY: "sk-ant-test", OPENAI_API_KEY: "sk-openai-test" }

/** The registry of a project whose `agent.json` is `config`, with both built-in keys set. */
const registryWith = (config: object) =>
  Effect.gen(function*() {
    const box = makeSandbox()
    box.write("project/agent.json", config)
    const instance = box.instance(keys)
    const info = yield* loadConfig(instance)
    const providers = yield* Effect.provide(
      ProviderRegistry,
      ProviderRegistry.layer.pipe(Layer.provide(ConfigService.layerFromInfo(info)), Layer.provide(Layer.succeed(Instance, instance)))
    )
    return { providers, catalog: providerCatalog(info.config, instance.env) }
  })

describe("disabled_providers and enabled_providers", () => {
  it.effect("a disabled provider is not used even with its key set: the default model moves on, naming it fails clearly", () =>
    Effect.gen(function*() {
      const { catalog, providers } = yield* registryWith({ disabled_providers: ["anthropic"] })
      expect(yield* providers.defaultModel()).toEqual({ providerID: "openai", modelID: "gpt-5" })
      const error = yield* Effect.flip(providers.resolve({ providerID: "anthropic", modelID: "claude-sonnet-4-5" }))
      expect(error.message).toContain('provider "anthropic" is turned off by disabled_providers')
      expect(catalog.find((entry) => entry.id === "anthropic")?.problem).toContain("disabled_providers")
      expect(catalog.find((entry) => entry.id === "openai")?.problem).toBeUndefined()
    }))

  it.effect("enabled_providers keeps only the providers it lists; disabled_providers wins over it", () =>
    Effect.gen(function*() {
      const only = yield* registryWith({
        enabled_providers: ["local", "openai"],
        disabled_providers: ["openai"],
        provider: { local: { npm: "@ai-sdk/openai-compatible", options: { baseURL: "http://127.0.0.1:9/v1" }, models: { m: {} } } }
      })
      const local = yield* only.providers.resolve({ providerID: "local", modelID: "m" })
      expect(local.info.modelID).toBe("m")
      const anthropic = yield* Effect.flip(only.providers.resolve({ providerID: "anthropic", modelID: "claude-sonnet-4-5" }))
      expect(anthropic.message).toContain('provider "anthropic" is not in enabled_providers (local, openai)')
      const openai = yield* Effect.flip(only.providers.resolve({ providerID: "openai", modelID: "gpt-5" }))
      expect(openai.message).toContain("disabled_providers")
      const none = yield* Effect.flip(only.providers.defaultModel())
      expect(none.message).toContain("turned off by disabled_providers/enabled_providers (anthropic, openai)")
    }))
})
