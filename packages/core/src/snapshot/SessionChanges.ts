import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Effect, Layer } from "effect"
import { Bus } from "../runtime/Bus.js"
import { Instance } from "../runtime/Instance.js"
import { SessionStatuses } from "../runtime/SessionStatuses.js"
import { storageName, withBusyRetry } from "../store/Database.js"
import { SessionStore } from "../store/SessionStore.js"
import { changes, diff, summarize } from "./ChangeSummary.js"
import type { ChangesDeps } from "./ChangesDeps.js"
import type { SessionChangesShape } from "./SessionChangesTypes.js"
import { cleanup, revert, unrevert, visibleMessages } from "./SessionRevert.js"
import { Snapshot } from "./Snapshot.js"

export { unifiedDiff } from "./ChangesDeps.js"
export { isHidden, visible } from "./RevertPoint.js"
export * from "./SessionChangesTypes.js"

/**
 * What sessions did to the project's files: the net diff of a session (children included), and
 * revert / unrevert.
 *
 * Revert is exact: it puts back the files named by the patch parts from the revert point on, as
 * they were before the first of those steps, and nothing else. A file that changed after the
 * session last touched it (by the user, another session) is reported as a conflict and left alone.
 * Later messages are hidden (`session.revert`) until the next prompt removes them; unrevert puts
 * the reverted files back as they were, with the same conflict check.
 *
 * This file holds the service and its layer; the net diff is in ChangeSummary.ts, revert in
 * SessionRevert.ts, what hides a message in RevertPoint.ts, and the shared helpers in
 * ChangesDeps.ts.
 */

export class SessionChanges extends Context.Tag("@agent/core/SessionChanges")<SessionChanges, SessionChangesShape>() {
  static readonly layer: Layer.Layer<
    SessionChanges,
    never,
    SessionStore | Snapshot | Bus | SqlClient.SqlClient | Instance | SessionStatuses
  > = Layer.effect(SessionChanges, make())
}

function make() {
  return Effect.gen(function*() {
    const deps: ChangesDeps = {
      store: yield* SessionStore,
      snapshot: yield* Snapshot,
      bus: yield* Bus,
      sql: yield* SqlClient.SqlClient,
      write: withBusyRetry(yield* storageName),
      statuses: yield* SessionStatuses
    }
    return {
      revert: (input) => revert(deps, input),
      unrevert: (sessionID) => unrevert(deps, sessionID),
      cleanup: (sessionID) => cleanup(deps, sessionID),
      summarize: (sessionID) => summarize(deps, sessionID),
      diff: (sessionID) => diff(deps, sessionID),
      changes: (sessionID, options) => changes(deps, sessionID, options),
      visibleMessages: (sessionID) => visibleMessages(deps, sessionID)
    } satisfies SessionChangesShape
  })
}
