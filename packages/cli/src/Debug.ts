// Module by module, so the bundle's chunk for this command holds only what it uses.
import { shownConfig } from "@agent/core/ConfigRedaction"
import { ConfigService } from "@agent/core/ConfigService"
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
    yield* Console.log(JSON.stringify({ config: shownConfig(info), sources: info.sources, warnings: info.warnings }, null, 2))
  }).pipe(Effect.provide(Layers.configured))
