/**
 * `ProviderRegistry` layers over scripted (or recorded) language models: the one node a test
 * swaps so everything above the provider boundary — LLMService, retries, the session loop —
 * runs for real.
 */
import { type ModelInfo, ModelNotConfigured, ProviderRegistry } from "@agent/core"
import { type ModelRef, parseModelRef } from "@agent/domain"
import type { LanguageModelV3 } from "@ai-sdk/provider"
import { Effect, Layer } from "effect"

export const DEFAULT_MODEL: ModelRef = { providerID: "test", modelID: "scripted" }

export interface FakeLLMOptions {
  /** What `defaultModel()` answers (default `test/scripted`). */
  readonly defaultModel?: ModelRef | string
  /** What `smallModel()` answers (default: no small model). */
  readonly smallModel?: ModelRef | string
}

/**
 * Resolves every model reference to `model`. The resolved `info` names the model that was asked
 * for (so a test can see which reference reached the registry) unless `info` overrides it;
 * limits default to 200 000 context / 32 000 output tokens, and there is no cost unless given.
 */
export const layer = (
  model: LanguageModelV3,
  info: Partial<ModelInfo> = {},
  options: FakeLLMOptions = {}
): Layer.Layer<ProviderRegistry> => {
  const defaultRef = toRef(options.defaultModel) ?? DEFAULT_MODEL
  const smallRef = toRef(options.smallModel)
  return Layer.succeed(ProviderRegistry, {
    // Called every step (or every tool call): untraced, a span would cost more than the call.
    resolve: Effect.fnUntraced(function*(ref: ModelRef) {
      return { info: modelInfo(ref, info), language: model }
    }),
    defaultModel: Effect.fn("FakeLLM.defaultModel")(function*() {
      return defaultRef
    }),
    smallModel: Effect.fn("FakeLLM.smallModel")(function*() {
      return smallRef
    })
  })
}

export interface FakeLLMModelsOptions extends FakeLLMOptions {
  /** Model info per `provider/model` key (merged over the defaults). */
  readonly info?: Readonly<Record<string, Partial<ModelInfo>>>
}

/**
 * Several models by `provider/model`, e.g. a main model and a small one for titles. Unknown
 * references fail with `ModelNotConfigured`; `defaultModel()` is the first key unless given.
 */
export const layerModels = (
  models: Readonly<Record<string, LanguageModelV3>>,
  options: FakeLLMModelsOptions = {}
): Layer.Layer<ProviderRegistry> => {
  const keys = Object.keys(models)
  const refs = keys.map((key) => {
    const ref = parseModelRef(key)
    if (ref === undefined) throw new Error(`FakeLLM.layerModels: "${key}" is not a "provider/model" reference`)
    return ref
  })
  const defaultRef = toRef(options.defaultModel) ?? refs[0] ?? DEFAULT_MODEL
  const smallRef = toRef(options.smallModel)
  return Layer.succeed(ProviderRegistry, {
    // Called every step (or every tool call): untraced, a span would cost more than the call.
    resolve: Effect.fnUntraced(function*(ref: ModelRef) {
      const key = `${ref.providerID}/${ref.modelID}`
      const language = models[key]
      if (language === undefined) {
        return yield* new ModelNotConfigured({
          model: key,
          detail: `the fake registry knows only ${keys.join(", ") || "no models"}`
        })
      }
      return { info: modelInfo(ref, options.info?.[key] ?? {}), language }
    }),
    defaultModel: Effect.fn("FakeLLM.defaultModel")(function*() {
      return defaultRef
    }),
    smallModel: Effect.fn("FakeLLM.smallModel")(function*() {
      return smallRef
    })
  })
}

/** The info the fake registry reports for `ref`, with `overrides` applied. */
export const modelInfo = (ref: ModelRef, overrides: Partial<ModelInfo> = {}): ModelInfo => {
  const providerID = overrides.providerID ?? ref.providerID
  const modelID = overrides.modelID ?? ref.modelID
  return {
    providerID,
    modelID,
    name: overrides.name ?? `${providerID}/${modelID}`,
    limit: overrides.limit ?? { context: 200_000, output: 32_000 },
    ...(overrides.cost !== undefined ? { cost: overrides.cost } : {})
  }
}

const toRef = (ref: ModelRef | string | undefined): ModelRef | undefined => {
  if (typeof ref !== "string") return ref
  const parsed = parseModelRef(ref)
  if (parsed === undefined) throw new Error(`FakeLLM: "${ref}" is not a "provider/model" reference`)
  return parsed
}
