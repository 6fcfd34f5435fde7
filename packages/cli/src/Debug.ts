// Module by module, so the bundle's chunk for this command holds only what it uses.
import { shownConfig } from "@agent/core/config/ConfigRedaction"
import { ConfigService, type ConfigInfo } from "@agent/core/config/ConfigService"
import { Console, Effect, Option } from "effect"
import * as Layers from "./Layers.js"

export const config = (input: { readonly key: Option.Option<string> }) =>
  Effect.gen(function*() {
    const info = yield* (yield* ConfigService).info()
    if (Option.isSome(input.key)) {
      const origin = info.origin(input.key.value.split("."))
      return yield* Console.log(origin ? `${origin.file}${origin.line ? `:${origin.line}` : ""} (${origin.key})` : "not set")
    }
    // Keys, headers and anything a {env:}/{file:} reference put in are masked (sk-...f3a9).
    yield* Console.log(JSON.stringify({ config: shownConfig(info), sources: info.sources, warnings: info.warnings, ...plugins(info) }, null, 2))
  }).pipe(Effect.provide(Layers.configured))

/** OpenCode's plugins, each with the file that listed it: shown, never run. */
const plugins = (info: ConfigInfo) => {
  const list = info.config.plugin ?? []
  if (list.length === 0) return {}
  return {
    plugins: {
      note: "plugins do not run in this runtime",
      list: list.map((entry, index) => {
        const origin = info.origin(["plugin", String(index)])
        // Options stay in `config.plugin` only, where the config's values are shown.
        return {
          plugin: typeof entry === "string" ? entry : entry[0],
          from: origin ? `${origin.file}${origin.line ? `:${origin.line}` : ""}` : "unknown"
        }
      })
    }
  }
}
