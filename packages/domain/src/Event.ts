import { Schema } from "effect"
import { DecidedBy } from "./Approval.js"
import { MessageID, PartID, PermissionID, SessionID } from "./Ids.js"
import { Message, MessageError, Part } from "./Message.js"
import { PermissionReply, PermissionRequest, PermissionToolRef } from "./Permission.js"
import { FileDiff, Session, SessionStatus } from "./Session.js"

const event = <const Type extends string, Props extends Schema.Struct.Fields>(type: Type, properties: Props) =>
  Schema.Struct({ type: Schema.Literal(type), properties: Schema.Struct(properties) })

export const Todo = Schema.Struct({
  content: Schema.String,
  status: Schema.Literal("pending", "in_progress", "completed", "cancelled"),
  priority: Schema.Literal("high", "medium", "low")
})
export type Todo = typeof Todo.Type

export const SessionCreated = event("session.created", { info: Session })
export const SessionUpdated = event("session.updated", { info: Session })
export const SessionDeleted = event("session.deleted", { info: Session })
export const SessionStatusChanged = event("session.status", { sessionID: SessionID, status: SessionStatus })
export const SessionIdle = event("session.idle", { sessionID: SessionID })
export const SessionErrored = event("session.error", {
  sessionID: Schema.optional(SessionID),
  error: Schema.optional(MessageError)
})
export const SessionCompacted = event("session.compacted", {
  sessionID: SessionID,
  /** Estimated tokens of the history before and after (this runtime's addition). */
  tokensBefore: Schema.optional(Schema.Number),
  tokensAfter: Schema.optional(Schema.Number),
  auto: Schema.optional(Schema.Boolean)
})
/** A provider call failed and is asked again after `delay` ms (attempt `attempt` of `attempts`). */
export const SessionRetry = event("session.retry", {
  sessionID: SessionID,
  attempt: Schema.Number,
  attempts: Schema.Number,
  delay: Schema.Number,
  statusCode: Schema.optional(Schema.Number),
  message: Schema.String
})
export const SessionDiff = event("session.diff", { sessionID: SessionID, diff: Schema.Array(FileDiff) })
export const MessageUpdated = event("message.updated", { info: Message })
export const MessageRemoved = event("message.removed", { sessionID: SessionID, messageID: MessageID })
export const PartUpdated = event("message.part.updated", { part: Part })
export const PartDelta = event("message.part.delta", {
  sessionID: SessionID,
  messageID: MessageID,
  partID: PartID,
  field: Schema.String,
  delta: Schema.String
})
export const PartRemoved = event("message.part.removed", {
  sessionID: SessionID,
  messageID: MessageID,
  partID: PartID
})
export const PermissionAsked = event("permission.asked", PermissionRequest.fields)
export const PermissionReplied = event("permission.replied", {
  sessionID: SessionID,
  requestID: PermissionID,
  reply: PermissionReply
})
/**
 * A tool call may not run, and who decided (this runtime's addition): a rule (published by
 * PermissionService), a hook, a person, or an approver's timeout or fallback.
 */
export const PermissionDenied = event("permission.denied", {
  sessionID: SessionID,
  permission: Schema.String,
  patterns: Schema.Array(Schema.String),
  tool: Schema.optional(PermissionToolRef),
  decidedBy: DecidedBy
})
export const TodoUpdated = event("todo.updated", { sessionID: SessionID, todos: Schema.Array(Todo) })
/** One choice offered with a question. */
export const QuestionOption = Schema.Struct({ label: Schema.String, description: Schema.String })
export type QuestionOption = typeof QuestionOption.Type

/** A question the model asks the user; `custom` (default true) allows a typed answer. */
export const QuestionInfo = Schema.Struct({
  question: Schema.String,
  header: Schema.String,
  options: Schema.Array(QuestionOption),
  multiple: Schema.optional(Schema.Boolean),
  custom: Schema.optional(Schema.Boolean)
})
export type QuestionInfo = typeof QuestionInfo.Type

/** Questions waiting for the user's answers (`que_…` id). */
export const QuestionRequest = Schema.Struct({
  id: Schema.String,
  sessionID: SessionID,
  questions: Schema.Array(QuestionInfo),
  tool: Schema.optional(PermissionToolRef),
  time: Schema.Struct({ created: Schema.Number })
})
export type QuestionRequest = typeof QuestionRequest.Type

export const QuestionAsked = event("question.asked", QuestionRequest.fields)
/** One list of chosen labels (or typed text) per question, in order. */
export const QuestionReplied = event("question.replied", {
  sessionID: SessionID,
  requestID: Schema.String,
  answers: Schema.Array(Schema.Array(Schema.String))
})
export const QuestionRejected = event("question.rejected", { sessionID: SessionID, requestID: Schema.String })
export const McpToolsChanged = event("mcp.tools.changed", { server: Schema.String })
/** Where one MCP server stands; `error` says why it failed, needs auth or is reconnecting. */
export const McpServerStatus = Schema.Struct({
  status: Schema.Literal("connected", "connecting", "disabled", "failed", "needs_auth"),
  error: Schema.optional(Schema.String)
})
export type McpServerStatus = typeof McpServerStatus.Type
export const McpStatusChanged = event("mcp.status", { server: Schema.String, status: McpServerStatus })
export const FileEdited = event("file.edited", { file: Schema.String })
/** Snapshots (undo, session diffs) were turned off for a project, and why (this runtime's addition). */
export const SnapshotDisabled = event("snapshot.disabled", { directory: Schema.String, reason: Schema.String })
/**
 * A sandboxed command tried to write where it may not, or to reach a host it may not (this
 * runtime's addition). `target` is the path or `host:port`; `tool` is the tool that ran it.
 */
export const SandboxBlocked = event("sandbox.blocked", {
  sessionID: Schema.optional(SessionID),
  callID: Schema.optional(Schema.String),
  tool: Schema.String,
  kind: Schema.Literal("write", "network"),
  target: Schema.String
})
export const CommandExecuted = event("command.executed", {
  name: Schema.String,
  sessionID: SessionID,
  arguments: Schema.String,
  messageID: MessageID
})

/**
 * A hook ran (docs/hooks.md): its event, the command (or URL), its exit code (absent when it timed
 * out or could not start; an HTTP hook's is its status), how long it took, and what it decided.
 */
export const HookRan = event("hook.ran", {
  sessionID: Schema.optional(SessionID),
  event: Schema.String,
  command: Schema.String,
  exitCode: Schema.optional(Schema.Number),
  durationMs: Schema.Number,
  /** allow, deny, ask, block, context, error, timeout, or none. */
  decision: Schema.String,
  /** Shown to the user: a non-blocking error or the hook's systemMessage. */
  message: Schema.optional(Schema.String)
})

/** Why a run ended: done, rejected by the user, failed, aborted, or stopped by a limit. */
export const RunStopReason = Schema.Literal("completed", "rejected", "error", "aborted", "steps", "duration", "stall", "budget")
export type RunStopReason = typeof RunStopReason.Type

/**
 * A prompt (or command) sent over the HTTP API has finished its run, or could not start it
 * (`error.name` then says why: `AgentNotFound`, `ModelNotConfigured`, ...). This runtime's
 * addition: `agent run --attach` sends `prompt_async` and ends on this event.
 */
export const PromptFinished = event("prompt.finished", {
  sessionID: SessionID,
  /** The user message the prompt added. */
  messageID: MessageID,
  reason: RunStopReason,
  error: Schema.optional(MessageError),
  /** The last assistant message of the run, when the model was called. */
  assistantID: Schema.optional(MessageID),
  usage: Schema.Struct({ cost: Schema.Number, tokens: Schema.Number, steps: Schema.Number })
})

/** Every event the bus carries, as `{type, properties}` (OpenCode's wire shape). */
export const BusEvent = Schema.Union(
  SessionCreated,
  SessionUpdated,
  SessionDeleted,
  SessionStatusChanged,
  SessionIdle,
  SessionErrored,
  SessionCompacted,
  SessionRetry,
  SessionDiff,
  MessageUpdated,
  MessageRemoved,
  PartUpdated,
  PartDelta,
  PartRemoved,
  PermissionAsked,
  PermissionReplied,
  PermissionDenied,
  QuestionAsked,
  QuestionReplied,
  QuestionRejected,
  TodoUpdated,
  McpToolsChanged,
  McpStatusChanged,
  FileEdited,
  SnapshotDisabled,
  SandboxBlocked,
  CommandExecuted,
  PromptFinished,
  HookRan
)
export type BusEvent = typeof BusEvent.Type
export type BusEventType = BusEvent["type"]
export type BusEventOf<T extends BusEventType> = Extract<BusEvent, { type: T }>
