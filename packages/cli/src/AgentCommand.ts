import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { lazy } from "./Lazy.js"
import { format } from "./Options.js"

const list = Command.make(
  "list",
  { all: Options.boolean("all").pipe(Options.withDescription("include hidden agents (compaction, title, summary)")), format },
  (input) => lazy(() => import("./Agents.js"), (module) => module.list(input))
).pipe(Command.withDescription("List agents: name, mode, description and where each was defined"))

const MODES = ["primary", "subagent", "all"] as const

const createOptions = {
  description: Options.text("description").pipe(
    Options.withAlias("d"),
    Options.withDescription("what the agent should do and when to use it"),
    Options.optional
  ),
  mode: Options.choice("mode", MODES).pipe(
    Options.withDescription("primary (chosen by the user), subagent (called by other agents) or all (default)"),
    Options.optional
  ),
  tools: Options.text("tools").pipe(
    Options.withDescription("comma-separated tools it may use (default: all; an unknown name lists the valid ones)"),
    Options.optional
  ),
  global: Options.boolean("global").pipe(Options.withDescription("write to the global config dir instead of the project's .agent/agent/")),
  model: Options.text("model").pipe(Options.withAlias("m"), Options.withDescription("provider/model that writes the agent"), Options.optional)
}

export type AgentCreateInput = Command.Command.ParseConfig<typeof createOptions>

const create = Command.make("create", createOptions, (input) => lazy(() => import("./AgentCreate.js"), (module) => module.create(input))).pipe(
  Command.withDescription("Generate an agent from a description with the model and save it as a markdown agent file")
)

export const agentCommand = Command.make("agent").pipe(
  Command.withDescription("Inspect the configured agents, or generate one"),
  Command.withSubcommands([list, create])
)
