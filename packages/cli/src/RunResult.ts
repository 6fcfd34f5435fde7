// The `result` event that ends every `agent run --format json`, however the run ends.
// Loaded with the command definitions (see RunCommand.ts): effect only, nothing of the runtime.
import type { DecidedBy } from "@agent/domain"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { ExitCode, failureOf } from "./ExitCode.js"

/** A tool call that did not run for want of permission, and who decided (`permission_denials`). */
export interface PermissionDenial {
  /** The permission (the tool's, e.g. `bash`, `edit`). */
  readonly tool: string
  /** What the call would have touched: the command, the file, the patterns. */
  readonly input: string
  /** The session that asked (a subagent's own). */
  readonly sessionID: string
  readonly callID?: string
  readonly decidedBy: DecidedBy
}

/** What has been printed of the current prompt's ending so far; one per `agent run`. */
export interface RunReport {
  /** The run's session, once it is known. */
  sessionID: string | undefined
  /** Whether the current prompt's result event is out (each prompt of `-i` gets one). */
  printed: boolean
  /** The current prompt's denials, in the order they were decided. */
  denials: Array<PermissionDenial>
}

export const makeReport = (): RunReport => ({ sessionID: undefined, printed: false, denials: [] })

export interface ResultFields {
  readonly status: string
  readonly exitCode: number
  readonly reason: string
  readonly text: string
  readonly steps: number
  readonly tokens?: unknown
  readonly cost: number
}

/** Prints the result event (OpenCode's shape plus this runtime's status, exit code and reason). */
export const printResult = (report: RunReport, fields: ResultFields) =>
  Effect.suspend(() => {
    report.printed = true
    return Console.log(JSON.stringify({
      type: "result",
      timestamp: Date.now(),
      sessionID: report.sessionID ?? null,
      ...fields,
      permission_denials: report.denials
    }))
  })

/**
 * A `--format json` run that fails or is interrupted before it printed the current prompt's
 * result (a database error mid-run, a configuration error, Ctrl-C while starting) prints one
 * saying so; the failure then goes on to Main, which prints it on stderr and exits with its code.
 */
export const endsWithResult = (json: boolean, report: RunReport) => <A, E, R>(run: Effect.Effect<A, E, R>) =>
  json
    ? run.pipe(Effect.onExit((exit) => {
      if (exit._tag === "Success" || report.printed) return Effect.void
      const { code, message } = Cause.isInterruptedOnly(exit.cause)
        ? { code: ExitCode.interrupted, message: "aborted" }
        : failureOf(exit.cause)
      const status = code === ExitCode.interrupted ? "aborted" : "error"
      return printResult(report, { status, exitCode: code, reason: message, text: "", steps: 0, cost: 0 }).pipe(Effect.ignore)
    }))
    : run
