import { Data, type Duration, type Effect } from "effect"
import type * as Tree from "./Tree.js"

// The Snapshot service's vocabulary: what it takes, returns and fails with (re-exported by Snapshot.ts).

export interface SnapshotStatus {
  readonly enabled: boolean
  /** Why snapshots are off. */
  readonly reason?: string
  /** The directory snapshots cover (the project's root). */
  readonly directory: string
  /** Where the store lives. */
  readonly store: string
}

/** What a step's tools may have done to the project's files. */
export type StepTouch =
  | { readonly kind: "none" }
  | { readonly kind: "paths"; readonly paths: ReadonlyArray<string> }
  | { readonly kind: "unknown" }

export interface StepStart {
  readonly id: string
  readonly root: Tree.Dir
}

export interface StepResult {
  /** The snapshot after the step (for the step-finish part). */
  readonly snapshot: string
  /** The patch part: the snapshot before the step and the files (absolute) that the step changed. */
  readonly patch?: { readonly hash: string; readonly files: ReadonlyArray<string> }
}

/** Snapshots of one run's steps: the first step scans, later ones start where the last ended. */
export interface StepRecorder {
  readonly begin: () => Effect.Effect<StepStart | undefined>
  readonly finish: (start: StepStart | undefined, touch: StepTouch) => Effect.Effect<StepResult | undefined>
  /** The attempt failed and is retried: the next finish scans, so its changes are not lost. */
  readonly failed: (start: StepStart | undefined) => void
}

export interface RestoreFile {
  /** Relative to the project root, `/`-separated. */
  readonly file: string
  /** What to put back; undefined removes the file. */
  readonly target: Tree.FileEntry | undefined
  /** What the file must be now; anything else is a conflict and the file is left alone. */
  readonly expected: Tree.FileEntry | undefined
}

export interface RestoreResult {
  /** Snapshot taken just before (holding the files as they were). */
  readonly before: string
  /** Snapshot right after. */
  readonly after: string
  readonly restored: ReadonlyArray<string>
  readonly conflicts: ReadonlyArray<string>
}

export interface GcOptions {
  /** Objects younger than this are kept (default 15 minutes). */
  readonly grace?: Duration.DurationInput
}

export interface GcReport {
  /** Snapshots still referenced by sessions (and the files now). */
  readonly kept: number
  readonly bytesBefore: number
  readonly bytesAfter: number
}

/** A snapshot the store does not hold (collected, or made on another machine). */
export class SnapshotMissing extends Data.TaggedError("SnapshotMissing")<{ readonly id: string }> {
  override get message() {
    return `snapshot ${this.id} is not in the store (it was garbage-collected or made elsewhere)`
  }
}

/** The store cannot be read (git is missing, or the store is damaged). */
export class SnapshotUnavailable extends Data.TaggedError("SnapshotUnavailable")<{ readonly detail: string }> {
  override get message() {
    return `the snapshot store cannot be read: ${this.detail}`
  }
}

export type SnapshotError = SnapshotMissing | SnapshotUnavailable

export interface SnapshotShape {
  readonly status: () => Effect.Effect<SnapshotStatus>
  /** Records the project's files now (a full scan); undefined when snapshots are off. */
  readonly track: () => Effect.Effect<string | undefined>
  /** A recorder for one run of the session loop. */
  readonly steps: () => StepRecorder
  /** Files that differ between two snapshots. */
  readonly changes: (from: string, to: string) => Effect.Effect<ReadonlyArray<Tree.Change>, SnapshotError>
  /** The entries of `files` (relative paths) in a snapshot; undefined where the file is absent. */
  readonly entries: (
    snapshot: string,
    files: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyMap<string, Tree.FileEntry | undefined>, SnapshotError>
  /** Contents of stored objects by id. */
  readonly read: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, Buffer>, SnapshotError>
  /** Puts files back where they are as expected; the others are reported as conflicts. */
  readonly restore: (files: ReadonlyArray<RestoreFile>) => Effect.Effect<RestoreResult, SnapshotError>
  /** Drops snapshot data no live session refers to. */
  readonly gc: (options?: GcOptions) => Effect.Effect<GcReport>
  /** The project root snapshots are relative to. */
  readonly root: string
}
