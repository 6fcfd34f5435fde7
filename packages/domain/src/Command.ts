import { Schema } from "effect"
import { MessageID } from "./Ids.js"

/** Where a command comes from: built in, the user's config (JSON or markdown), or an MCP server's prompt. */
export const CommandSource = Schema.Literal("builtin", "config", "mcp")
export type CommandSource = typeof CommandSource.Type

/** A command the user can run on a session (`agent run --command`, `POST /session/{id}/command`). */
export const CommandInfo = Schema.Struct({
  name: Schema.String,
  description: Schema.optional(Schema.String),
  /** The agent that runs it (default: the session's). */
  agent: Schema.optional(Schema.String),
  /** `provider/model` (default: the agent's, else the session's). */
  model: Schema.optional(Schema.String),
  /** Run it as a subagent in a child session instead of a prompt on the session. */
  subtask: Schema.optional(Schema.Boolean),
  source: CommandSource,
  /** The template text; MCP prompts have none until the server renders them. */
  template: Schema.optional(Schema.String),
  /** The arguments it takes: `$1`, `$2`, `$ARGUMENTS` in a template, argument names for an MCP prompt. */
  hints: Schema.Array(Schema.String),
  /** The file that defined it, when it came from configuration. */
  file: Schema.optional(Schema.String)
})
export type CommandInfo = typeof CommandInfo.Type

/** The body of `POST /session/{id}/command`. */
export const CommandInput = Schema.Struct({
  command: Schema.String,
  /** Everything after the command name, as the user typed it (quotes group words). */
  arguments: Schema.optionalWith(Schema.String, { default: () => "" }),
  /** The session's agent for this message (a subtask command's subagent is its own). */
  agent: Schema.optional(Schema.String),
  /** `provider/model` for this message. */
  model: Schema.optional(Schema.String),
  messageID: Schema.optional(MessageID),
  /** A lower step limit for this run than the agent's own (this runtime's addition). */
  maxSteps: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /** One of the model's `variants` for this message. */
  variant: Schema.optional(Schema.String)
})
export type CommandInput = typeof CommandInput.Type

export class CommandNotFound extends Schema.TaggedError<CommandNotFound>()("CommandNotFound", {
  name: Schema.String,
  available: Schema.Array(Schema.String)
}) {
  override get message() {
    return `Command "${this.name}" not found. Available commands: ${this.available.join(", ") || "none"}`
  }
}

/** A command could not be turned into a message: bad arguments, a bad model, a failing MCP prompt. */
export class CommandError extends Schema.TaggedError<CommandError>()("CommandError", {
  command: Schema.String,
  detail: Schema.String,
  /** The permission rules do not allow a file the arguments name to be read. */
  forbidden: Schema.optional(Schema.Boolean)
}) {
  override get message() {
    return `Command "${this.command}": ${this.detail}`
  }
}
