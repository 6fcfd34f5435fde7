import { Command } from "@effect/cli"
import { agentCreateCommand } from "./AgentCreate.js"
import { debug } from "./Debug.js"
import { mcp } from "./McpAuth.js"
import { runCommand } from "./Run.js"
import { serveCommand } from "./Serve.js"
import { VERSION } from "./Version.js"

const agents = Command.make("agent").pipe(Command.withDescription("Manage agents"), Command.withSubcommands([agentCreateCommand]))

// @effect/cli prefixes the root's name to argv and then splits it at the first word that names a
// subcommand, so no subcommand may be spelled like the root: the root is "Agent" to allow `agent agent`.
export const agent = Command.make("Agent").pipe(
  Command.withDescription(
    "An AI coding agent runtime. Exit codes: 0 done, 1 runtime error, 2 usage or configuration error, " +
      "3 stopped by a permission rejection, 4 a limit was hit (steps, time, stall, budget), 130 interrupted."
  ),
  Command.withSubcommands([runCommand, serveCommand, debug, agents, mcp])
)

export const run = Command.run(agent, { name: "agent", version: VERSION })
