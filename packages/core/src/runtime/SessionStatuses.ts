/**
 * The status of every session with a run in this runtime (busy, retrying, waiting): the one record
 * the session loop writes and that the loop's `status` and SessionChanges' "is it running" read.
 * Publishing the `session.status` events stays with the loop.
 */
import type { SessionID, SessionStatus } from "@agent/domain"
import { Context, Effect, Layer } from "effect"

export interface SessionStatusesShape {
  readonly set: (sessionID: SessionID, status: SessionStatus) => Effect.Effect<void>
  /** `idle` when the session has no run. */
  readonly get: (sessionID: SessionID) => Effect.Effect<SessionStatus>
  /** The sessions that are not idle. */
  readonly all: () => Effect.Effect<ReadonlyMap<SessionID, SessionStatus>>
  readonly running: (sessionID: SessionID) => Effect.Effect<boolean>
}

export class SessionStatuses extends Context.Tag("@agent/core/SessionStatuses")<SessionStatuses, SessionStatusesShape>() {
  static readonly layer: Layer.Layer<SessionStatuses> = Layer.sync(SessionStatuses, () => {
    const statuses = new Map<SessionID, SessionStatus>()
    return {
      set: (sessionID, status) =>
        Effect.sync(() => {
          if (status.type === "idle") statuses.delete(sessionID)
          else statuses.set(sessionID, status)
        }),
      get: (sessionID) => Effect.sync(() => statuses.get(sessionID) ?? { type: "idle" as const }),
      all: () => Effect.sync(() => new Map(statuses)),
      running: (sessionID) => Effect.sync(() => statuses.has(sessionID))
    }
  })
}
