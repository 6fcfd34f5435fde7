import type { FileDiff, MessageID, MessageWithParts, PartID, RevertError, Session, SessionID, SessionNotFound } from "@agent/domain"
import type { Effect } from "effect"

// The SessionChanges service's vocabulary (re-exported by SessionChanges.ts).

export interface RevertInput {
  readonly sessionID: SessionID
  /** The first message to undo: it and every later message are hidden. */
  readonly messageID: MessageID
  /** Undo from this part of the message on (the parts before it stay). */
  readonly partID?: PartID
}

export interface RevertResult {
  readonly session: Session
  /** Files put back (absolute paths). */
  readonly restored: ReadonlyArray<string>
  /** Files left alone because they changed after the session last touched them (absolute). */
  readonly conflicts: ReadonlyArray<string>
}

/** One file of a session's net change, without its texts. */
export interface FileChange {
  /** Relative to the project root, `/`-separated. */
  readonly file: string
  readonly status: "added" | "deleted" | "modified"
  readonly additions: number
  readonly deletions: number
  readonly binary?: boolean
  /**
   * With `patches`: the unified diff (for a binary file, one line saying so); absent when the
   * snapshot store no longer holds the content (collected with old snapshots).
   */
  readonly patch?: string
}

export interface SessionChangesShape {
  /** Undoes the files and hides the messages from the given message (or part) on. */
  readonly revert: (input: RevertInput) => Effect.Effect<RevertResult, RevertError | SessionNotFound>
  /** Puts back what the revert undid and shows the hidden messages again. */
  readonly unrevert: (sessionID: SessionID) => Effect.Effect<RevertResult, RevertError | SessionNotFound>
  /** Removes the messages a revert hid and ends it (a new prompt does this first). */
  readonly cleanup: (sessionID: SessionID) => Effect.Effect<void, SessionNotFound>
  /** Recomputes the session's net changes (children included), keeps them and publishes `session.diff`. */
  readonly summarize: (sessionID: SessionID) => Effect.Effect<ReadonlyArray<FileDiff>, SessionNotFound>
  /** The kept per-file diffs of the session, with their texts. */
  readonly diff: (sessionID: SessionID) => Effect.Effect<ReadonlyArray<FileDiff>, SessionNotFound>
  /** The kept per-file changes with their line counts; with `patches`, their unified diffs too. */
  readonly changes: (
    sessionID: SessionID,
    options?: { readonly patches?: boolean }
  ) => Effect.Effect<ReadonlyArray<FileChange>, SessionNotFound>
  /** The messages to show: those before the revert point while a revert is in effect. */
  readonly visibleMessages: (sessionID: SessionID) => Effect.Effect<ReadonlyArray<MessageWithParts>, SessionNotFound>
}
