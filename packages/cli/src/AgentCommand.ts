import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { lazy } from "./Lazy.js"
import { format } from "./Options.js"

const list = Command.make(
  "list",
  { all: Options.boolean("all").pipe(Options.withDescription("include hidden agents (compaction, title, summary)")), format },
  (input) => lazy(() => import("./Agents.js"), (module) => module.list(input))
).pipe(Command.withDescription("List agents: name, mode, description and where each was defined"))

export const agentCommand = Command.make("agent").pipe(
  Command.withDescription("Inspect the configured agents"),
  Command.withSubcommands([list])
)
