/**
 * Newline framing of a stdio MCP server's stdout, with a bound on one line. The SDK's
 * `ReadBuffer` throws when its buffer passes 10 MB, from inside the stream's `data` handler
 * where nothing can catch it; here an oversized line is skipped and reported instead, with
 * its first and last bytes kept so the answer it carried can be told apart and failed.
 */

/** The most one message may take (the SDK's `STDIO_DEFAULT_MAX_BUFFER_SIZE`). */
export const MAX_LINE_BYTES = 10 * 1024 * 1024

/** How much of an oversized line's start and end is kept to find its JSON-RPC id. */
const EDGE_BYTES = 1024

export type StdioEvent =
  /** A complete line (without its line break); blank lines are not reported. */
  | { readonly _tag: "Line"; readonly text: string }
  /** The line being read has just passed the limit; the rest of it will be skipped. */
  | { readonly _tag: "Overflow"; readonly limit: number }
  /** An oversized line ended: its size and its edges. */
  | { readonly _tag: "Oversized"; readonly bytes: number; readonly head: string; readonly tail: string }

interface Skipping {
  bytes: number
  readonly head: Buffer
  tail: Buffer
}

/** Splits a byte stream into lines of at most `limit` bytes. */
export class StdioLines {
  private parts: Array<Buffer> = []
  private size = 0
  private skipping: Skipping | undefined

  constructor(readonly limit: number = MAX_LINE_BYTES) {}

  /** The events the chunk completes, in order. */
  push(chunk: Buffer): Array<StdioEvent> {
    const events: Array<StdioEvent> = []
    let start = 0
    while (start <= chunk.length) {
      const newline = chunk.indexOf(10, start)
      const end = newline === -1 ? chunk.length : newline
      if (end > start) this.add(chunk.subarray(start, end), events)
      if (newline === -1) break
      this.endLine(events)
      start = newline + 1
    }
    return events
  }

  /** Forgets a partial line (the stream has ended). */
  clear() {
    this.parts = []
    this.size = 0
    this.skipping = undefined
  }

  private add(piece: Buffer, events: Array<StdioEvent>) {
    const skipping = this.skipping
    if (skipping) {
      skipping.bytes += piece.length
      skipping.tail = lastBytes(skipping.tail, piece)
      return
    }
    if (this.size + piece.length <= this.limit) {
      this.parts.push(piece)
      this.size += piece.length
      return
    }
    const sofar = Buffer.concat(this.parts, this.size)
    this.skipping = {
      bytes: this.size + piece.length,
      head: Buffer.from(Buffer.concat([sofar.subarray(0, EDGE_BYTES), piece.subarray(0, EDGE_BYTES)]).subarray(0, EDGE_BYTES)),
      tail: lastBytes(sofar, piece)
    }
    this.parts = []
    this.size = 0
    events.push({ _tag: "Overflow", limit: this.limit })
  }

  private endLine(events: Array<StdioEvent>) {
    const skipping = this.skipping
    if (skipping) {
      events.push({
        _tag: "Oversized",
        bytes: skipping.bytes,
        head: skipping.head.toString("utf8"),
        tail: skipping.tail.toString("utf8").replace(/\r$/, "")
      })
    } else if (this.size > 0) {
      const text = Buffer.concat(this.parts, this.size).toString("utf8").replace(/\r$/, "")
      if (text.trim() !== "") events.push({ _tag: "Line", text })
    }
    this.clear()
  }
}

/** The last `EDGE_BYTES` of `before` followed by `piece`, copied (the chunks are not kept alive). */
const lastBytes = (before: Buffer, piece: Buffer): Buffer =>
  Buffer.from(
    piece.length >= EDGE_BYTES
      ? piece.subarray(piece.length - EDGE_BYTES)
      : Buffer.concat([before.subarray(Math.max(0, before.length - (EDGE_BYTES - piece.length))), piece])
  )

const ID = String.raw`(-?\d+|"(?:[^"\\]|\\.)*")`
const JSONRPC = String.raw`"jsonrpc"\s*:\s*"2\.0"`
/** A request or notification names its method among its first keys (`method` first, or after `jsonrpc` and `id`). */
const REQUEST_HEAD = new RegExp(String.raw`^\s*\{\s*(?:${JSONRPC}\s*,\s*)?(?:"id"\s*:\s*${ID}\s*,\s*)?"method"\s*:`)
/** `{"jsonrpc":"2.0","id":3,...` or `{"id":3,...`. */
const ID_HEAD = new RegExp(String.raw`^\s*\{\s*(?:${JSONRPC}\s*,\s*)?"id"\s*:\s*${ID}`)
/** `...,"jsonrpc":"2.0","id":3}` (how the TypeScript SDK writes its answers) or `...,"id":3}`. */
const ID_TAIL = new RegExp(String.raw`,\s*"id"\s*:\s*${ID}\s*(?:,\s*${JSONRPC}\s*)?\}\s*$`)

/**
 * The id of the answer an oversized line most likely was, from its first and last bytes: a
 * top-level `id` among the first keys or as the last key. Undefined for a request or a
 * notification from the server, and for anything else (garbage, an id buried in the middle).
 */
export const answerId = (head: string, tail: string): string | number | undefined => {
  if (REQUEST_HEAD.test(head)) return undefined
  const match = ID_HEAD.exec(head) ?? ID_TAIL.exec(tail)
  if (!match) return undefined
  const raw = match[1]!
  try {
    const id: unknown = JSON.parse(raw)
    return typeof id === "number" || typeof id === "string" ? id : undefined
  } catch {
    return undefined
  }
}

/** `11.0 MB` */
export const megabytes = (bytes: number): string => {
  const mb = bytes / (1024 * 1024)
  return Number.isInteger(mb) ? `${mb} MB` : `${mb.toFixed(1)} MB`
}
