import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { lazy } from "./Lazy.js"

export const acpConfig = {
  dir: Options.text("dir").pipe(
    Options.withDescription("directory for session/list without a cwd (default: the current one); sessions run in the editor's cwd"),
    Options.optional
  ),
  agent: Options.text("agent").pipe(Options.withDescription("the mode (primary agent) new sessions start in (default: the default agent)"), Options.optional),
  model: Options.text("model").pipe(Options.withAlias("m"), Options.withDescription("provider/model new sessions use"), Options.optional)
}

export type AcpInput = Command.Command.ParseConfig<typeof acpConfig>

// A long-running process like `agent serve` (see startup/YoungGeneration.ts and startup/OldGeneration.ts).
export const acpCommand = Command.make(
  "acp",
  acpConfig,
  (input) => lazy(() => import("./Acp.js"), (module) => module.acp(input), { capYoungGeneration: false, heapGrowingPercent: 50 })
).pipe(
  Command.withDescription(
    "Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, Neovim, Emacs); logs go to stderr"
  )
)
