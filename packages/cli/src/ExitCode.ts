import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Option from "effect/Option"

/** Exit codes a script can rely on (documented in docs/cli.md, the README and `agent --help`). */
export const ExitCode = {
  ok: 0,
  /** Runtime error: provider, tool crash, storage. */
  runtime: 1,
  /** Usage or configuration error. */
  usage: 2,
  /** Stopped by a permission rejection. */
  permission: 3,
  /** A limit was hit: steps, wall clock, stall, budget. */
  limit: 4,
  /** Interrupted (SIGINT, SIGTERM, SIGHUP). */
  interrupted: 130
} as const

/** Something the user typed cannot work: exit 2 with this message. */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

/** Set by `agent serve`: there, a signal is the normal way to stop, so it exits 0, not 130. */
export const shutdown = { graceful: false }

/** Errors caused by what the user typed or configured, as opposed to failures while running. */
const USAGE_ERRORS = new Set([
  "ConfigError",
  "DefaultAgentError",
  "AgentNotFound",
  "UsageError",
  "SessionNotFound",
  "SessionImportError",
  "ModelNotConfigured",
  "ClusterConflict"
])

export interface Failure {
  readonly code: number
  readonly message: string
}

/** A command's typed error: exit 2 when it is the user's to fix, else 1. */
export const errorFailure = (error: unknown): Failure => {
  const tag = (error as { _tag?: string })._tag ?? ""
  return { code: USAGE_ERRORS.has(tag) ? ExitCode.usage : ExitCode.runtime, message: (error as { readonly message: string }).message }
}

/** A defect (a storage error, a bug): exit 1. */
export const defectFailure = (defect: unknown): Failure => ({
  code: ExitCode.runtime,
  message: defect instanceof Error ? defect.message : String(defect)
})

/** The exit code and message of a failed command (not of an interrupted one). */
export const failureOf = (cause: Cause.Cause<unknown>): Failure =>
  Option.match(Cause.failureOption(cause), { onSome: errorFailure, onNone: () => defectFailure(Cause.squash(cause)) })
