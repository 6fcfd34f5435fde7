// Where the API sends what changes a running session: to this process's loop (one process), or to
// the replica that owns the session (agent serve --replica, ClusterRunner.ts). The handlers use
// SessionRouting when it is in their context, else the local services directly; this file imports
// nothing of the cluster, so a single process never loads it.
import type { LoopError, PromptInput, RunOutcome } from "@agent/core"
import type {
  MessageID,
  PartID,
  PermissionReply,
  PermissionRequest,
  PermissionRequestNotFound,
  QuestionRequest,
  RevertError,
  Session,
  SessionID,
  SessionNotFound,
  SessionStatus
} from "@agent/domain"
import type { QuestionNotFound } from "@agent/core"
import { Context, type Effect, Schema } from "effect"

/** The replica that got the session cannot serve it (its project directory is not visible there). */
export class SessionUnavailable extends Schema.TaggedError<SessionUnavailable>()("SessionUnavailable", {
  sessionID: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

/** What a revert or unrevert did, as SessionChanges answers it. */
export interface RevertOutcome {
  readonly session: Session
  readonly restored: ReadonlyArray<string>
  readonly conflicts: ReadonlyArray<string>
}

export interface SessionRoutingShape {
  /** Runs the prompt where the session is owned; the outcome carries no message (read it from the store). */
  readonly prompt: (input: PromptInput & { readonly messageID: NonNullable<PromptInput["messageID"]> }) => Effect.Effect<
    RunOutcome,
    LoopError | SessionUnavailable
  >
  readonly abort: (sessionID: SessionID) => Effect.Effect<void>
  /** Compacts the session where it is owned, after the run in progress there. */
  readonly compact: (sessionID: SessionID) => Effect.Effect<RunOutcome, LoopError | SessionUnavailable>
  /** Reverts where the session is owned: only the owner knows whether it runs (a running session is refused). */
  readonly revert: (
    input: { readonly sessionID: SessionID; readonly messageID: MessageID; readonly partID?: PartID }
  ) => Effect.Effect<RevertOutcome, RevertError | SessionNotFound | SessionUnavailable>
  readonly unrevert: (sessionID: SessionID) => Effect.Effect<RevertOutcome, RevertError | SessionNotFound | SessionUnavailable>
  /** The sessions that are not idle, on every live replica. */
  readonly statuses: () => Effect.Effect<ReadonlyMap<SessionID, SessionStatus>>
  /** Every replica's pending asks. */
  readonly permissions: () => Effect.Effect<ReadonlyArray<PermissionRequest>>
  readonly replyPermission: (
    input: { readonly requestID: string; readonly reply: PermissionReply; readonly message?: string }
  ) => Effect.Effect<void, PermissionRequestNotFound>
  readonly questions: () => Effect.Effect<ReadonlyArray<QuestionRequest>>
  readonly replyQuestion: (requestID: string, answers: ReadonlyArray<ReadonlyArray<string>>) => Effect.Effect<void, QuestionNotFound>
  readonly rejectQuestion: (requestID: string) => Effect.Effect<void, QuestionNotFound>
}

export class SessionRouting extends Context.Tag("@agent/server/SessionRouting")<SessionRouting, SessionRoutingShape>() {}
