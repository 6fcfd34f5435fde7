// Runs one handler: a command through the shell with the event's JSON on stdin, or an HTTP POST of
// it; each within its timeout (Claude Code's default, 60 s). A hook that times out fails open.
import type { CommandHook, HookHandler, HttpHook } from "@agent/domain"
import { Effect } from "effect"
import type { CommandLauncher } from "../process/CommandLauncher.js"
import { runDirect } from "../process/DirectCommand.js"
import type { RawResult } from "./HookOutcome.js"

export const DEFAULT_TIMEOUT_SECONDS = 60

/** Output past this is cut: a hook's answer is a line of JSON or a few lines of text. */
const MAX_OUTPUT = 1024 * 1024

export interface RunContext {
  readonly cwd: string
  readonly env: Readonly<Record<string, string | undefined>>
}

const timeoutOf = (handler: HookHandler) => handler.timeout ?? DEFAULT_TIMEOUT_SECONDS

/**
 * `sh -c command` in its own process group, so a timeout ends what it started too: through the
 * command launcher when the Hooks layer has one (a fork of a small process, not of the runtime),
 * else from this process. Both behave alike.
 */
export const runCommand = (handler: CommandHook, input: string, context: RunContext, launcher?: CommandLauncher): Effect.Effect<RawResult> => {
  const seconds = timeoutOf(handler)
  const options = { timeoutMs: seconds * 1000, maxOutput: MAX_OUTPUT }
  return (launcher ? launcher.run(handler.command, input, options) : runDirect(handler.command, input, context, options)).pipe(
    Effect.map((result): RawResult => {
      switch (result._tag) {
        case "Exited":
          return {
            _tag: "Exited",
            code: result.code ?? (result.signal ? 128 : 1),
            stdout: result.stdout,
            stderr: result.stderr || (result.signal ? `ended by ${result.signal}` : "")
          }
        case "TimedOut":
          return { _tag: "TimedOut", seconds }
        case "Failed":
          return { _tag: "Failed", error: `could not run the hook: ${result.error}` }
      }
    })
  )
}

/** `$VAR` and `${VAR}` in a header value, for the variables the hook lists in `allowedEnvVars` only. */
export const interpolateHeader = (value: string, allowed: ReadonlyArray<string>, env: Readonly<Record<string, string | undefined>>): string =>
  value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (whole, braced: string | undefined, bare: string | undefined) => {
    const name = braced ?? bare!
    return allowed.includes(name) ? env[name] ?? "" : whole
  })

/** POSTs the event's JSON; a 2xx body is the answer, anything else a non-blocking error. */
export const runHttp = (handler: HttpHook, input: string, context: RunContext): Effect.Effect<RawResult> => {
  const seconds = timeoutOf(handler)
  const headers: Record<string, string> = { "content-type": "application/json" }
  for (const [name, value] of Object.entries(handler.headers ?? {})) {
    headers[name] = interpolateHeader(value, handler.allowedEnvVars ?? [], context.env)
  }
  return Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(handler.url, { method: "POST", headers, body: input, signal: AbortSignal.any([signal, AbortSignal.timeout(seconds * 1000)]) })
      const body = await response.text()
      return { _tag: "Http", status: response.status, body: body.slice(0, MAX_OUTPUT) } satisfies RawResult
    },
    catch: (error) => error
  }).pipe(
    Effect.catchAll((error): Effect.Effect<RawResult> =>
      Effect.succeed(
        error instanceof Error && (error.name === "TimeoutError" || (error.cause as Error | undefined)?.name === "TimeoutError")
          ? { _tag: "TimedOut", seconds }
          : { _tag: "Failed", error: `could not reach ${handler.url}: ${error instanceof Error ? (error.cause as Error | undefined)?.message ?? error.message : String(error)}` }
      ))
  )
}

export const runHandler = (handler: HookHandler, input: string, context: RunContext, launcher?: CommandLauncher): Effect.Effect<RawResult> =>
  handler.type === "command" ? runCommand(handler, input, context, launcher) : runHttp(handler, input, context)
