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

// Long-running like `agent serve`, so its old generation grows as the server's does; but one editor's
// sessions, not fifty at once, so its young generation stays capped as `agent run`'s: grown as the
// server's, it was 24 MiB more RSS after 200 steps and several ms more CPU per step in the first ones
// (docs/performance.md, ACP; startup/YoungGeneration.ts, startup/OldGeneration.ts).
export const acpCommand = Command.make(
  "acp",
  acpConfig,
  (input) => lazy(() => import("./Acp.js"), (module) => module.acp(input), { heapGrowingPercent: 50 })
).pipe(
  Command.withDescription(
    "Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, Neovim, Emacs); logs go to stderr"
  )
)
