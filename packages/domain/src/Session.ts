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

export const FileDiff = Schema.Struct({
  file: Schema.String,
  before: Schema.String,
  after: Schema.String,
  additions: Schema.Number,
  deletions: Schema.Number
})
export type FileDiff = typeof FileDiff.Type

export const SessionSummary = Schema.Struct({
  additions: Schema.Number,
  deletions: Schema.Number,
  files: Schema.Number,
  diffs: Schema.optional(Schema.Array(FileDiff))
})

export const SessionRevert = Schema.Struct({
  messageID: MessageID,
  partID: Schema.optional(PartID),
  snapshot: Schema.optional(Schema.String),
  diff: Schema.optional(Schema.String)
})

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
