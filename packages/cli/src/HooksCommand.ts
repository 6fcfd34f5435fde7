import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { lazy } from "./Lazy.js"
import { format } from "./Options.js"

const list = Command.make("list", { format }, (input) => lazy(() => import("./HooksList.js"), (module) => module.list(input))).pipe(
  Command.withDescription("List every hook (our config files and Claude Code's settings files): event, matcher, command, file, and whether it runs")
)

export type HooksListInput = Command.Command.ParseConfig<{ format: typeof format }>

/** `agent hooks ...` (docs/hooks.md). */
export const hooks = Command.make("hooks").pipe(
  Command.withDescription("Hooks in Claude Code's shape: commands run at points of the agent's life (see docs/hooks.md)"),
  Command.withSubcommands([list])
)

const trustConfig = {
  directory: Args.directory({ name: "directory" }).pipe(Args.withDescription("the project (default: the current project)"), Args.optional),
  revoke: Options.boolean("revoke").pipe(Options.withDescription("stop trusting the project: its hooks no longer run"))
}
export type TrustInput = Command.Command.ParseConfig<typeof trustConfig>

/** `agent trust`: a project's own hooks (its .claude/ and config files) run once it is trusted. */
export const trust = Command.make("trust", trustConfig, (input) => lazy(() => import("./HooksList.js"), (module) => module.trust(input))).pipe(
  Command.withDescription("Trust the project so the hooks it brings (.claude/settings*.json, its config files) run; --revoke undoes it")
)
