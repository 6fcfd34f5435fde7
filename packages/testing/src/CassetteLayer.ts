import { ProviderRegistry } from "@agent/core"
import type { ModelRef } from "@agent/domain"
import { Effect, Layer } from "effect"
import * as path from "node:path"
import * as Cassette from "./Cassette.js"
import * as FakeLLM from "./FakeLLM.js"

/** One cassette file per model, so concurrent calls to two models (a title, say) never interleave. */
export const fileFor = (directory: string, ref: ModelRef) =>
  path.join(directory, `${ref.providerID}__${ref.modelID.replace(/[^\w.-]/g, "_")}.jsonl`)

/**
 * Wraps the real provider registry: every model it resolves is recorded to
 * `<directory>/<provider>__<model>.jsonl` while it answers for real.
 */
export const layerRecord = (directory: string): Layer.Layer<ProviderRegistry, never, ProviderRegistry> =>
  Layer.effect(
    ProviderRegistry,
    Effect.gen(function*() {
      const live = yield* ProviderRegistry
      const recorders = new Map<string, Cassette.CassetteRecorder>()
      return {
        ...live,
        resolve: (ref) =>
          Effect.map(live.resolve(ref), (resolved) => {
            const file = fileFor(directory, ref)
            let recorder = recorders.get(file)
            if (!recorder) recorders.set(file, (recorder = Cassette.record(resolved.language, file)))
            return { ...resolved, language: recorder }
          })
      }
    })
  )

/**
 * Replays cassettes recorded by `layerRecord`, without a network: each model answers from
 * its own file, call by call. `defaultModel` and `smallModel` name the models to use.
 */
export const layerReplay = (
  directory: string,
  options: { readonly defaultModel: string; readonly smallModel?: string }
): Layer.Layer<ProviderRegistry> => {
  const refs = [options.defaultModel, ...(options.smallModel ? [options.smallModel] : [])]
  const models = Object.fromEntries(
    refs.map((key) => {
      const [providerID, ...rest] = key.split("/")
      return [key, Cassette.replay(fileFor(directory, { providerID: providerID!, modelID: rest.join("/") }))]
    })
  )
  return FakeLLM.layerModels(models, options)
}
