/**
 * A shell command started from this process: `/bin/sh -c command` in its own process group (so a
 * timeout ends what it started too), its input on stdin, its stdout and stderr kept apart. What the
 * command launcher falls back to, and what it must behave like.
 */
import { Effect } from "effect"
import { spawn } from "node:child_process"

export interface CommandContext {
  readonly cwd: string
  readonly env: Readonly<Record<string, string | undefined>>
}

export interface CommandOptions {
  readonly timeoutMs: number
  /** Each of stdout and stderr is cut past this many characters (the rest is read and dropped). */
  readonly maxOutput: number
}

export type CommandResult =
  | { readonly _tag: "Exited"; readonly code: number | null; readonly signal: string | null; readonly stdout: string; readonly stderr: string }
  | { readonly _tag: "TimedOut" }
  /** It could not be started (the message says why). */
  | { readonly _tag: "Failed"; readonly error: string }

/** A signal (SIGKILL unless said) to a process group; nothing when it is already gone. */
export const killGroup = (pid: number | undefined, signal: NodeJS.Signals = "SIGKILL"): void => {
  try {
    if (pid !== undefined) process.kill(-pid, signal)
  } catch {
    // Already gone.
  }
}

export const runDirect = (command: string, input: string, context: CommandContext, options: CommandOptions): Effect.Effect<CommandResult> =>
  Effect.async<CommandResult>((resume) => {
    let stdout = ""
    let stderr = ""
    let settled = false
    const finish = (result: CommandResult) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resume(Effect.succeed(result))
    }
    const child = spawn("/bin/sh", ["-c", command], {
      cwd: context.cwd,
      env: context.env as NodeJS.ProcessEnv,
      stdio: ["pipe", "pipe", "pipe"],
      detached: true
    })
    const timer = setTimeout(() => {
      killGroup(child.pid)
      finish({ _tag: "TimedOut" })
    }, options.timeoutMs)
    child.stdout.on("data", (chunk: Buffer) => {
      if (stdout.length < options.maxOutput) stdout += chunk.toString()
    })
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < options.maxOutput) stderr += chunk.toString()
    })
    child.on("error", (error) => finish({ _tag: "Failed", error: error.message }))
    child.on("close", (code, signal) => finish({ _tag: "Exited", code, signal, stdout, stderr }))
    // A command that does not read its input must not fail the write.
    child.stdin.on("error", () => undefined)
    child.stdin.end(input)
    return Effect.sync(() => {
      clearTimeout(timer)
      killGroup(child.pid)
    })
  })
