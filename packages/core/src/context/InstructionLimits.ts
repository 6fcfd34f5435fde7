// How much of the instruction files (AGENTS.md, CLAUDE.md, `instructions` entries) goes into
// every request: a cap per file and one for all of them (`instruction_limits` in config).
import * as Prompts from "../runtime/Prompts.js"

/** Per file or URL. Codex stops at 32 KiB for all its project docs together; a file here may hold twice that. */
export const DEFAULT_MAX_BYTES = 64 * 1024
/** All of them together: a deep package path or a glob may bring many files. */
export const DEFAULT_MAX_TOTAL_BYTES = 256 * 1024

export interface InstructionLimits {
  readonly maxBytes: number
  readonly maxTotalBytes: number
}

export const fromConfig = (config: { readonly max_bytes?: number | undefined; readonly max_total_bytes?: number | undefined } | undefined): InstructionLimits => ({
  maxBytes: config?.max_bytes ?? DEFAULT_MAX_BYTES,
  maxTotalBytes: config?.max_total_bytes ?? DEFAULT_MAX_TOTAL_BYTES
})

/** An instruction text as read: possibly only the start of a larger file. */
export interface Sized {
  readonly source: string
  readonly text: string
  /** Bytes of the whole file or URL content. */
  readonly size: number
}

/** What was left out of one entry, and which cap left it out. */
export interface Cut {
  readonly source: string
  readonly size: number
  readonly kept: number
  readonly limit: string
}

/** The first `bytes` bytes of `text` (UTF-8), never ending inside a character. */
export const headBytes = (text: string, bytes: number): string => {
  // Every character takes at least one byte: the first `bytes` characters hold the first `bytes` bytes.
  const head = text.length > bytes ? text.slice(0, bytes).replace(/[\uD800-\uDBFF]$/, "") : text
  const buffer = Buffer.from(head, "utf8")
  if (buffer.length <= bytes) return head
  return buffer.subarray(0, bytes).toString("utf8").replace(/\uFFFD$/, "")
}

const perFile = (limits: InstructionLimits) =>
  `the cap of ${limits.maxBytes} bytes per instruction file, instruction_limits.max_bytes`
const total = (limits: InstructionLimits) =>
  `the cap of ${limits.maxTotalBytes} bytes for all instruction files together, instruction_limits.max_total_bytes`

/** The note that ends a cut entry, so the model knows it did not get the whole file. */
export const cutNote = (cut: Cut): string =>
  Prompts.read("session/instructions-cut.txt")
    .replace("{source}", cut.source)
    .replace("{size}", String(cut.size))
    .replace("{kept}", String(cut.kept))
    .replace("{limit}", cut.limit)

/**
 * Fits the entries, in order, into the caps: each to `maxBytes`, all together to
 * `maxTotalBytes` (later entries get what is left, possibly nothing). A cut entry ends with
 * `cutNote`; the cuts are returned to be reported.
 */
export const fit = <E extends Sized>(entries: ReadonlyArray<E>, limits: InstructionLimits): {
  readonly entries: ReadonlyArray<E>
  readonly cuts: ReadonlyArray<Cut>
} => {
  let remaining = limits.maxTotalBytes
  const cuts: Array<Cut> = []
  const fitted = entries.map((entry) => {
    let text = entry.size > limits.maxBytes ? headBytes(entry.text, limits.maxBytes) : entry.text
    let limit = entry.size > limits.maxBytes ? perFile(limits) : undefined
    let bytes = Buffer.byteLength(text)
    if (bytes > remaining) {
      text = headBytes(text, remaining)
      bytes = Buffer.byteLength(text)
      limit = total(limits)
    }
    remaining -= bytes
    if (limit === undefined) return entry
    const cut: Cut = { source: entry.source, size: entry.size, kept: bytes, limit }
    cuts.push(cut)
    return { ...entry, text: `${text}${text ? "\n\n" : ""}${cutNote(cut)}` }
  })
  return { entries: fitted, cuts }
}
