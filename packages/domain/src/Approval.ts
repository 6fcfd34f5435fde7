// Approvals when nobody is at the terminal: the remote approver, notifications, and who decided a denial.
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Schema } from "effect"
import { PermissionID, SessionID } from "./Ids.js"
import { PermissionReply, PermissionToolRef, RuleLayer } from "./Permission.js"

const PositiveInt = Schema.Int.pipe(Schema.positive())

const HttpUrl = Schema.String.pipe(
  Schema.filter((value) => /^https?:\/\/[^\s]+$/.test(value), {
    message: (issue) => `expected an http:// or https:// URL, actual ${JSON.stringify(issue.actual)}`
  })
)

/** What an ask that no approver answered becomes: `deny` (exit 3, as without an approver) or `allow`. */
export const ApproverFallback = Schema.Literal("deny", "allow")
export type ApproverFallback = typeof ApproverFallback.Type

/**
 * `permission.approver`: who answers an ask of a run nobody watches. A string is the URL of an
 * `agent serve` (credentials as `user:password@` in it, or AGENT_SERVER_USERNAME / _PASSWORD).
 */
export const ApproverConfig = Schema.Union(
  HttpUrl,
  Schema.Struct({
    /** An `agent serve` that holds the ask as one of its own until someone answers it. */
    url: Schema.optional(HttpUrl),
    /** POSTed every ask (ApprovalWebhookBody); its response may answer (`{reply, message}`). */
    webhook: Schema.optional(HttpUrl),
    /** Headers of the webhook's POST (a token, ...). */
    headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
    /** Seconds to wait for an answer (default 300). */
    timeout: Schema.optional(PositiveInt),
    /** What an unanswered ask becomes (default `deny`). */
    fallback: Schema.optional(ApproverFallback)
  })
)
export type ApproverConfig = typeof ApproverConfig.Type

/** What `notify` posts about. */
export const NotifyEvent = Schema.Literal("permission.asked", "run.finished", "run.limit")
export type NotifyEvent = typeof NotifyEvent.Type

/** One webhook of `notify`: a URL, or the URL with the events it wants and the shape of its body. */
export const NotifyTarget = Schema.Union(
  HttpUrl,
  Schema.Struct({
    url: HttpUrl,
    /** Default: all of them. */
    events: Schema.optional(Schema.Array(NotifyEvent)),
    /**
     * The body as text with `{{field}}` placeholders (`{{title}}`, `{{message}}`, `{{event}}`, `{{session}}`,
     * `{{link}}`, ...); default: the notification as JSON.
     */
    template: Schema.optional(Schema.String),
    headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
    /** Attempts after the first (default 3), with doubling waits from 500 ms. */
    retries: Schema.optional(Schema.Int.pipe(Schema.nonNegative()))
  })
)
export type NotifyTarget = typeof NotifyTarget.Type

export const NotifyConfig = Schema.Union(NotifyTarget, Schema.Array(NotifyTarget))
export type NotifyConfig = typeof NotifyConfig.Type

/**
 * Who decided that a tool call may not run, as the `result` event's `permission_denials` and the
 * `permission.denied` event say it. `hook` is filled by PermissionRequest/PreToolUse hooks.
 */
export const DecidedBy = Schema.Union(
  Schema.Struct({
    type: Schema.Literal("rule"),
    layer: Schema.optional(RuleLayer),
    permission: Schema.String,
    pattern: Schema.String,
    /** The file that set the rule, and its key. */
    file: Schema.optional(Schema.String),
    key: Schema.optional(Schema.String)
  }),
  Schema.Struct({
    type: Schema.Literal("hook"),
    event: Schema.optional(Schema.String),
    command: Schema.optional(Schema.String),
    reason: Schema.optional(Schema.String)
  }),
  Schema.Struct({
    type: Schema.Literal("person"),
    /** Where they answered: the terminal, an `agent serve`, a webhook. */
    via: Schema.Literal("terminal", "server", "webhook"),
    message: Schema.optional(Schema.String)
  }),
  /** The approver did not answer in time: the fallback decided. */
  Schema.Struct({ type: Schema.Literal("timeout"), seconds: Schema.Number }),
  /** The approver could not be reached (or went away): the fallback decided. */
  Schema.Struct({ type: Schema.Literal("unavailable"), error: Schema.String }),
  /** No terminal and no approver: rejected, as a headless run always did. */
  Schema.Struct({ type: Schema.Literal("headless") })
)
export type DecidedBy = typeof DecidedBy.Type

/** `POST /permission/remote`: an ask of another process (`agent run --approver`) for this server's people. */
export const RemoteAskBody = Schema.Struct({
  /** The asking run's session (in its own database). */
  sessionID: SessionID,
  permission: Schema.String,
  patterns: Schema.Array(Schema.String),
  always: Schema.Array(Schema.String),
  metadata: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  tool: Schema.optional(PermissionToolRef),
  /** Seconds the server holds the ask before it answers `timeout` (default 300, at most a day). */
  timeout: Schema.optional(PositiveInt.pipe(Schema.lessThanOrEqualTo(86_400))),
  /** Where the run is, shown to whoever answers. */
  directory: Schema.optional(Schema.String)
})
export type RemoteAskBody = typeof RemoteAskBody.Type

/** The `text/event-stream` frames of `POST /permission/remote`, in order: `asked`, then one end. */
export const RemoteAskFrame = Schema.Union(
  Schema.Struct({ type: Schema.Literal("asked"), id: PermissionID }),
  Schema.Struct({ type: Schema.Literal("replied"), reply: PermissionReply, message: Schema.optional(Schema.String) }),
  Schema.Struct({ type: Schema.Literal("timeout") })
)
export type RemoteAskFrame = typeof RemoteAskFrame.Type

/** The response of `POST /permission/remote`: `data: <RemoteAskFrame>` lines, and `: keep-alive` comments. */
export const RemoteAskStream = Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/event-stream" }))

/** The webhook approver's POST body (docs/permissions.md). */
export interface ApprovalWebhookBody {
  readonly type: "permission.asked"
  /** The ask's id in the run. */
  readonly id: string
  readonly sessionID: string
  readonly directory: string
  readonly permission: string
  readonly patterns: ReadonlyArray<string>
  readonly always: ReadonlyArray<string>
  /** One line: the command, the file, the URL. */
  readonly summary: string
  /** The change an edit would make, when the tool says it. */
  readonly diff?: string
  /** `<server>/permission/<id>` when an `agent serve` holds the ask too; `null` otherwise. */
  readonly link: string | null
  /** `<server>/permission/<id>/reply` (the server's reply route), or `null`. */
  readonly reply_url: string | null
  readonly timeout: number
  /** Epoch ms after which the fallback answers. */
  readonly expires: number
}

/** What a webhook approver may answer in its response body. */
export const WebhookAnswer = Schema.Struct({
  reply: Schema.optional(PermissionReply),
  message: Schema.optional(Schema.String)
})
export type WebhookAnswer = typeof WebhookAnswer.Type
