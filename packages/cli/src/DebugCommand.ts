import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { lazy } from "./Lazy.js"
import { explainConfig, explainHandler } from "./PermissionCommand.js"

const config = Command.make(
  "config",
  { key: Options.text("origin").pipe(Options.withDescription("print where a dotted key was set, e.g. permission.bash"), Options.optional) },
  (input) => lazy(() => import("./Debug.js"), (module) => module.config(input))
).pipe(Command.withDescription("Print the effective configuration and the files it came from"))

const agent = Command.make(
  "agent",
  { name: Args.text({ name: "name" }).pipe(Args.withDescription("the agent to show (default: list them all)"), Args.optional) },
  (input) => lazy(() => import("./Agents.js"), (module) => module.debugAgent(input))
).pipe(Command.withDescription("List agents, or show one agent as OpenCode resolves it (model, options, prompt, permission rules and where each came from)"))

/** Kept from before `agent permission explain` existed; the same command. */
const permission = Command.make("permission", explainConfig, explainHandler).pipe(
  Command.withDescription("Same as `agent permission explain`")
)

export const debug = Command.make("debug").pipe(
  Command.withDescription("Inspect configuration, agents and permission decisions"),
  Command.withSubcommands([config, agent, permission])
)
