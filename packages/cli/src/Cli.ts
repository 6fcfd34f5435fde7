import { Command } from "@effect/cli"
import { debug } from "./Debug.js"
import { mcp } from "./McpAuth.js"
import { runCommand } from "./Run.js"
import { VERSION } from "./Version.js"

export const agent = Command.make("agent").pipe(
  Command.withDescription(
    "An AI coding agent runtime. Exit codes: 0 done, 1 runtime error, 2 usage or configuration error, " +
      "3 stopped by a permission rejection, 4 a limit was hit (steps, time, stall, budget), 130 interrupted."
  ),
  Command.withSubcommands([runCommand, debug, mcp])
)

export const run = Command.run(agent, { name: "agent", version: VERSION })
