import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { lazy } from "./Lazy.js"
import { format } from "./Options.js"

const checkConfig = {
  agent: Options.text("agent").pipe(Options.withDescription("agent whose sandbox settings apply (default: the default agent)"), Options.optional),
  format
}

export type SandboxCheckInput = Command.Command.ParseConfig<typeof checkConfig>

const check = Command.make("check", checkConfig, (input) => lazy(() => import("./SandboxCheck.js"), (module) => module.check(input))).pipe(
  Command.withDescription(
    "Say whether commands run in the OS sandbox on this machine, and if not why: bubblewrap, namespaces, /proc, network, " +
      "socat; the effective settings and what is writable and protected. Exits 1 when the sandbox cannot be used."
  )
)

export const sandbox = Command.make("sandbox").pipe(
  Command.withDescription("The OS sandbox of the agent's commands (see docs/sandbox.md)"),
  Command.withSubcommands([check])
)
