/**
 * A file's text with each line's own ending kept, so a change touches only the lines it replaces:
 * in a file with mixed endings (some CRLF, some LF) the untouched lines keep theirs, and only new
 * lines take the file's style. Works on the raw text (without BOM) as decoded from the bytes.
 */

export type Ending = "\n" | "\r\n" | ""

export interface Lines {
  /** Each line's text, without its ending. */
  readonly texts: Array<string>
  /** Each line's ending; "" only for a last line without one. */
  readonly endings: Array<Ending>
}

/** The lines of `raw`; the empty "line" after a final newline is not one. */
export const split = (raw: string): Lines => {
  const texts: Array<string> = []
  const endings: Array<Ending> = []
  let start = 0
  for (let newline = raw.indexOf("\n"); newline !== -1; newline = raw.indexOf("\n", start)) {
    const crlf = newline > start && raw.charCodeAt(newline - 1) === 13
    texts.push(raw.slice(start, crlf ? newline - 1 : newline))
    endings.push(crlf ? "\r\n" : "\n")
    start = newline + 1
  }
  if (start < raw.length) {
    texts.push(raw.slice(start))
    endings.push("")
  }
  return { texts, endings }
}

export const join = (lines: Lines): string => {
  const parts: Array<string> = []
  for (let index = 0; index < lines.texts.length; index++) parts.push(lines.texts[index]!, lines.endings[index]!)
  return parts.join("")
}

/**
 * Maps offsets in the `\n` text (every CRLF made LF) back to offsets in the raw text. An offset
 * at a line's end maps to before its `\r`, one after a newline to after the `\n`.
 */
export const rawOffsets = (raw: string): ((offset: number) => number) => {
  // Where each CRLF's "\n" sits in the `\n` text, in order.
  const at: Array<number> = []
  for (let index = raw.indexOf("\r\n"); index !== -1; index = raw.indexOf("\r\n", index + 2)) at.push(index - at.length)
  return (offset) => {
    // How many CRLFs end before `offset` (their "\n" is at a smaller `\n`-text offset).
    let low = 0
    let high = at.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (at[middle]! < offset) low = middle + 1
      else high = middle
    }
    return offset + low
  }
}

/**
 * Replaces ranges of the `\n` form of `raw` (earliest first, not overlapping) with their texts
 * (`\n` text, written with `eol`); the rest of the raw text, endings included, stays as it was.
 */
export const replaceRanges = (
  raw: string,
  replacements: ReadonlyArray<{ readonly start: number; readonly end: number; readonly text: string }>,
  eol: "\n" | "\r\n"
): string => {
  const toRaw = rawOffsets(raw)
  const pieces: Array<string> = []
  let cursor = 0
  for (const { start, end, text } of replacements) {
    pieces.push(raw.slice(cursor, toRaw(start)), eol === "\n" ? text : text.replace(/\n/g, eol))
    cursor = toRaw(end)
  }
  pieces.push(raw.slice(cursor))
  return pieces.join("")
}
