import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { lazy } from "./Lazy.js"
import { format } from "./Options.js"

export const explainConfig = {
  permission: Args.text({ name: "permission" }).pipe(Args.withDescription("e.g. bash, edit, read, webfetch (a tool name works too)")),
  pattern: Args.text({ name: "pattern" }).pipe(Args.withDescription('e.g. "git push origin main" or a path')),
  agent: Options.text("agent").pipe(Options.withDescription("agent whose rules apply (default: the default agent)"), Options.optional),
  sandboxed: Options.boolean("sandboxed").pipe(
    Options.withDescription("decide as for a call that runs in the OS sandbox (rules with the pattern \"sandboxed\" apply)")
  ),
  format
}

export type ExplainInput = Command.Command.ParseConfig<typeof explainConfig>

export const explainHandler = (input: ExplainInput) => lazy(() => import("./Explain.js"), (module) => module.explain(input))

const explain = Command.make("explain", explainConfig, explainHandler).pipe(
  Command.withDescription("Explain a permission decision: allow, ask or deny, the rule that made it and the file it came from")
)

export const permission = Command.make("permission").pipe(
  Command.withDescription("Explain how permission rules decide"),
  Command.withSubcommands([explain])
)
