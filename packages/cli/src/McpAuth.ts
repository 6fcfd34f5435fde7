import { Mcp, McpTools } from "@agent/core"
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect } from "effect"
import { spawn } from "node:child_process"
import { ExitCode, UsageError } from "./ExitCode.js"

const serverName = Args.text({ name: "name" }).pipe(Args.withDescription("the MCP server, as named in the config (mcp.<name>)"))

/** Fails with a usage error unless the config has a server of that name. */
const requireServer = (mcp: Mcp["Type"], name: string) =>
  Effect.gen(function*() {
    const configured = Object.keys(yield* mcp.status())
    if (configured.includes(name)) return
    return yield* new UsageError({
      message: `there is no MCP server named ${name} in the config (configured: ${configured.join(", ") || "none"})`
    })
  })

/**
 * Opens `url` in the user's browser: `$BROWSER` when set (a command that takes the URL),
 * else the platform's opener. Succeeds once the opener has started.
 */
const openBrowser = (url: string) =>
  Effect.async<void, Error>((resume) => {
    const [command, args] = process.env.BROWSER
      ? [process.env.BROWSER, [url]]
      : process.platform === "darwin"
      ? ["open", [url]]
      : process.platform === "win32"
      ? ["cmd", ["/c", "start", "", url]]
      : ["xdg-open", [url]]
    const child = spawn(command, args, { stdio: "ignore", detached: true, windowsHide: true })
    child.once("error", (error) => resume(Effect.fail(error)))
    child.once("spawn", () => {
      child.unref()
      resume(Effect.void)
    })
  })

export const mcpAuth = Command.make(
  "auth",
  {
    name: serverName,
    noBrowser: Options.boolean("no-browser").pipe(
      Options.withDescription("only print the authorization URL, do not open a browser")
    )
  },
  ({ name, noBrowser }) =>
    Effect.gen(function*() {
      const mcp = yield* Mcp
      yield* requireServer(mcp, name)
      const status = yield* mcp.authenticate(name, {
        onAuthorizationUrl: (url) =>
          Effect.gen(function*() {
            yield* Console.log(`To authorize the MCP server ${name}, open this URL in a browser:\n\n  ${url}\n`)
            if (!noBrowser) {
              yield* openBrowser(url).pipe(
                Effect.catchAll((error) => Console.error(`Could not open a browser (${error.message}); open the URL yourself.`))
              )
            }
            yield* Console.log("Waiting for the browser to come back...")
          })
      })
      yield* Console.log(`Authorized ${name}; the tokens are stored in ${mcp.credentialsFile}.`)
      if (status.status !== "connected") {
        yield* Console.error(`agent: ${name} did not connect afterwards: ${status.status}${status.error ? ` (${status.error})` : ""}`)
        return ExitCode.runtime
      }
      const prefix = `${McpTools.sanitize(name)}_`
      const tools = (yield* mcp.tools()).filter((tool) => tool.id.startsWith(prefix))
      yield* Console.log(`Connected to ${name}: ${tools.length} tool${tools.length === 1 ? "" : "s"}.`)
      return ExitCode.ok
    })
).pipe(Command.withDescription("Authorize with a remote MCP server (OAuth in the browser, answered on a loopback port)"))

export const mcpLogout = Command.make("logout", { name: serverName }, ({ name }) =>
  Effect.gen(function*() {
    const mcp = yield* Mcp
    yield* requireServer(mcp, name)
    const { removed } = yield* mcp.logout(name)
    yield* Console.log(
      removed
        ? `Removed the stored credentials of ${name} from ${mcp.credentialsFile}.`
        : `No credentials were stored for ${name}.`
    )
    return ExitCode.ok
  })).pipe(Command.withDescription("Forget the OAuth credentials stored for a remote MCP server"))

/** `agent mcp auth|logout`; the `mcp` group may gain more subcommands elsewhere. */
export const mcpAuthCommands = [mcpAuth, mcpLogout] as const

export const mcp = Command.make("mcp").pipe(
  Command.withDescription("MCP servers: authorize and log out"),
  Command.withSubcommands([mcpAuth, mcpLogout])
)
