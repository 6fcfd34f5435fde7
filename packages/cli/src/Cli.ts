import { Command } from "@effect/cli"
import { debug } from "./Debug.js"

export const agent = Command.make("agent").pipe(
  Command.withDescription("An AI coding agent runtime"),
  Command.withSubcommands([debug])
)

export const run = Command.run(agent, { name: "agent", version: "0.1.0" })
