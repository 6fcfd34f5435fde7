import { Schema } from "effect"
import { MessageID, PartID, ProjectID, SessionID } from "./Ids.js"
import { PermissionRuleset } from "./Permission.js"

export const TokenUsage = Schema.Struct({
  total: Schema.optional(Schema.Number),
  input: Schema.Number,
  output: Schema.Number,
  reasoning: Schema.Number,
  cache: Schema.Struct({ read: Schema.Number, write: Schema.Number })
})
export type TokenUsage = typeof TokenUsage.Type

export const emptyTokenUsage: TokenUsage = { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } }

/**
 * One file's net change (OpenCode's shape): `file` is relative to the project root, `before` and
 * `after` are the whole texts (empty for a missing or binary file).
 */
export const FileDiff = Schema.Struct({
  file: Schema.String,
  before: Schema.String,
  after: Schema.String,
  additions: Schema.Number,
  deletions: Schema.Number,
  status: Schema.optional(Schema.Literal("added", "deleted", "modified")),
  /** The file is not text: `before`/`after` are empty and the line counts are 0. */
  binary: Schema.optional(Schema.Boolean)
})
export type FileDiff = typeof FileDiff.Type

export const SessionSummary = Schema.Struct({
  additions: Schema.Number,
  deletions: Schema.Number,
  files: Schema.Number,
  diffs: Schema.optional(Schema.Array(FileDiff))
})

/**
 * A revert in effect: messages from `messageID` (from `partID` inside it) on are hidden until the
 * next prompt removes them. `snapshot` holds the files as they were before the revert (what unrevert
 * puts back), `applied` as they were right after it; `diff` is the unified diff the revert made.
 */
export const SessionRevert = Schema.Struct({
  messageID: MessageID,
  partID: Schema.optional(PartID),
  snapshot: Schema.optional(Schema.String),
  diff: Schema.optional(Schema.String),
  /** Snapshot of the project right after the revert (this runtime's addition). */
  applied: Schema.optional(Schema.String),
  /** Files the revert restored, absolute paths (this runtime's addition). */
  files: Schema.optional(Schema.Array(Schema.String)),
  /** Files the revert left alone because they changed after the session last touched them. */
  conflicts: Schema.optional(Schema.Array(Schema.String))
})
export type SessionRevert = typeof SessionRevert.Type

export const SessionModel = Schema.Struct({
  id: Schema.String,
  providerID: Schema.String,
  variant: Schema.optional(Schema.String)
})

export class Session extends Schema.Class<Session>("Session")({
  id: SessionID,
  slug: Schema.String,
  projectID: ProjectID,
  directory: Schema.String,
  parentID: Schema.optional(SessionID),
  title: Schema.String,
  version: Schema.String,
  agent: Schema.optional(Schema.String),
  model: Schema.optional(SessionModel),
  permission: Schema.optional(PermissionRuleset),
  summary: Schema.optional(SessionSummary),
  /** Cost in USD, including child sessions. */
  cost: Schema.optional(Schema.Number),
  /** Token totals, including child sessions. */
  tokens: Schema.optional(TokenUsage),
  share: Schema.optional(Schema.Struct({ url: Schema.String })),
  revert: Schema.optional(SessionRevert),
  time: Schema.Struct({
    created: Schema.Number,
    updated: Schema.Number,
    compacting: Schema.optional(Schema.Number),
    archived: Schema.optional(Schema.Number)
  })
}) {}

export const SessionStatus = Schema.Union(
  Schema.Struct({ type: Schema.Literal("idle") }),
  Schema.Struct({ type: Schema.Literal("busy") }),
  Schema.Struct({
    type: Schema.Literal("retry"),
    attempt: Schema.Number,
    message: Schema.String,
    next: Schema.Number
  })
)
export type SessionStatus = typeof SessionStatus.Type

export class SessionNotFound extends Schema.TaggedError<SessionNotFound>()("SessionNotFound", {
  sessionID: Schema.String
}) {
  override get message() {
    return `Session not found: ${this.sessionID}`
  }
}

export class MessageNotFound extends Schema.TaggedError<MessageNotFound>()("MessageNotFound", {
  sessionID: Schema.String,
  messageID: Schema.String
}) {
  override get message() {
    return `Message ${this.messageID} not found in session ${this.sessionID}`
  }
}

/** An export that cannot be imported: malformed, or a session that already exists. */
export class SessionImportError extends Schema.TaggedError<SessionImportError>()("SessionImportError", {
  detail: Schema.String
}) {
  override get message() {
    return `Cannot import session: ${this.detail}`
  }
}

/** A revert or unrevert that cannot be done; `reason` says which case (for HTTP status mapping). */
export class RevertError extends Schema.TaggedError<RevertError>()("RevertError", {
  sessionID: Schema.String,
  reason: Schema.Literal("busy", "point_not_found", "not_reverted", "snapshots_off", "snapshot_missing"),
  detail: Schema.String
}) {
  override get message() {
    return this.detail
  }
}
