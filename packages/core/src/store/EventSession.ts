import type { BusEvent } from "@agent/domain"

/**
 * The session an event is about, or undefined for an event of the process (MCP status, a file
 * edited outside a run): the stream whose sequence number the event log gives it. Session events
 * carry the session in `info.id`, messages in `info.sessionID`, parts in `part.sessionID`, the
 * rest in `sessionID`.
 */
export const sessionOf = (event: BusEvent): string | undefined => {
  switch (event.type) {
    case "session.created":
    case "session.updated":
    case "session.deleted":
      return event.properties.info.id
    case "message.updated":
      return event.properties.info.sessionID
    case "message.part.updated":
      return event.properties.part.sessionID
    default: {
      const owner = (event.properties as { readonly sessionID?: unknown }).sessionID
      return typeof owner === "string" ? owner : undefined
    }
  }
}
