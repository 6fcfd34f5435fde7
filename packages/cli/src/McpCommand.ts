import * as Command from "@effect/cli/Command"
import { lazy } from "./Lazy.js"
import { format } from "./Options.js"

const list = Command.make("list", { format }, (input) => lazy(() => import("./McpList.js"), (module) => module.list(input))).pipe(
  Command.withDescription("List the configured MCP servers: type, enabled, and status after trying to connect (AGENT_MCP_GRACE_MS, default 3 s)")
)

/**
 * `agent mcp <subcommand>`. A sibling (e.g. `auth`) is one more entry in this list; like
 * `list`, it should load `@agent/core` only inside its handler (see Lazy.ts) so that
 * `agent --help` stays fast.
 */
const subcommands = [list] as const

export const mcp = Command.make("mcp").pipe(
  Command.withDescription("Inspect the configured MCP servers"),
  Command.withSubcommands(subcommands)
)
