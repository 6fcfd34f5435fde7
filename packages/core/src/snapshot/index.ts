// snapshot/: Snapshots of the worktree per step, the changes of a session and their revert.
// What other subsystems use of it; they import it from here, never from its files.
import type { RevertError } from "@agent/domain"
import type { SnapshotError } from "./Snapshot.js"

export { SessionChanges } from "./SessionChanges.js"
export type { FileChange } from "./SessionChanges.js"
export { Snapshot } from "./Snapshot.js"
export { stepTouch } from "./StepTouch.js"

/** The errors this subsystem's services fail with: Snapshot with SnapshotError, SessionChanges also with RevertError. */
export type { SnapshotError }
export type SessionChangesError = SnapshotError | RevertError
