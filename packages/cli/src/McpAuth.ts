// Loaded only when `agent mcp auth|logout` runs (see McpCommand.ts and Lazy.ts).
import { Bus, ConfigService, Instance, Mcp, McpTools } from "@agent/core"
import { Console, Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import { ExitCode, UsageError } from "./ExitCode.js"

/** The MCP service alone: no providers, no model libraries. */
const servers = Mcp.layer.pipe(Layer.provideMerge(Layer.mergeAll(ConfigService.layer, Bus.layer)), Layer.provideMerge(Instance.layer))

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

export const auth = ({ name, noBrowser }: { readonly name: string; readonly noBrowser: boolean }) =>
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
    }).pipe(Effect.provide(servers))

export const logout = ({ name }: { readonly name: string }) =>
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
  }).pipe(Effect.provide(servers))
