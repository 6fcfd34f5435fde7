// Module by module, so the bundle's chunk for this command holds only what it uses.
import { ConfigService } from "@agent/core/config/ConfigService"
import { Instance } from "@agent/core/runtime/Instance"
import { providerCatalog } from "@agent/core/llm/ProviderRegistry"
import { Console, Effect } from "effect"
import { table } from "./Format.js"
import * as Layers from "./Layers.js"

const price = (value: number | undefined) => (value === undefined ? "-" : `$${value}`)
const thousands = (tokens: number) => (tokens >= 1000 ? `${Math.round(tokens / 1000)}k` : String(tokens))

export const models = (input: { readonly format: "default" | "json" }) =>
  Effect.gen(function*() {
    const config = yield* (yield* ConfigService).get()
    const instance = yield* Instance
    const providers = providerCatalog(config, instance.env)
    const defaults = { model: config.model, small_model: config.small_model }
    if (input.format === "json") return yield* Console.log(JSON.stringify({ ...defaults, providers }, null, 2))
    const rows = providers.flatMap((provider) =>
      provider.models.map((model) => {
        const ref = `${provider.id}/${model.modelID}`
        const marks = [ref === config.model ? "default" : "", ref === config.small_model ? "small" : ""].filter(Boolean).join(", ")
        return [
          ref,
          provider.problem ? "no" : "yes",
          `${thousands(model.limit.context)}/${thousands(model.limit.output)}`,
          model.cost ? `${price(model.cost.input)}/${price(model.cost.output)}` : "-",
          marks
        ]
      })
    )
    yield* Console.log(table([["MODEL", "USABLE", "CONTEXT/OUTPUT", "USD PER 1M IN/OUT", ""], ...rows]))
    yield* Console.log("")
    for (const provider of providers) {
      const origin = [provider.builtIn ? "built-in" : "", provider.configured ? "configured" : ""].filter(Boolean).join(", ")
      const access = provider.problem ?? (provider.credentials ? `key from ${provider.credentials}` : "no key needed")
      yield* Console.log(`${provider.id} (${provider.name}; ${origin}; ${provider.npm}): ${access}`)
    }
    if (config.model === undefined) yield* Console.log("\nno default model in config: runs use the first built-in provider that has a key")
  }).pipe(Effect.provide(Layers.configured))
