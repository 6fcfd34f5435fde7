// snapshot/: Snapshots of the worktree per step, the changes of a session and their revert.
// The names other subsystems use of it, and its errors. Code imports the file that holds a name (see
// docs/architecture.md: barrels would put every member into each CLI chunk that imports one).
import type { RevertError } from "@agent/domain"
import type { SnapshotError } from "./SnapshotTypes.js"

export { SessionChanges } from "./SessionChanges.js"
export type { FileChange } from "./SessionChanges.js"
export { Snapshot } from "./Snapshot.js"
export { stepTouch } from "./StepTouch.js"

/** The errors this subsystem's services fail with: Snapshot with SnapshotError, SessionChanges also with RevertError. */
export type { SnapshotError }
export type SessionChangesError = SnapshotError | RevertError
