// The session as an @effect/cluster entity: what may be sent to the replica that owns a session.
// A prompt is persisted (SqlMessageStorage): it reaches the owner, and a new owner after a failover
// gets it again. Aborts and replies to a person's ask are not: they matter only to the run in
// progress, which a dead owner no longer has.
import { ModelNotConfigured, QuestionNotFound } from "@agent/core"
import { SessionUnavailable } from "./SessionRouting.js"
import {
  AgentNotFound,
  MessageError,
  MessageID,
  ModelRef,
  PartID,
  PermissionReply,
  PermissionRequestNotFound,
  RevertError,
  SessionID,
  SessionNotFound
} from "@agent/domain"
import * as ClusterSchema from "@effect/cluster/ClusterSchema"
import * as Entity from "@effect/cluster/Entity"
import * as Rpc from "@effect/rpc/Rpc"
import { Schema } from "effect"

/** A prompt's parts as the server made them (PromptParts.ts): text, files read, agents, subtasks. */
const PromptPart = Schema.Record({ key: Schema.String, value: Schema.Unknown })

export const PromptPayload = Schema.Struct({
  sessionID: SessionID,
  messageID: MessageID,
  parts: Schema.Array(PromptPart),
  agent: Schema.optional(Schema.String),
  model: Schema.optional(ModelRef),
  variant: Schema.optional(Schema.String),
  system: Schema.optional(Schema.String),
  noReply: Schema.optional(Schema.Boolean),
  tools: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Boolean })),
  autoApprove: Schema.optional(Schema.Boolean),
  maxSteps: Schema.optional(Schema.Number)
})
export type PromptPayload = typeof PromptPayload.Type

/** A prompt's optional settings, the same on the loop's input and on the entity's message. */
const PROMPT_OPTIONS = ["agent", "model", "variant", "system", "noReply", "tools", "autoApprove", "maxSteps"] as const
type PromptOption = (typeof PROMPT_OPTIONS)[number]

/** The optional settings that are set, copied from a prompt (an unset one stays absent rather than `undefined`). */
export const promptOptions = <T extends { readonly [K in PromptOption]?: unknown }>(
  input: T
): { [K in PromptOption]?: Exclude<T[K], undefined> } => {
  const options: Partial<Record<PromptOption, unknown>> = {}
  for (const key of PROMPT_OPTIONS) if (input[key] !== undefined) options[key] = input[key]
  return options as { [K in PromptOption]?: Exclude<T[K], undefined> }
}

/** How the run ended; the answer itself is in the store, where any replica reads it. */
export const PromptResult = Schema.Struct({
  reason: Schema.Literal("completed", "rejected", "error", "aborted", "steps", "duration", "stall", "budget"),
  error: Schema.optional(MessageError),
  usage: Schema.Struct({ cost: Schema.Number, tokens: Schema.Number, steps: Schema.Number }),
  /** The replica that ran it (`host:port` of its runner). */
  runner: Schema.String
})
export type PromptResult = typeof PromptResult.Type

export const Prompt = Rpc.make("Prompt", {
  payload: PromptPayload,
  success: PromptResult,
  error: Schema.Union(SessionNotFound, AgentNotFound, ModelNotConfigured, SessionUnavailable)
})
  .annotate(ClusterSchema.Persisted, true)
  // A client that goes away (an HTTP prompt cut off) leaves the run going, as one process does.
  .annotate(ClusterSchema.Uninterruptible, "client")

export const Abort = Rpc.make("Abort", { payload: { sessionID: SessionID } })

export const ReplyPermission = Rpc.make("ReplyPermission", {
  payload: { requestID: Schema.String, reply: PermissionReply, message: Schema.optional(Schema.String) },
  error: PermissionRequestNotFound
})

export const ReplyQuestion = Rpc.make("ReplyQuestion", {
  payload: { requestID: Schema.String, answers: Schema.Array(Schema.Array(Schema.String)) },
  error: QuestionNotFound
})

export const RejectQuestion = Rpc.make("RejectQuestion", { payload: { requestID: Schema.String }, error: QuestionNotFound })

/**
 * A compaction (`POST /session/:id/summarize`) is a run: the owner runs it after the run in
 * progress. Not persisted: if the owner dies meanwhile, the sender tries the next owner.
 */
export const Compact = Rpc.make("Compact", {
  payload: { sessionID: SessionID },
  success: PromptResult,
  error: Schema.Union(SessionNotFound, AgentNotFound, ModelNotConfigured, SessionUnavailable)
})

/** What a revert or unrevert put back; the session itself is read from the store. */
export const RevertResult = Schema.Struct({ restored: Schema.Array(Schema.String), conflicts: Schema.Array(Schema.String) })

/** Revert and unrevert refuse a running session: only the owner knows whether it runs. */
export const Revert = Rpc.make("Revert", {
  payload: { sessionID: SessionID, messageID: MessageID, partID: Schema.optional(PartID) },
  success: RevertResult,
  error: Schema.Union(RevertError, SessionNotFound, SessionUnavailable)
})

export const Unrevert = Rpc.make("Unrevert", {
  payload: { sessionID: SessionID },
  success: RevertResult,
  error: Schema.Union(RevertError, SessionNotFound, SessionUnavailable)
})

export const SessionEntity = Entity.make("AgentSession", [
  Prompt,
  Abort,
  ReplyPermission,
  ReplyQuestion,
  RejectQuestion,
  Compact,
  Revert,
  Unrevert
])
