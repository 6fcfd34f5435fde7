// What a replica does with a prompt it is given (a pure decision, table-tested): a new prompt runs;
// a prompt already stored was started by an owner that died or stopped, so its run is resumed —
// unless that run had already ended, when nothing runs again.
import type { MessageWithParts } from "@agent/domain"

export type PromptAction = "prompt" | "resume" | "done"

export const promptAction = (
  messages: ReadonlyArray<MessageWithParts>,
  input: { readonly messageID: string; readonly noReply?: boolean | undefined }
): PromptAction => {
  const index = messages.findIndex((message) => message.info.id === input.messageID)
  if (index === -1) return "prompt"
  if (input.noReply) return "done"
  const last = messages.at(-1)!.info
  // The run ended when its last message is an answer the model finished (not one cut off mid-step
  // or waiting on tool results). A newer user message means a later prompt owns the rest.
  if (last.role === "user") return last.id === input.messageID ? "resume" : "done"
  // A run stopped for the handover (a graceful stop aborts it) goes on here.
  if (last.error?.name === "MessageAbortedError") return "resume"
  if (last.error !== undefined) return "done"
  if (last.time.completed !== undefined && last.finish !== undefined && last.finish !== "tool-calls") return "done"
  return "resume"
}
