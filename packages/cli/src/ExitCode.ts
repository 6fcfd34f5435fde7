import * as Data from "effect/Data"

/** Exit codes a script can rely on (documented in the README and `agent --help`). */
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
  /** Interrupted (SIGINT). */
  interrupted: 130
} as const

/** Something the user typed cannot work: exit 2 with this message. */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

/** Set by `agent serve`: there, a signal is the normal way to stop, so it exits 0, not 130. */
export const shutdown = { graceful: false }
