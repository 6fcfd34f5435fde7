/**
 * Where the lines of a patch hunk sit in a file, as Codex's apply_patch looks for them: the first
 * place from a start line where the lines are equal, then (only if there is none) equal without
 * trailing whitespace, then trimmed, then once typographic punctuation is folded to what a model
 * types (en/em dashes, non-breaking hyphen, minus → `-`; curly quotes → `'` `"`; odd spaces → a
 * space) and canonically equivalent Unicode is made one form (NFC, so `é` as one character or as
 * `e` and a combining accent is the same). Beyond Codex, a last pass also counts runs of
 * whitespace inside a line as one space.
 *
 * Each pass maps every line of the file once and indexes the lines by their mapped text (lazily,
 * cached for all the hunks of a file): a hunk's search looks only at the lines that equal its
 * first line, so a pass that finds nothing costs a lookup, not a scan of the rest of the file
 * (500 hunks found only by the last pass on a 1.6 MB file: 1.1 s of CPU with scans).
 */

export type SeekPass = "exact" | "trailing-whitespace" | "trimmed" | "unicode-normalized" | "whitespace-collapsed"

const PASSES: ReadonlyArray<readonly [SeekPass, (line: string) => string]> = [
  ["exact", (line) => line],
  ["trailing-whitespace", (line) => line.trimEnd()],
  ["trimmed", (line) => line.trim()],
  ["unicode-normalized", (line) => fold(line)],
  ["whitespace-collapsed", (line) => fold(line).replace(/\s+/g, " ")]
]

const DASHES = /[\u2010\u2011\u2012\u2013\u2014\u2015\u2212]/g
const SINGLE_QUOTES = /[\u2018\u2019\u201A\u201B]/g
const DOUBLE_QUOTES = /[\u201C\u201D\u201E\u201F]/g
const SPACES = /[\u00A0\u2002-\u200A\u202F\u205F\u3000]/g

/**
 * Typographic dashes, quotes and spaces as ASCII, one UTF-16 unit for one: offsets in the result
 * are offsets in the text.
 */
export const foldPunctuation = (text: string): string =>
  text.replace(DASHES, "-").replace(SINGLE_QUOTES, "'").replace(DOUBLE_QUOTES, "\"").replace(SPACES, " ")

/** The line as a model would type it: trimmed, NFC, ASCII dashes, quotes and spaces. */
export const fold = (line: string): string => {
  const trimmed = line.trim()
  // Most lines are ASCII: nothing to fold.
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7F]*$/.test(trimmed)) return trimmed
  return foldPunctuation(trimmed.normalize("NFC")).trim()
}

export interface Found {
  readonly index: number
  readonly pass: SeekPass
}

/** The position in ascending `values` of the first one at or after `value`. */
const firstAtOrAfter = (values: ReadonlyArray<number>, value: number): number => {
  let low = 0
  let high = values.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (values[middle]! < value) low = middle + 1
    else high = middle
  }
  return low
}

/** Looks for line sequences in one file's lines. */
export class Seeker {
  private readonly keys = new Map<SeekPass, ReadonlyArray<string>>()
  private readonly indexes = new Map<SeekPass, ReadonlyMap<string, ReadonlyArray<number>>>()

  constructor(private readonly lines: ReadonlyArray<string>) {}

  private keysOf(pass: SeekPass, key: (line: string) => string): ReadonlyArray<string> {
    let keys = this.keys.get(pass)
    if (keys === undefined) {
      keys = pass === "exact" ? this.lines : this.lines.map(key)
      this.keys.set(pass, keys)
    }
    return keys
  }

  /** The line numbers of each mapped line, ascending. */
  private indexOf(pass: SeekPass, keys: ReadonlyArray<string>): ReadonlyMap<string, ReadonlyArray<number>> {
    let index = this.indexes.get(pass)
    if (index === undefined) {
      const built = new Map<string, Array<number>>()
      keys.forEach((key, line) => {
        const lines = built.get(key)
        if (lines === undefined) built.set(key, [line])
        else lines.push(line)
      })
      index = built
      this.indexes.set(pass, index)
    }
    return index
  }

  /**
   * The first index at or after `start` where `pattern` matches, trying the passes in order; with
   * `atEnd`, the pattern must end at the file's last line.
   */
  seek(pattern: ReadonlyArray<string>, start: number, atEnd = false): Found | undefined {
    const count = pattern.length
    const last = this.lines.length - count
    if (count === 0 || last < start) return undefined
    const from = atEnd ? last : start
    for (const [pass, key] of PASSES) {
      const keys = this.keysOf(pass, key)
      const wanted = pattern.map(key)
      const starts = this.indexOf(pass, keys).get(wanted[0]!) ?? []
      for (let at = firstAtOrAfter(starts, from); at < starts.length && starts[at]! <= last; at++) {
        const index = starts[at]!
        let same = true
        for (let offset = 0; offset < count; offset++) {
          if (keys[index + offset] !== wanted[offset]) {
            same = false
            break
          }
        }
        if (same) return { index, pass }
      }
    }
    return undefined
  }

  /**
   * The first line at or after `start` that is the `@@` context line: equal in one of the passes,
   * else (models shorten it: `@@ def f` for `def f(a, b):`) containing it once folded.
   */
  seekLine(context: string, start: number): Found | undefined {
    const found = this.seek([context], start)
    if (found !== undefined) return found
    const wanted = fold(context)
    if (wanted === "") return undefined
    const keys = this.keysOf("unicode-normalized", fold)
    for (let index = start; index < keys.length; index++) if (keys[index]!.includes(wanted)) return { index, pass: "unicode-normalized" }
    return undefined
  }
}
