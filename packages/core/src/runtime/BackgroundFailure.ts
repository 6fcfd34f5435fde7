import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"

/** The first line of what went wrong, without a stack: what a user reads in a warning. */
export const summarizeCause = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  const message = error instanceof Error
    ? error.message
    : typeof error === "object" && error !== null && typeof (error as { message?: unknown }).message === "string"
    ? (error as { message: string }).message
    : String(error)
  return message.split("\n").find((line) => line.trim() !== "")?.trim() ?? "unknown error"
}

/**
 * Ends a background task that may fail without harming the run (a title, a prune, a diff): one
 * warning line naming it and the reason, the whole cause (stacks) at debug level only, since a
 * stack printed over the terminal's status line reads as a crash. An interruption (the run
 * ended first) is not a failure.
 */
export const warnBackgroundFailure = (what: string) => (cause: Cause.Cause<unknown>): Effect.Effect<void> =>
  Cause.isInterruptedOnly(cause)
    ? Effect.void
    : Effect.logWarning(`${what}: ${summarizeCause(cause)}`).pipe(Effect.zipRight(Effect.logDebug(what, cause)))
