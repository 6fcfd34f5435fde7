import { Schema } from "effect"

// Hooks in Claude Code's settings shape (`hooks.<Event>: [{matcher, hooks: [{type, command, timeout}]}]`),
// so hooks written for Claude Code run unchanged (docs/hooks.md).

/** The events a hook may run at, with Claude Code's names. */
export const HookEventName = Schema.Literal(
  "SessionStart",
  "SessionEnd",
  "UserPromptSubmit",
  "PreToolUse",
  "PermissionRequest",
  "PostToolUse",
  "PostToolUseFailure",
  "Stop",
  "SubagentStop",
  "PreCompact",
  "Notification"
)
export type HookEventName = typeof HookEventName.Type
export const HookEventNames: ReadonlyArray<HookEventName> = HookEventName.literals

/** Seconds; Claude Code's default is 60. */
const Timeout = Schema.Number.pipe(Schema.positive())

/** A shell command: the event's JSON on stdin, its answer in the exit code, stdout and stderr. */
export const CommandHook = Schema.Struct({
  type: Schema.Literal("command"),
  command: Schema.String.pipe(Schema.minLength(1)),
  timeout: Schema.optional(Timeout),
  statusMessage: Schema.optional(Schema.String)
})
export type CommandHook = typeof CommandHook.Type

/** A URL the event's JSON is POSTed to; a 2xx body is read as a command's stdout. */
export const HttpHook = Schema.Struct({
  type: Schema.Literal("http"),
  url: Schema.String.pipe(Schema.pattern(/^https?:\/\//)),
  /** `$VAR` / `${VAR}` in a value is replaced only for the variables `allowedEnvVars` names. */
  headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  allowedEnvVars: Schema.optional(Schema.Array(Schema.String)),
  timeout: Schema.optional(Timeout),
  statusMessage: Schema.optional(Schema.String)
})
export type HttpHook = typeof HttpHook.Type

export const HookHandler = Schema.Union(CommandHook, HttpHook)
export type HookHandler = typeof HookHandler.Type

/** Handlers that run when `matcher` matches (tool name, or the event's own value); none or `*`: always. */
export const HookMatcherGroup = Schema.Struct({
  matcher: Schema.optional(Schema.String),
  hooks: Schema.Array(HookHandler)
})
export type HookMatcherGroup = typeof HookMatcherGroup.Type

const groups = Schema.optional(Schema.Array(HookMatcherGroup))

export const HooksConfig = Schema.Struct({
  SessionStart: groups,
  SessionEnd: groups,
  UserPromptSubmit: groups,
  PreToolUse: groups,
  PermissionRequest: groups,
  PostToolUse: groups,
  PostToolUseFailure: groups,
  Stop: groups,
  SubagentStop: groups,
  PreCompact: groups,
  Notification: groups
})
export type HooksConfig = typeof HooksConfig.Type

/** Where a hook came from decides whether it runs: a project's hooks wait until the project is trusted. */
export const HookScope = Schema.Literal("user", "project", "managed")
export type HookScope = typeof HookScope.Type
