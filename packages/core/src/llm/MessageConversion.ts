import type { Message, Part } from "@agent/domain"
import type { AssistantContent, ModelMessage, ToolContent, UserContent } from "ai"
import * as Prompts from "../runtime/Prompts.js"

/** A message as the loop holds it in memory: parts grow while the step streams. */
export interface LiveMessage {
  info: Message
  parts: Array<Part>
}

export const INTERRUPTED_OUTPUT = "[Tool execution was interrupted]"
export const CLEARED_OUTPUT = "[Old tool result content cleared]"

/**
 * What the model sees of an interrupted call: the output it had produced so far (the tool's
 * live preview, already capped), then always the marker, so it never mistakes a cut-off
 * output (or an empty one) for a finished call.
 */
export const interruptedOutput = (partial: unknown) =>
  typeof partial === "string" && partial.trim() !== "" ? `${partial.trimEnd()}\n\n${INTERRUPTED_OUTPUT}` : INTERRUPTED_OUTPUT

/** Wraps a message the user sent while the agent was working, so the model notices it. */
export const midRunReminder = (text: string) => Prompts.read("session/mid-run.txt").replace("{message}", text)

const userContent = (parts: ReadonlyArray<Part>, wrap: boolean): UserContent => {
  const content: Exclude<UserContent, string> = []
  for (const part of parts) {
    if (part.type === "text") {
      if (part.ignored || part.text === "") continue
      content.push({ type: "text", text: wrap && !part.synthetic ? midRunReminder(part.text) : part.text })
    } else if (part.type === "compaction") {
      content.push({ type: "text", text: Prompts.read("session/compaction-question.txt") })
    } else if (part.type === "file") {
      if (part.mime === "text/plain" || part.mime === "application/x-directory") continue
      // An MCP resource reaches the model as the parts its content was read into, not by its URI.
      if (part.source?.type === "resource") continue
      content.push({ type: "file", data: part.url, mediaType: part.mime, ...(part.filename ? { filename: part.filename } : {}) })
    }
  }
  return content
}

/** One assistant message → the assistant turn plus the tool results that answer its calls. */
const assistantMessages = (parts: ReadonlyArray<Part>): Array<ModelMessage> => {
  const content: Exclude<AssistantContent, string> = []
  const results: ToolContent = []
  for (const part of parts) {
    switch (part.type) {
      case "text":
        if (part.text !== "") content.push({ type: "text", text: part.text })
        break
      case "reasoning":
        if (part.text !== "") content.push({ type: "reasoning", text: part.text })
        break
      case "tool": {
        content.push({ type: "tool-call", toolCallId: part.callID, toolName: part.tool, input: part.state.input })
        const state = part.state
        const output =
          state.status === "completed"
            ? { type: "text" as const, value: state.time.compacted ? CLEARED_OUTPUT : state.output }
            : state.status === "error"
            ? state.metadata?.interrupted === true
              ? { type: "text" as const, value: interruptedOutput(state.metadata.output) }
              : { type: "error-text" as const, value: state.error }
            : { type: "text" as const, value: INTERRUPTED_OUTPUT }
        results.push({ type: "tool-result", toolCallId: part.callID, toolName: part.tool, output })
        break
      }
    }
  }
  if (content.length === 0) return []
  const turn: Array<ModelMessage> = [{ role: "assistant", content }]
  if (results.length > 0) turn.push({ role: "tool", content: results })
  return turn
}

/**
 * Converts a message for the model. Finished messages never change, so their conversion is
 * cached: each step only converts what is new, however long the session is.
 */
export class ModelMessageCache {
  private readonly cache = new Map<string, ReadonlyArray<ModelMessage>>()

  convert(message: LiveMessage, options: { readonly wrapUserText: boolean }): ReadonlyArray<ModelMessage> {
    const finished = message.info.role === "user" ? !options.wrapUserText : message.info.time.completed !== undefined
    const key = message.info.id
    if (finished) {
      const hit = this.cache.get(key)
      if (hit) return hit
    }
    const converted: ReadonlyArray<ModelMessage> =
      message.info.role === "user"
        ? (() => {
          const content = userContent(message.parts, options.wrapUserText)
          return content.length === 0 ? [] : [{ role: "user" as const, content }]
        })()
        : assistantMessages(message.parts)
    if (finished) this.cache.set(key, converted)
    return converted
  }

  forget(messageID: string) {
    this.cache.delete(messageID)
  }
}
