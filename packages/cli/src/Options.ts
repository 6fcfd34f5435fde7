import * as Options from "@effect/cli/Options"

/** `--format default|json`, shared by every command that can print JSON. */
export const format = Options.choice("format", ["default", "json"]).pipe(
  Options.withDescription("default: readable text; json: machine-readable JSON"),
  Options.withDefault("default" as const)
)
