/** One server-sent event: its `id:` (when it has one) and its `data:` lines joined. */
export interface SseFrame {
  readonly id?: string
  readonly data: string
}

/**
 * Splits what arrived on an event stream into whole events and the unfinished rest (kept for the
 * next chunk). Follows the text/event-stream rules this server uses: `id:` and `data:` fields,
 * events ended by a blank line, comments and other fields ignored.
 */
export const parseSse = (buffer: string): { readonly frames: ReadonlyArray<SseFrame>; readonly rest: string } => {
  const text = buffer.replace(/\r\n?/g, "\n")
  const blocks = text.split("\n\n")
  const rest = blocks.pop() ?? ""
  const frames: Array<SseFrame> = []
  for (const block of blocks) {
    let id: string | undefined
    const data: Array<string> = []
    for (const line of block.split("\n")) {
      if (line === "" || line.startsWith(":")) continue
      const colon = line.indexOf(":")
      const field = colon < 0 ? line : line.slice(0, colon)
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "")
      if (field === "id") id = value
      else if (field === "data") data.push(value)
    }
    if (data.length > 0) frames.push(id !== undefined ? { id, data: data.join("\n") } : { data: data.join("\n") })
  }
  return { frames, rest }
}

/**
 * What a reconnect's first numbered event says about the events missed: none (`next`, it follows
 * the last one seen), a `gap` (the server no longer had them: its replay buffer was passed) or a
 * `restart` (numbers went back: a new server process). Anything but `next` needs a fresh load.
 */
export const continuity = (lastSeen: number | undefined, id: number): "next" | "gap" | "restart" => {
  if (lastSeen === undefined || id === lastSeen + 1) return "next"
  return id <= lastSeen ? "restart" : "gap"
}
