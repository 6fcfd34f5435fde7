import { Schema } from "effect"
import { MessageID, PermissionID, SessionID } from "./Ids.js"

export const PermissionAction = Schema.Literal("allow", "deny", "ask")
export type PermissionAction = typeof PermissionAction.Type

/** Where a rule came from, so `explain` can say which file or layer decided. */
export const RuleLayer = Schema.Literal("default", "agent", "config", "session", "approval", "policy")
export type RuleLayer = typeof RuleLayer.Type

export const RuleSource = Schema.Struct({
  layer: RuleLayer,
  /** The file (or `env:VAR`) that set the rule, when it came from configuration. */
  file: Schema.optional(Schema.String),
  /** Key path inside that file, e.g. `agent.build.permission.bash.git *`. */
  key: Schema.optional(Schema.String),
  /** Free text for rules made by code, e.g. `agent plan`. */
  note: Schema.optional(Schema.String)
})
export type RuleSource = typeof RuleSource.Type

export const PermissionRule = Schema.Struct({
  permission: Schema.String,
  pattern: Schema.String,
  action: PermissionAction,
  source: Schema.optional(RuleSource)
})
export type PermissionRule = typeof PermissionRule.Type

export const PermissionRuleset = Schema.Array(PermissionRule)
export type PermissionRuleset = typeof PermissionRuleset.Type

/** The `permission` key of a config file: a bare action, or per permission an action or a pattern map. */
export const PermissionConfig = Schema.Union(
  PermissionAction,
  Schema.Record({
    key: Schema.String,
    value: Schema.Union(PermissionAction, Schema.Record({ key: Schema.String, value: PermissionAction }))
  })
)
export type PermissionConfig = typeof PermissionConfig.Type

export const PermissionToolRef = Schema.Struct({
  messageID: MessageID,
  callID: Schema.String
})
export type PermissionToolRef = typeof PermissionToolRef.Type

export const PermissionRequest = Schema.Struct({
  id: PermissionID,
  sessionID: SessionID,
  permission: Schema.String,
  patterns: Schema.Array(Schema.String),
  always: Schema.Array(Schema.String),
  metadata: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  tool: Schema.optional(PermissionToolRef),
  /**
   * Only a person may answer, and why: the enterprise policy itself asks, or the rules cannot
   * read the command (its name is computed when it runs). `--auto-approve` leaves these alone.
   */
  requiresPerson: Schema.optional(Schema.String),
  time: Schema.Struct({ created: Schema.Number })
})
export type PermissionRequest = typeof PermissionRequest.Type

export const PermissionReply = Schema.Literal("once", "always", "reject")
export type PermissionReply = typeof PermissionReply.Type

const rulesText = (rules: ReadonlyArray<PermissionRule>) =>
  JSON.stringify(rules.map(({ action, pattern, permission }) => ({ permission, pattern, action })))

/** A rule denies the call. The message is what the model reads as the tool result. */
export class DeniedError extends Schema.TaggedError<DeniedError>()("DeniedError", {
  permission: Schema.String,
  pattern: Schema.String,
  rules: PermissionRuleset,
  /** Set when the rules could not read what the call runs (a command name computed at run time). */
  unreadable: Schema.optional(Schema.String)
}) {
  override get message() {
    if (this.unreadable !== undefined) {
      return `Blocked: the ${this.permission} rules cannot check ${JSON.stringify(this.pattern)}: ${this.unreadable}. ` +
        `Some ${this.permission} rules deny, so a command the rules cannot read is denied. ` +
        `Write the command with its name spelled out (no variable, substitution, glob or brace in the command name, ` +
        `no script piped into a shell) so the rules can check it. To allow this exact command on purpose, the user ` +
        `can add the rule ${JSON.stringify(this.pattern)}: "allow" to the ${this.permission} permission, after the deny rules. ` +
        `The ${this.permission} rules in force: ${rulesText(this.rules)}`
    }
    return `Blocked by the user's permission rules: ${this.permission} is denied for ${JSON.stringify(this.pattern)}. ` +
      `Do not try this call again; pick another way or tell the user what you needed. ` +
      `The ${this.permission} rules in force: ${rulesText(this.rules)}`
  }
}

/** The user answered "reject" without feedback. The loop stops. */
export class RejectedError extends Schema.TaggedError<RejectedError>()("RejectedError", {
  requestID: Schema.optional(PermissionID),
  permission: Schema.optional(Schema.String)
}) {
  override get message() {
    return "The user said no to this tool call; it did not run."
  }
}

/** The user answered "reject" with feedback. The loop continues with the feedback. */
export class CorrectedError extends Schema.TaggedError<CorrectedError>()("CorrectedError", {
  requestID: Schema.optional(PermissionID),
  feedback: Schema.String
}) {
  override get message() {
    return `The user said no to this tool call; it did not run. Their instructions: ${this.feedback}`
  }
}

export class PermissionRequestNotFound extends Schema.TaggedError<PermissionRequestNotFound>()(
  "PermissionRequestNotFound",
  { requestID: Schema.String }
) {
  override get message() {
    return `No pending permission request with id ${this.requestID}`
  }
}

export type PermissionAskError = DeniedError | RejectedError | CorrectedError
