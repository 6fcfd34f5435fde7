// What the editor has been shown of a session, as an explicit value, and the bus events that
// change it turned into ACP `session/update`s. Text reaches the editor once: deltas as they come,
// and from a part's full text only what no delta carried.
import type { BusEvent, MessageID, PartID, ToolPart } from "@agent/domain"
import type * as Acp from "@agentclientprotocol/sdk"
import { planOf, toolCallOf, toolCallUpdateOf } from "./AcpTranslate.js"

export interface ViewState {
  /** The role of each message seen: only the assistant's text is streamed (the user's is the prompt). */
  readonly roles: Map<MessageID, "user" | "assistant">
  /** Text and reasoning parts, and how many characters of each were sent. */
  readonly texts: Map<PartID, { readonly kind: "text" | "reasoning"; sent: number }>
  /** Tool calls already announced with `tool_call`, with the status last sent (later states are `tool_call_update`s). */
  readonly calls: Map<string, ToolPart["state"]["status"]>
}

export const makeView = (): ViewState => ({ roles: new Map(), texts: new Map(), calls: new Map() })

const chunk = (kind: "text" | "reasoning", text: string, messageID: MessageID): Acp.SessionUpdate => ({
  sessionUpdate: kind === "text" ? "agent_message_chunk" : "agent_thought_chunk",
  content: { type: "text", text },
  messageId: messageID
})

/** The updates one event of the session makes (none for most). Updates `view`. */
export const updatesOf = (view: ViewState, event: BusEvent, directory: string): Array<Acp.SessionUpdate> => {
  switch (event.type) {
    case "message.updated":
      view.roles.set(event.properties.info.id, event.properties.info.role)
      return []
    case "message.part.updated": {
      const part = event.properties.part
      if (view.roles.get(part.messageID) !== "assistant") return []
      if (part.type === "text" || part.type === "reasoning") {
        if (part.type === "text" && part.synthetic) return []
        const seen = view.texts.get(part.id) ?? { kind: part.type, sent: 0 }
        view.texts.set(part.id, seen)
        if (part.text.length <= seen.sent) return []
        const rest = part.text.slice(seen.sent)
        seen.sent = part.text.length
        return [chunk(part.type, rest, part.messageID)]
      }
      if (part.type === "tool") {
        const sent = view.calls.get(part.callID)
        view.calls.set(part.callID, part.state.status)
        if (sent === undefined) return [toolCallOf(part, directory)]
        // The model still streams the call's arguments: nothing the editor can show yet.
        if (sent === "pending" && part.state.status === "pending") return []
        return [toolCallUpdateOf(part, directory)]
      }
      return []
    }
    case "message.part.delta": {
      const { partID, field, delta, messageID } = event.properties
      const seen = view.texts.get(partID)
      if (seen === undefined || field !== "text" || delta === "") return []
      seen.sent += delta.length
      return [chunk(seen.kind, delta, messageID)]
    }
    case "todo.updated":
      return [planOf(event.properties.todos)]
    default:
      return []
  }
}
