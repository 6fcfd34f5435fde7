// Runs one handler: a command through the shell with the event's JSON on stdin, or an HTTP POST of
// it; each within its timeout (Claude Code's default, 60 s). A hook that times out fails open.
import type { CommandHook, HookHandler, HttpHook } from "@agent/domain"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import type { RawResult } from "./HookOutcome.js"

export const DEFAULT_TIMEOUT_SECONDS = 60

/** Output past this is cut: a hook's answer is a line of JSON or a few lines of text. */
const MAX_OUTPUT = 1024 * 1024

export interface RunContext {
  readonly cwd: string
  readonly env: Readonly<Record<string, string | undefined>>
}

const timeoutOf = (handler: HookHandler) => handler.timeout ?? DEFAULT_TIMEOUT_SECONDS

/** `sh -c command` in its own process group, so a timeout ends what it started too. */
export const runCommand = (handler: CommandHook, input: string, context: RunContext): Effect.Effect<RawResult> =>
  Effect.async<RawResult>((resume) => {
    const seconds = timeoutOf(handler)
    let stdout = ""
    let stderr = ""
    let settled = false
    const finish = (result: RawResult) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resume(Effect.succeed(result))
    }
    const child = spawn("/bin/sh", ["-c", handler.command], {
      cwd: context.cwd,
      env: context.env as NodeJS.ProcessEnv,
      stdio: ["pipe", "pipe", "pipe"],
      detached: true
    })
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL")
      } catch {
        // Already gone.
      }
    }
    const timer = setTimeout(() => {
      killGroup()
      finish({ _tag: "TimedOut", seconds })
    }, seconds * 1000)
    child.stdout.on("data", (chunk: Buffer) => {
      if (stdout.length < MAX_OUTPUT) stdout += chunk.toString()
    })
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < MAX_OUTPUT) stderr += chunk.toString()
    })
    child.on("error", (error) => finish({ _tag: "Failed", error: `could not run the hook: ${error.message}` }))
    child.on("close", (code, signal) =>
      finish({ _tag: "Exited", code: code ?? (signal ? 128 : 1), stdout, stderr: stderr || (signal ? `ended by ${signal}` : "") }))
    // A hook that does not read its input must not fail the write.
    child.stdin.on("error", () => undefined)
    child.stdin.end(input)
    return Effect.sync(() => {
      clearTimeout(timer)
      killGroup()
    })
  })

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

export const runHandler = (handler: HookHandler, input: string, context: RunContext): Effect.Effect<RawResult> =>
  handler.type === "command" ? runCommand(handler, input, context) : runHttp(handler, input, context)
