import * as Command from "@effect/cli/Command"
import { lazy } from "./Lazy.js"
import { format } from "./Options.js"

export const models = Command.make("models", { format }, (input) => lazy(() => import("./Models.js"), (module) => module.models(input))).pipe(
  Command.withDescription("List the providers and models from config and the built-in providers, and which can be used")
)
