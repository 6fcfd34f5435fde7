/**
 * Runs one short command to completion and collects what it printed: the `!`-shell of command
 * templates and the `shell` helper of custom tools. (The bash tool has its own runner, with live
 * output, abort and background jobs.) The command leads its own process group, killed as a whole
 * on timeout or interruption.
 */
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { killGroup } from "../process/DirectCommand.js"

export interface ExecLaunch {
  readonly file: string
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
}

export interface ExecResult {
  readonly stdout: string
  readonly stderr: string
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly timedOut: boolean
  /** Output past `maxBytes` was dropped. */
  readonly cut: boolean
  /** The program could not be started. */
  readonly error?: string
}

export const exec = (
  launch: ExecLaunch,
  options: { readonly cwd: string; readonly timeoutMs: number; readonly maxBytes: number }
): Effect.Effect<ExecResult> =>
  Effect.async<ExecResult>((resume) => {
    let stdout = ""
    let stderr = ""
    let cut = false
    let timedOut = false
    const keep = (chunk: string, current: string) => {
      if (current.length >= options.maxBytes) {
        cut = true
        return current
      }
      const next = current + chunk
      if (next.length > options.maxBytes) cut = true
      return next.slice(0, options.maxBytes)
    }
    const child = spawn(launch.file, [...launch.args], {
      cwd: options.cwd,
      env: launch.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"]
    })
    child.stdout.setEncoding("utf8")
    child.stderr.setEncoding("utf8")
    child.stdout.on("data", (chunk: string) => (stdout = keep(chunk, stdout)))
    child.stderr.on("data", (chunk: string) => (stderr = keep(chunk, stderr)))
    const timer = setTimeout(() => {
      timedOut = true
      killGroup(child.pid, "SIGKILL")
    }, options.timeoutMs)
    child.once("error", (error) => {
      clearTimeout(timer)
      resume(Effect.succeed({ stdout, stderr, code: null, signal: null, timedOut, cut, error: error.message }))
    })
    child.once("close", (code, signal) => {
      clearTimeout(timer)
      resume(Effect.succeed({ stdout, stderr, code, signal, timedOut, cut }))
    })
    return Effect.sync(() => {
      clearTimeout(timer)
      killGroup(child.pid, "SIGKILL")
    })
  })
