import { Command } from "@effect/cli"
import { debug } from "./Debug.js"
import { runCommand } from "./Run.js"
import { serveCommand } from "./Serve.js"
import { VERSION } from "./Version.js"

export const agent = Command.make("agent").pipe(
  Command.withDescription(
    "An AI coding agent runtime. Exit codes: 0 done, 1 runtime error, 2 usage or configuration error, " +
      "3 stopped by a permission rejection, 4 a limit was hit (steps, time, stall, budget), 130 interrupted."
  ),
  Command.withSubcommands([runCommand, serveCommand, debug])
)

export const run = Command.run(agent, { name: "agent", version: VERSION })
