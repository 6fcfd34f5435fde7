import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
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
const serverName = Args.text({ name: "name" }).pipe(Args.withDescription("the MCP server, as named in the config (mcp.<name>)"))

const auth = Command.make(
  "auth",
  {
    name: serverName,
    noBrowser: Options.boolean("no-browser").pipe(Options.withDescription("only print the authorization URL, do not open a browser"))
  },
  (input) => lazy(() => import("./McpAuth.js"), (module) => module.auth(input))
).pipe(Command.withDescription("Authorize with a remote MCP server (OAuth in the browser, answered on a loopback port)"))

const logout = Command.make("logout", { name: serverName }, (input) => lazy(() => import("./McpAuth.js"), (module) => module.logout(input))).pipe(
  Command.withDescription("Forget the OAuth credentials stored for a remote MCP server")
)

const subcommands = [list, auth, logout] as const

export const mcp = Command.make("mcp").pipe(
  Command.withDescription("MCP servers: list them, authorize, log out"),
  Command.withSubcommands(subcommands)
)
