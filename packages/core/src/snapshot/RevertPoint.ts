import type { MessageWithParts, Part, SessionRevert } from "@agent/domain"

// Which messages and parts a revert hides, and which snapshot a message ended with: pure decisions.

/** Whether a message (or one of its parts) is hidden by a revert. */
export const isHidden = (revert: SessionRevert | undefined, messageID: string, partID?: string): boolean => {
  if (!revert) return false
  if (messageID > revert.messageID) return true
  if (messageID < revert.messageID) return false
  if (revert.partID === undefined) return true
  return partID !== undefined && partID >= revert.partID
}

/** The messages and parts before the revert point. */
export const visible = (
  revert: SessionRevert | undefined,
  messages: ReadonlyArray<MessageWithParts>
): Array<MessageWithParts> =>
  messages.flatMap((message) => {
    if (!revert) return [message]
    if (message.info.id === revert.messageID && revert.partID !== undefined) {
      return [{ info: message.info, parts: message.parts.filter((part) => !isHidden(revert, message.info.id, part.id)) }]
    }
    return isHidden(revert, message.info.id) ? [] : [message]
  })

/** Snapshot ids written by steps: the one each message ended with. */
export const endSnapshot = (parts: ReadonlyArray<Part>): string | undefined => {
  let last: string | undefined
  for (const part of parts) {
    if (part.type === "step-finish" && part.snapshot) last = part.snapshot
    if (part.type === "snapshot") last = part.snapshot
  }
  return last
}
