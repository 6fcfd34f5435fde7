/**
 * `ProviderRegistry` nodes for `agent run --record` and `--replay`: the one node replaced, so
 * everything above the provider boundary (LLMService, the loop, tools, permissions, snapshots)
 * runs for real. Model limits and prices still come from config, so compaction decides alike.
 */
import { type ModelRef, parseModelRef } from "@agent/domain"
import type { LanguageModelV3 } from "@ai-sdk/provider"
import { Effect, Layer } from "effect"
import { ConfigService } from "../../config/ConfigService.js"
import { Instance } from "../../runtime/Instance.js"
import { modelInfoOf, ProviderRegistry } from "../ProviderRegistry.js"
import { openRecording, type Player } from "./Cassette.js"

/** Every model the live registry resolves answers for real and is recorded into `file`. */
export const layerRecord = (file: string): Layer.Layer<ProviderRegistry, never, ProviderRegistry | Instance> =>
  Layer.effect(
    ProviderRegistry,
    Effect.gen(function*() {
      const live = yield* ProviderRegistry
      const instance = yield* Instance
      // Without a usable default model the run fails on its own, with the usual message.
      const defaultRef = yield* live.defaultModel().pipe(Effect.option)
      const model = defaultRef._tag === "Some" ? defaultRef.value : undefined
      const recording = openRecording(file, {
        provider: model?.providerID ?? "unknown",
        modelId: model?.modelID ?? "unknown",
        ...(model ? { model: `${model.providerID}/${model.modelID}` } : {}),
        directory: instance.directory
      })
      const recorders = new Map<string, LanguageModelV3>()
      return {
        ...live,
        resolve: (ref) =>
          Effect.map(live.resolve(ref), (resolved) => {
            const key = `${ref.providerID}/${ref.modelID}`
            let recorder = recorders.get(key)
            if (!recorder) recorders.set(key, (recorder = recording.wrap(resolved.language, key)))
            return { ...resolved, language: recorder }
          })
      }
    })
  )

/**
 * A registry whose every model is `language(ref)`: limits and prices from config, the default
 * model `defaultModel` unless config names one (with `preferGiven`, the given one wins).
 */
const layerAnswering = (
  language: (ref: ModelRef) => LanguageModelV3,
  defaultModel: ModelRef,
  options: { readonly preferGiven: boolean }
): Layer.Layer<ProviderRegistry, never, ConfigService> =>
  Layer.effect(
    ProviderRegistry,
    Effect.gen(function*() {
      const config = yield* (yield* ConfigService).get()
      const configured = config.model ? parseModelRef(config.model) : undefined
      const chosen = options.preferGiven ? defaultModel : configured ?? defaultModel
      const small = config.small_model ? parseModelRef(config.small_model) : undefined
      const models = new Map<string, LanguageModelV3>()
      return {
        // Called every step (or every tool call): untraced, a span would cost more than the call.
        resolve: Effect.fnUntraced(function*(ref: ModelRef) {
          const key = `${ref.providerID}/${ref.modelID}`
          let model = models.get(key)
          if (!model) models.set(key, (model = language(ref)))
          return { info: modelInfoOf(config, ref), language: model }
        }),
        defaultModel: () => Effect.succeed(chosen),
        smallModel: () => Effect.succeed(small)
      }
    })
  )

/** The registry of a replay: every model answers from `player`; the recorded default model is the default. */
export const layerReplay = (player: Player): Layer.Layer<ProviderRegistry, never, ConfigService> => {
  const recorded = player.header.model ? parseModelRef(player.header.model) : undefined
  return layerAnswering(
    (ref) => player.model(ref.providerID, ref.modelID),
    recorded ?? { providerID: player.header.provider, modelID: player.header.modelId },
    { preferGiven: recorded !== undefined }
  )
}

/** The registry of the built-in demo: one scripted model, whatever is configured. */
export const layerScripted = (model: LanguageModelV3, ref: ModelRef): Layer.Layer<ProviderRegistry, never, ConfigService> =>
  layerAnswering(() => model, ref, { preferGiven: true })
