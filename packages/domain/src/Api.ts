// Over 500 lines: the whole HTTP API, its bodies and groups, is one declaration the server and its client derive from.
/**
 * The HTTP API of `agent serve`, shared by the server (which implements it) and the
 * CLI's `--attach` client (which derives a typed client from it). Paths, bodies and
 * response shapes follow OpenCode's server, so `@opencode-ai/sdk` works against it.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Schema } from "effect"
import { Agent, ModelRef } from "./Agent.js"
import { RemoteAskBody, RemoteAskStream } from "./Approval.js"
import { CommandInfo, CommandInput } from "./Command.js"
import { Config } from "./Config.js"
import { McpServerStatus, QuestionRequest, Todo } from "./Event.js"
import { MessageID, PartID, PermissionID, SessionID } from "./Ids.js"
import { MessageWithParts } from "./Message.js"
import { PermissionReply, PermissionRequest, PermissionRule, PermissionRuleset } from "./Permission.js"
import { FileDiff, Session, SessionStatus } from "./Session.js"

// --- errors, in OpenCode's `{name, data: {message}}` shape ------------------------------------

export class NotFoundError extends Schema.TaggedError<NotFoundError>()(
  "NotFoundError",
  { name: Schema.Literal("NotFoundError"), data: Schema.Struct({ message: Schema.String }) },
  HttpApiSchema.annotations({ status: 404 })
) {
  static of(message: string) {
    return new NotFoundError({ name: "NotFoundError", data: { message } })
  }
  override get message() {
    return this.data.message
  }
}

export class BadRequestError extends Schema.TaggedError<BadRequestError>()(
  "BadRequest",
  { name: Schema.Literal("BadRequest"), data: Schema.Struct({ message: Schema.String }) },
  HttpApiSchema.annotations({ status: 400 })
) {
  static of(message: string) {
    return new BadRequestError({ name: "BadRequest", data: { message } })
  }
  override get message() {
    return this.data.message
  }
}

/**
 * The permission rules do not allow what the request asks the server to do for it (read a
 * file for a prompt), or the request did not come from a host or origin the server serves.
 */
export class ForbiddenError extends Schema.TaggedError<ForbiddenError>()(
  "Forbidden",
  {
    name: Schema.Literal("Forbidden"),
    data: Schema.Struct({
      message: Schema.String,
      /** The file that may not be read. */
      path: Schema.optional(Schema.String),
      /** The rule that decided (a default ask when none matched). */
      rule: Schema.optional(PermissionRule)
    })
  },
  HttpApiSchema.annotations({ status: 403 })
) {
  static of(message: string, detail: { readonly path?: string; readonly rule?: PermissionRule } = {}) {
    return new ForbiddenError({ name: "Forbidden", data: { message, ...detail } })
  }
  override get message() {
    return this.data.message
  }
}

/** The session is running and the request needs it idle (e.g. revert). */
export class BusyError extends Schema.TaggedError<BusyError>()(
  "BusyError",
  { name: Schema.Literal("BusyError"), data: Schema.Struct({ message: Schema.String }) },
  HttpApiSchema.annotations({ status: 409 })
) {
  static of(message: string) {
    return new BusyError({ name: "BusyError", data: { message } })
  }
  override get message() {
    return this.data.message
  }
}

/** The model provider failed the request (network, rate limit, server error). */
export class ProviderFailedError extends Schema.TaggedError<ProviderFailedError>()(
  "ProviderFailedError",
  { name: Schema.Literal("ProviderFailedError"), data: Schema.Struct({ message: Schema.String }) },
  HttpApiSchema.annotations({ status: 502 })
) {
  static of(message: string) {
    return new ProviderFailedError({ name: "ProviderFailedError", data: { message } })
  }
  override get message() {
    return this.data.message
  }
}

// --- request bodies ------------------------------------------------------------------------------

const Directory = { directory: Schema.optional(Schema.String) }
const IdPath = Schema.Struct({ id: SessionID })

export const TextPartInput = Schema.Struct({
  id: Schema.optional(PartID),
  type: Schema.Literal("text"),
  text: Schema.String,
  synthetic: Schema.optional(Schema.Boolean),
  ignored: Schema.optional(Schema.Boolean)
})
export const FilePartInput = Schema.Struct({
  id: Schema.optional(PartID),
  type: Schema.Literal("file"),
  mime: Schema.String,
  filename: Schema.optional(Schema.String),
  url: Schema.String
})
export const AgentPartInput = Schema.Struct({
  id: Schema.optional(PartID),
  type: Schema.Literal("agent"),
  name: Schema.String
})
export const SubtaskPartInput = Schema.Struct({
  id: Schema.optional(PartID),
  type: Schema.Literal("subtask"),
  prompt: Schema.String,
  description: Schema.String,
  agent: Schema.String,
  model: Schema.optional(ModelRef)
})
export const PartInput = Schema.Union(TextPartInput, FilePartInput, AgentPartInput, SubtaskPartInput)
export type PartInput = typeof PartInput.Type

export const PromptBody = Schema.Struct({
  messageID: Schema.optional(MessageID),
  model: Schema.optional(ModelRef),
  agent: Schema.optional(Schema.String),
  noReply: Schema.optional(Schema.Boolean),
  system: Schema.optional(Schema.String),
  tools: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Boolean })),
  /** A lower step limit for this run than the agent's own (this runtime's addition). */
  maxSteps: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /** One of the model's `variants` (e.g. a reasoning effort) for this message. */
  variant: Schema.optional(Schema.String),
  parts: Schema.Array(PartInput)
})
export type PromptBody = typeof PromptBody.Type

export const CreateSessionBody = Schema.Struct({
  parentID: Schema.optional(SessionID),
  title: Schema.optional(Schema.String),
  agent: Schema.optional(Schema.String),
  model: Schema.optional(ModelRef),
  permission: Schema.optional(PermissionRuleset)
})

export const UpdateSessionBody = Schema.Struct({
  title: Schema.optional(Schema.String),
  permission: Schema.optional(PermissionRuleset),
  time: Schema.optional(Schema.Struct({ archived: Schema.optional(Schema.NullOr(Schema.Number)) }))
})

export const PermissionReplyBody = Schema.Struct({
  reply: PermissionReply,
  /** With `reject`: feedback for the model, which then continues instead of stopping. */
  message: Schema.optional(Schema.String)
})

// --- response bodies ---------------------------------------------------------------------------

/** The session after a revert or unrevert, with what was put back and what was left alone. */
export const RevertResponse = Schema.Struct({
  ...Session.fields,
  restored: Schema.Array(Schema.String),
  conflicts: Schema.Array(Schema.String)
})

export const Health = Schema.Struct({ healthy: Schema.Literal(true), version: Schema.String })
/** The server process's memory in bytes, as Node's `process.memoryUsage()` reports it. */
export const MemoryUsage = Schema.Struct({
  rss: Schema.Number,
  heapTotal: Schema.Number,
  heapUsed: Schema.Number,
  external: Schema.Number,
  arrayBuffers: Schema.Number
})
export const PathInfo = Schema.Struct({
  home: Schema.String,
  state: Schema.String,
  config: Schema.String,
  worktree: Schema.String,
  directory: Schema.String,
  approvals: Schema.optional(Schema.String) // where "allow always" answers are kept (this runtime's addition)
})

/** Where the system prompt's instructions come from, and what reads attached in a session. */
export const InstructionList = Schema.Struct({
  /** In the order the model sees them: files (global, project, `instructions` entries), then URLs. */
  system: Schema.Array(Schema.Struct({ source: Schema.String, kind: Schema.Literal("file", "url") })),
  /** With `?sessionID=`: package instruction files attached to that session's reads and still in its view. */
  attached: Schema.Array(Schema.String)
})

export const SkillInfo = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  /** The SKILL.md file. */
  location: Schema.String
})

/** The summary agent's account of a session. */
export const SessionSummaryText = Schema.Struct({ text: Schema.String })

const IntFromString = Schema.NumberFromString.pipe(Schema.int(), Schema.positive())

// --- groups --------------------------------------------------------------------------------------

export class SessionApi extends HttpApiGroup.make("session")
  .add(
    HttpApiEndpoint.get("list", "/session")
      .setUrlParams(Schema.Struct({
        ...Directory,
        search: Schema.optional(Schema.String),
        limit: Schema.optional(IntFromString),
        start: Schema.optional(Schema.String),
        roots: Schema.optional(Schema.String)
      }))
      .addSuccess(Schema.Array(Session))
  )
  .add(
    HttpApiEndpoint.post("create", "/session")
      .setUrlParams(Schema.Struct(Directory))
      .setPayload(CreateSessionBody)
      .addSuccess(Session)
      .addError(NotFoundError)
  )
  .add(
    HttpApiEndpoint.get("status", "/session/status")
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(Schema.Record({ key: Schema.String, value: SessionStatus }))
  )
  .add(
    HttpApiEndpoint.get("get", "/session/:id")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(Session)
      .addError(NotFoundError)
  )
  .add(
    HttpApiEndpoint.patch("update", "/session/:id")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct(Directory))
      .setPayload(UpdateSessionBody)
      .addSuccess(Session)
      .addError(NotFoundError)
  )
  .add(
    HttpApiEndpoint.del("delete", "/session/:id")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(Schema.Boolean)
      .addError(NotFoundError)
  )
  .add(
    HttpApiEndpoint.get("children", "/session/:id/children")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(Schema.Array(Session))
      .addError(NotFoundError)
  )
  .add(
    HttpApiEndpoint.get("todo", "/session/:id/todo")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(Schema.Array(Todo))
      .addError(NotFoundError)
  )
  .add(
    HttpApiEndpoint.get("diff", "/session/:id/diff")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct({ ...Directory, messageID: Schema.optional(MessageID) }))
      .addSuccess(Schema.Array(FileDiff))
      .addError(NotFoundError)
  )
  .add(
    HttpApiEndpoint.get("messages", "/session/:id/message")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct({ ...Directory, limit: Schema.optional(IntFromString), before: Schema.optional(Schema.String) }))
      .addSuccess(Schema.Array(MessageWithParts))
      .addError(NotFoundError)
  )
  .add(
    HttpApiEndpoint.post("prompt", "/session/:id/message")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct(Directory))
      .setPayload(PromptBody)
      .addSuccess(MessageWithParts)
      .addError(NotFoundError)
      .addError(BadRequestError)
      .addError(ForbiddenError)
  )
  .add(
    HttpApiEndpoint.get("message", "/session/:id/message/:messageID")
      .setPath(Schema.Struct({ id: SessionID, messageID: MessageID }))
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(MessageWithParts)
      .addError(NotFoundError)
  )
  .add(
    HttpApiEndpoint.post("promptAsync", "/session/:id/prompt_async")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct(Directory))
      .setPayload(PromptBody)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFoundError)
      .addError(BadRequestError)
      .addError(ForbiddenError)
  )
  .add(
    HttpApiEndpoint.post("abort", "/session/:id/abort")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(Schema.Boolean)
      .addError(NotFoundError)
  )
  .add(
    HttpApiEndpoint.post("fork", "/session/:id/fork")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct(Directory))
      .setPayload(Schema.Struct({ messageID: Schema.optional(MessageID) }))
      .addSuccess(Session)
      .addError(NotFoundError)
  )
  .add(
    HttpApiEndpoint.post("summarize", "/session/:id/summarize")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct(Directory))
      .setPayload(Schema.Struct({
        providerID: Schema.optional(Schema.String),
        modelID: Schema.optional(Schema.String),
        auto: Schema.optional(Schema.Boolean)
      }))
      .addSuccess(Schema.Boolean)
      .addError(NotFoundError)
      .addError(BadRequestError)
  )
  .add(
    HttpApiEndpoint.post("summary", "/session/:id/summary")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(SessionSummaryText)
      .addError(NotFoundError)
      .addError(BadRequestError)
      .addError(ProviderFailedError)
  )
  .add(
    HttpApiEndpoint.post("command", "/session/:id/command")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct(Directory))
      .setPayload(CommandInput)
      .addSuccess(MessageWithParts)
      .addError(NotFoundError)
      .addError(BadRequestError)
      .addError(ForbiddenError)
  )
  .add(
    HttpApiEndpoint.post("revert", "/session/:id/revert")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct(Directory))
      .setPayload(Schema.Struct({ messageID: MessageID, partID: Schema.optional(PartID) }))
      .addSuccess(RevertResponse)
      .addError(NotFoundError)
      .addError(BadRequestError)
      .addError(BusyError)
  )
  .add(
    HttpApiEndpoint.post("unrevert", "/session/:id/unrevert")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(RevertResponse)
      .addError(NotFoundError)
      .addError(BadRequestError)
      .addError(BusyError)
  )
  .add(
    HttpApiEndpoint.post("respond", "/session/:id/permissions/:permissionID")
      .setPath(Schema.Struct({ id: SessionID, permissionID: PermissionID }))
      .setUrlParams(Schema.Struct(Directory))
      .setPayload(Schema.Struct({ response: PermissionReply, message: Schema.optional(Schema.String) }))
      .addSuccess(Schema.Boolean)
      .addError(NotFoundError)
  )
{}

export class PermissionApi extends HttpApiGroup.make("permission")
  .add(
    HttpApiEndpoint.get("list", "/permission")
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(Schema.Array(PermissionRequest))
  )
  .add(
    HttpApiEndpoint.post("reply", "/permission/:requestID/reply")
      .setPath(Schema.Struct({ requestID: PermissionID }))
      .setUrlParams(Schema.Struct(Directory))
      .setPayload(PermissionReplyBody)
      .addSuccess(Schema.Boolean)
      .addError(NotFoundError)
  )
  // An ask of another process, held until answered (docs/server.md): a text/event-stream of RemoteAskFrame.
  .add(HttpApiEndpoint.post("remote", "/permission/remote").setPayload(RemoteAskBody).addSuccess(RemoteAskStream).addError(BadRequestError))
{}

export class QuestionApi extends HttpApiGroup.make("question")
  .add(
    HttpApiEndpoint.get("list", "/question")
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(Schema.Array(QuestionRequest))
  )
  .add(
    HttpApiEndpoint.post("reply", "/question/:requestID/reply")
      .setPath(Schema.Struct({ requestID: Schema.String }))
      .setUrlParams(Schema.Struct(Directory))
      .setPayload(Schema.Struct({ answers: Schema.Array(Schema.Array(Schema.String)) }))
      .addSuccess(Schema.Boolean)
      .addError(NotFoundError)
  )
  .add(
    HttpApiEndpoint.post("reject", "/question/:requestID/reject")
      .setPath(Schema.Struct({ requestID: Schema.String }))
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(Schema.Boolean)
      .addError(NotFoundError)
  )
{}

export class InstanceApi extends HttpApiGroup.make("instance")
  .add(HttpApiEndpoint.get("agents", "/agent").setUrlParams(Schema.Struct(Directory)).addSuccess(Schema.Array(Agent)))
  .add(HttpApiEndpoint.get("config", "/config").setUrlParams(Schema.Struct(Directory)).addSuccess(Config))
  .add(
    HttpApiEndpoint.get("mcp", "/mcp")
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(Schema.Record({ key: Schema.String, value: McpServerStatus }))
  )
  .add(HttpApiEndpoint.get("path", "/path").setUrlParams(Schema.Struct(Directory)).addSuccess(PathInfo))
  .add(HttpApiEndpoint.get("health", "/global/health").addSuccess(Health))
  .add(HttpApiEndpoint.get("memory", "/global/memory").addSuccess(MemoryUsage))
  .add(HttpApiEndpoint.get("commands", "/command").setUrlParams(Schema.Struct(Directory)).addSuccess(Schema.Array(CommandInfo)))
  .add(
    HttpApiEndpoint.get("instructions", "/instruction")
      .setUrlParams(Schema.Struct({ ...Directory, sessionID: Schema.optional(SessionID) }))
      .addSuccess(InstructionList)
  )
  .add(HttpApiEndpoint.get("skills", "/skill").setUrlParams(Schema.Struct(Directory)).addSuccess(Schema.Array(SkillInfo)))
{}

const McpName = Schema.Struct({ name: Schema.String })
export class McpApi extends HttpApiGroup.make("mcp")
  .add(
    HttpApiEndpoint.post("connect", "/mcp/:name/connect")
      .setPath(McpName)
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(Schema.Boolean)
      .addError(NotFoundError)
      .addError(BadRequestError)
  )
  .add(
    HttpApiEndpoint.post("disconnect", "/mcp/:name/disconnect")
      .setPath(McpName)
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(Schema.Boolean)
      .addError(NotFoundError)
      .addError(BadRequestError)
  )
  .add(
    HttpApiEndpoint.del("logout", "/mcp/:name/auth")
      .setPath(McpName)
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(Schema.Struct({ success: Schema.Literal(true), removed: Schema.Boolean }))
      .addError(NotFoundError)
      .addError(BadRequestError)
  )
{}

/** The event stream: `text/event-stream` of `{id, type, properties}` objects. */
export class EventApi extends HttpApiGroup.make("event")
  .add(
    HttpApiEndpoint.get("subscribe", "/event")
      .setUrlParams(Schema.Struct(Directory))
      .addSuccess(Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/event-stream" })))
  )
{}

export class AgentApi extends HttpApi.make("agent")
  .add(SessionApi)
  .add(PermissionApi)
  .add(QuestionApi)
  .add(InstanceApi)
  .add(McpApi)
  .add(EventApi)
{}
