import { Schema } from "effect"

/**
 * Prefixed, sortable identifiers: `<prefix>_` and 26 characters. Ids made here are 14 hex
 * digits of (milliseconds * 4096 + counter) and 12 base62 random characters; session ids
 * invert the time bits so that the newest session sorts first. Ids made by OpenCode
 * clients (12 hex + 14 base62) are accepted too.
 */
const prefixed = <const Brand extends string>(prefix: string, brand: Brand) =>
  Schema.String.pipe(
    Schema.pattern(new RegExp(`^${prefix}_[0-9A-Za-z]{26}$`), {
      message: () => `expected an id of the form ${prefix}_<26 chars>`
    }),
    Schema.brand(brand)
  )

export const SessionID = prefixed("ses", "SessionID")
export type SessionID = typeof SessionID.Type

export const MessageID = prefixed("msg", "MessageID")
export type MessageID = typeof MessageID.Type

export const PartID = prefixed("prt", "PartID")
export type PartID = typeof PartID.Type

export const PermissionID = prefixed("per", "PermissionID")
export type PermissionID = typeof PermissionID.Type

export const ToolOutputID = prefixed("tool", "ToolOutputID")
export type ToolOutputID = typeof ToolOutputID.Type

export const EventID = prefixed("evt", "EventID")
export type EventID = typeof EventID.Type

export const ProjectID = Schema.String.pipe(Schema.minLength(1), Schema.brand("ProjectID"))
export type ProjectID = typeof ProjectID.Type

export const IdPrefix = {
  session: "ses",
  message: "msg",
  part: "prt",
  permission: "per",
  toolOutput: "tool",
  event: "evt",
  question: "que"
} as const
export type IdKind = keyof typeof IdPrefix
