import { isUtf8 } from "node:buffer"

/**
 * How the file tools turn a file's bytes into text and back. A file that is valid UTF-8 is
 * UTF-8. Any other file is Latin-1: one character (U+0000–U+00FF) per byte, so every byte
 * survives the round trip and an edit changes only the bytes it replaces. ASCII text matches as
 * usual, and Latin-1 text (`café` stored as `63 61 66 E9`) reads and matches as what it is.
 * Characters beyond U+00FF cannot be written into such a file by `edit` or `apply_patch`: that
 * would mix encodings; the tools refuse and say so. (The alternative, keeping invalid bytes as
 * lone surrogates, is lossless too, but the model could never type those characters back.)
 */
export type Encoding = "utf8" | "latin1"

/** The encoding the tools use for these bytes. */
export const detect = (bytes: Uint8Array): Encoding => (isUtf8(bytes) ? "utf8" : "latin1")

/** The bytes as text; with the encoding `detect` gives they round-trip through `encode` exactly. */
export const decode = (bytes: Buffer, encoding: Encoding): string => bytes.toString(encoding)

/** The text's bytes; check `unencodable` first for Latin-1 (Buffer would silently drop high bits). */
export const encode = (text: string, encoding: Encoding): Buffer => Buffer.from(text, encoding)

/** The first character of `text` that `encoding` cannot hold, if any. */
export const unencodable = (text: string, encoding: Encoding): string | undefined => {
  if (encoding === "utf8") return undefined
  for (const char of text) if (char.codePointAt(0)! > 0xff) return char
  return undefined
}

/** `U+20AC "€"`. */
export const describeChar = (char: string): string =>
  `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")} ${JSON.stringify(char)}`

/** Why a change cannot go into a Latin-1 file, for the model. */
export const latin1Refusal = (file: string, char: string): string =>
  `${file} is not valid UTF-8, so it is edited as Latin-1 (one byte per character, every other byte kept as it is), ` +
  `and the new text contains ${describeChar(char)}, which Latin-1 cannot hold. Use characters up to U+00FF, ` +
  "or replace the whole file with the write tool (which then stores it as UTF-8)."

/** What `read` tells the model about a file it shows as Latin-1. */
export const LATIN1_NOTE =
  "(This file is not valid UTF-8. It is shown as Latin-1, one character per byte; edits keep every byte they do not " +
  "replace, and text written into it is stored as Latin-1, so characters beyond U+00FF cannot be added.)"

/**
 * Checks UTF-8 validity of a stream of chunks (a sequence may be split between chunks) with
 * Node's native `isUtf8`, without decoding anything.
 */
export class Utf8Check {
  private pending: Buffer = Buffer.alloc(0)
  private valid = true

  /** Feeds a chunk; false once the bytes so far are not UTF-8. */
  push(chunk: Buffer): boolean {
    if (!this.valid) return false
    const bytes = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk
    const cut = completeLength(bytes)
    this.pending = Buffer.from(bytes.subarray(cut))
    this.valid = isUtf8(bytes.subarray(0, cut))
    return this.valid
  }

  /** Whether the whole stream was UTF-8 (no sequence left unfinished). */
  end(): boolean {
    return this.valid && this.pending.length === 0
  }
}

/** The length of `bytes` without a multi-byte sequence that is cut off at its end. */
const completeLength = (bytes: Buffer): number => {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back]!
    if ((byte & 0xc0) === 0x80) continue // a continuation byte: the lead is further back
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1
    return needed > back ? bytes.length - back : bytes.length
  }
  return bytes.length
}
