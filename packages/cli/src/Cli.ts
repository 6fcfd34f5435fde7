import * as Command from "@effect/cli/Command"
import type * as Effect from "effect/Effect"
import { acpCommand } from "./AcpCommand.js"
import { agentCommand } from "./AgentCommand.js"
import { completion, type Shell } from "./CompletionCommand.js"
import { debug } from "./DebugCommand.js"
import { hooks, trust } from "./HooksCommand.js"
import { mcp } from "./McpCommand.js"
import { models } from "./ModelsCommand.js"
import { permission } from "./PermissionCommand.js"
import { runCommand } from "./RunCommand.js"
import { sandbox } from "./SandboxCommand.js"
import { serveCommand } from "./ServeCommand.js"
import { session } from "./SessionCommand.js"
import { VERSION } from "./Version.js"

// Command modules define arguments only; each handler loads the runtime when it runs (see Lazy.ts).
export const agent = Command.make("agent").pipe(
  Command.withDescription(
    "An AI coding agent runtime. Exit codes: 0 done, 1 runtime error, 2 usage or configuration error, " +
      "3 stopped by a permission rejection, 4 a limit was hit (steps, time, stall, budget), 130 interrupted."
  ),
  Command.withSubcommands([runCommand, serveCommand, acpCommand, session, agentCommand, permission, hooks, trust, models, mcp, sandbox, debug, completion])
)

export const run = Command.run(agent, { name: "agent", version: VERSION })

const completionScripts = {
  bash: Command.getBashCompletions,
  zsh: Command.getZshCompletions,
  fish: Command.getFishCompletions
} as const

/** The completion script of the whole command tree for one shell. */
export const completionScript = (shell: Shell): Effect.Effect<Array<string>> => completionScripts[shell](agent, "agent")
