import { Schema } from "effect"
import { MessageID, PartID, SessionID } from "./Ids.js"
import { TokenUsage } from "./Session.js"

const Metadata = Schema.Record({ key: Schema.String, value: Schema.Unknown })

export const MessageModel = Schema.Struct({
  providerID: Schema.String,
  modelID: Schema.String,
  variant: Schema.optional(Schema.String)
})

/** Errors recorded on an assistant message, in OpenCode's wire shape `{name, data}`. */
export const MessageError = Schema.Struct({
  name: Schema.String,
  data: Schema.Struct({ message: Schema.String }, Schema.Record({ key: Schema.String, value: Schema.Unknown }))
})
export type MessageError = typeof MessageError.Type

export const UserMessage = Schema.Struct({
  id: MessageID,
  sessionID: SessionID,
  role: Schema.Literal("user"),
  time: Schema.Struct({ created: Schema.Number }),
  agent: Schema.String,
  model: MessageModel,
  system: Schema.optional(Schema.String),
  tools: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Boolean }))
})
export type UserMessage = typeof UserMessage.Type

export const FinishReason = Schema.Literal("stop", "length", "tool-calls", "content-filter", "error", "other", "unknown")
export type FinishReason = typeof FinishReason.Type

export const AssistantMessage = Schema.Struct({
  id: MessageID,
  sessionID: SessionID,
  role: Schema.Literal("assistant"),
  time: Schema.Struct({ created: Schema.Number, completed: Schema.optional(Schema.Number) }),
  parentID: MessageID,
  providerID: Schema.String,
  modelID: Schema.String,
  agent: Schema.String,
  /** Deprecated alias of `agent`, kept for OpenCode clients. */
  mode: Schema.String,
  path: Schema.Struct({ cwd: Schema.String, root: Schema.String }),
  summary: Schema.optional(Schema.Boolean),
  cost: Schema.Number,
  tokens: TokenUsage,
  error: Schema.optional(MessageError),
  finish: Schema.optional(FinishReason),
  variant: Schema.optional(Schema.String)
})
export type AssistantMessage = typeof AssistantMessage.Type

export const Message = Schema.Union(UserMessage, AssistantMessage)
export type Message = typeof Message.Type

const ToolTimeRange = Schema.Struct({ start: Schema.Number, end: Schema.Number })

export const FilePartSource = Schema.Struct({
  type: Schema.Literal("file", "resource"),
  path: Schema.optional(Schema.String),
  uri: Schema.optional(Schema.String),
  clientName: Schema.optional(Schema.String)
})

export const FilePart = Schema.Struct({
  id: PartID,
  sessionID: SessionID,
  messageID: MessageID,
  type: Schema.Literal("file"),
  mime: Schema.String,
  filename: Schema.optional(Schema.String),
  url: Schema.String,
  source: Schema.optional(FilePartSource)
})
export type FilePart = typeof FilePart.Type

export const ToolStatePending = Schema.Struct({
  status: Schema.Literal("pending"),
  input: Metadata,
  raw: Schema.String
})

export const ToolStateRunning = Schema.Struct({
  status: Schema.Literal("running"),
  input: Metadata,
  title: Schema.optional(Schema.String),
  metadata: Schema.optional(Metadata),
  time: Schema.Struct({ start: Schema.Number })
})

export const ToolStateCompleted = Schema.Struct({
  status: Schema.Literal("completed"),
  input: Metadata,
  output: Schema.String,
  title: Schema.String,
  metadata: Metadata,
  time: Schema.Struct({ start: Schema.Number, end: Schema.Number, compacted: Schema.optional(Schema.Number) }),
  attachments: Schema.optional(Schema.Array(FilePart))
})

export const ToolStateError = Schema.Struct({
  status: Schema.Literal("error"),
  input: Metadata,
  error: Schema.String,
  metadata: Schema.optional(Metadata),
  time: ToolTimeRange
})

export const ToolState = Schema.Union(ToolStatePending, ToolStateRunning, ToolStateCompleted, ToolStateError)
export type ToolState = typeof ToolState.Type

const PartBase = {
  id: PartID,
  sessionID: SessionID,
  messageID: MessageID
}

export const TextPart = Schema.Struct({
  ...PartBase,
  type: Schema.Literal("text"),
  text: Schema.String,
  synthetic: Schema.optional(Schema.Boolean),
  ignored: Schema.optional(Schema.Boolean),
  time: Schema.optional(Schema.Struct({ start: Schema.Number, end: Schema.optional(Schema.Number) })),
  metadata: Schema.optional(Metadata)
})
export type TextPart = typeof TextPart.Type

export const ReasoningPart = Schema.Struct({
  ...PartBase,
  type: Schema.Literal("reasoning"),
  text: Schema.String,
  metadata: Schema.optional(Metadata),
  time: Schema.Struct({ start: Schema.Number, end: Schema.optional(Schema.Number) })
})

export const ToolPart = Schema.Struct({
  ...PartBase,
  type: Schema.Literal("tool"),
  callID: Schema.String,
  tool: Schema.String,
  state: ToolState,
  metadata: Schema.optional(Metadata)
})
export type ToolPart = typeof ToolPart.Type

export const StepStartPart = Schema.Struct({
  ...PartBase,
  type: Schema.Literal("step-start"),
  snapshot: Schema.optional(Schema.String)
})

export const StepFinishPart = Schema.Struct({
  ...PartBase,
  type: Schema.Literal("step-finish"),
  reason: Schema.String,
  snapshot: Schema.optional(Schema.String),
  cost: Schema.Number,
  tokens: TokenUsage
})

export const SnapshotPart = Schema.Struct({
  ...PartBase,
  type: Schema.Literal("snapshot"),
  snapshot: Schema.String
})

export const PatchPart = Schema.Struct({
  ...PartBase,
  type: Schema.Literal("patch"),
  hash: Schema.String,
  files: Schema.Array(Schema.String)
})

export const AgentPart = Schema.Struct({
  ...PartBase,
  type: Schema.Literal("agent"),
  name: Schema.String,
  source: Schema.optional(Schema.Struct({ value: Schema.String, start: Schema.Number, end: Schema.Number }))
})

export const SubtaskPart = Schema.Struct({
  ...PartBase,
  type: Schema.Literal("subtask"),
  prompt: Schema.String,
  description: Schema.String,
  agent: Schema.String,
  model: Schema.optional(Schema.Struct({ providerID: Schema.String, modelID: Schema.String })),
  command: Schema.optional(Schema.String)
})

export const RetryPart = Schema.Struct({
  ...PartBase,
  type: Schema.Literal("retry"),
  attempt: Schema.Number,
  error: MessageError,
  time: Schema.Struct({ created: Schema.Number })
})

export const CompactionPart = Schema.Struct({
  ...PartBase,
  type: Schema.Literal("compaction"),
  auto: Schema.Boolean,
  overflow: Schema.optional(Schema.Boolean),
  tail_start_id: Schema.optional(MessageID)
})

export const Part = Schema.Union(
  TextPart,
  ReasoningPart,
  FilePart,
  ToolPart,
  StepStartPart,
  StepFinishPart,
  SnapshotPart,
  PatchPart,
  AgentPart,
  SubtaskPart,
  RetryPart,
  CompactionPart
)
export type Part = typeof Part.Type
export type PartType = Part["type"]

export const MessageWithParts = Schema.Struct({
  info: Message,
  parts: Schema.Array(Part)
})
export type MessageWithParts = typeof MessageWithParts.Type
