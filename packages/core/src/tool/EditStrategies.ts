import { fold, foldPunctuation } from "./PatchSeek.js"

/**
 * The ways the edit tool looks for an `oldString` (see EditMatch for the cascade). Pure: works
 * on text whose line endings are already `\n`.
 */

/** A matched passage: `content.slice(start, end)`. */
export interface Range {
  readonly start: number
  readonly end: number
}

export type StrategyName =
  | "exact"
  | "line-trimmed"
  | "block-anchor"
  | "whitespace-normalized"
  | "indentation-flexible"
  | "escape-normalized"
  | "unicode-normalized"
  | "trimmed-boundary"
  | "context-aware"
  | "multi-occurrence"

export interface Strategy {
  readonly name: StrategyName
  /** Every place in `content` this strategy accepts for `find` (possibly overlapping), in order. */
  readonly find: (content: string, find: string) => ReadonlyArray<Range>
}

// ---------------------------------------------------------------------------------------------
// Helpers

/** Start offsets of every occurrence of `needle`, overlapping ones included (they make a match ambiguous). */
const occurrences = (content: string, needle: string): Array<Range> => {
  const found: Array<Range> = []
  if (needle.length === 0) return found
  let index = content.indexOf(needle)
  while (index !== -1) {
    found.push({ start: index, end: index + needle.length })
    index = content.indexOf(needle, index + 1)
  }
  return found
}

interface Lines {
  readonly lines: ReadonlyArray<string>
  readonly starts: ReadonlyArray<number>
}

const linesOf = (content: string): Lines => {
  const lines = content.split("\n")
  const starts: Array<number> = []
  let offset = 0
  for (const line of lines) {
    starts.push(offset)
    offset += line.length + 1
  }
  return { lines, starts }
}

/** The lines of a search string; a trailing newline ends the last line instead of adding an empty one. */
const searchLines = (find: string): { readonly lines: ReadonlyArray<string>; readonly trailingNewline: boolean } => {
  const lines = find.split("\n")
  if (lines.length > 1 && lines[lines.length - 1] === "") return { lines: lines.slice(0, -1), trailingNewline: true }
  return { lines, trailingNewline: false }
}

/** The text of whole lines `first..first+count-1`, with the newline after them when the search ended in one. */
const lineRange = (content: string, index: Lines, first: number, count: number, trailingNewline: boolean): Range => {
  const last = first + count - 1
  let end = index.starts[last]! + index.lines[last]!.length
  if (trailingNewline && content[end] === "\n") end += 1
  return { start: index.starts[first]!, end }
}

/**
 * Windows of `find`'s line count where `same(lines, first, search)` holds for the window starting
 * at line `first`. `same` reads `lines[first + i]` rather than a copied window: one pass over the
 * file, whatever the search's size, when most windows fail on their first line.
 */
const lineWindows = (
  content: string,
  find: string,
  same: (lines: ReadonlyArray<string>, first: number, search: ReadonlyArray<string>) => boolean,
  minLines = 1
): Array<Range> => {
  const search = searchLines(find)
  const count = search.lines.length
  if (count < minLines) return []
  const index = linesOf(content)
  const found: Array<Range> = []
  for (let first = 0; first + count <= index.lines.length; first++) {
    if (same(index.lines, first, search.lines)) {
      found.push(lineRange(content, index, first, count, search.trailingNewline))
    }
  }
  return found
}

/** Whether `count` lines from `first` equal the search's once both are mapped by `key` (stops at the first difference). */
const linesEqual = (
  lines: ReadonlyArray<string>,
  first: number,
  search: ReadonlyArray<string>,
  key: (line: string) => string
): boolean => {
  for (let index = 0; index < search.length; index++) if (key(lines[first + index]!) !== key(search[index]!)) return false
  return true
}

const trim = (line: string) => line.trim()

const collapse = (text: string): string => text.replace(/\s+/g, " ").trim()

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

const indentOf = (line: string): number => line.length - line.trimStart().length

/** The lines with their common leading indentation removed (blank lines do not count and become empty). */
const dedent = (lines: ReadonlyArray<string>): Array<string> => {
  const widths = lines.filter((line) => line.trim().length > 0).map(indentOf)
  const common = widths.length === 0 ? 0 : Math.min(...widths)
  return lines.map((line) => (line.trim().length === 0 ? "" : line.slice(common)))
}

/** Levenshtein distance, computed with two rows. */
export const levenshtein = (a: string, b: string): number => {
  if (a === b) return 0
  if (a.length === 0) return b.length
  if (b.length === 0) return a.length
  let previous = new Int32Array(b.length + 1)
  let current = new Int32Array(b.length + 1)
  for (let j = 0; j <= b.length; j++) previous[j] = j
  for (let i = 1; i <= a.length; i++) {
    current[0] = i
    const code = a.charCodeAt(i - 1)
    for (let j = 1; j <= b.length; j++) {
      const cost = code === b.charCodeAt(j - 1) ? 0 : 1
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost)
    }
    ;[previous, current] = [current, previous]
  }
  return previous[b.length]!
}

/**
 * 1 for equal texts, 0 for nothing in common; beyond a size where the exact distance costs too
 * much, line by line. `cost` is the work it took (edit-distance cells, or lines).
 */
const similarity = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): { readonly score: number; readonly cost: number } => {
  const left = a.map((line) => line.trim()).join("\n")
  const right = b.map((line) => line.trim()).join("\n")
  const longest = Math.max(left.length, right.length)
  if (longest === 0) return { score: 1, cost: 1 }
  const cells = left.length * right.length
  if (cells <= 4_000_000) return { score: 1 - levenshtein(left, right) / longest, cost: cells + a.length + b.length }
  const pairs = Math.max(a.length, b.length)
  let same = 0
  for (let index = 0; index < Math.min(a.length, b.length); index++) if (a[index]!.trim() === b[index]!.trim()) same++
  return { score: same / pairs, cost: left.length + right.length }
}

/**
 * Work block-anchor may spend on one search (edit-distance cells plus lines compared, ~50 ms).
 * A search whose first and last lines are common (`}`) in a large file could otherwise compare
 * thousands of blocks; past this budget the strategy gives up (finds nothing), which is safe:
 * the cascade goes on to stricter ones or reports that nothing matched.
 */
export const BLOCK_ANCHOR_WORK = 20_000_000

/** How similar the middle of a block must be for block-anchor to accept it. */
export const BLOCK_ANCHOR_SIMILARITY = 0.7
/** Share of middle lines that must match for context-aware to accept a block. */
export const CONTEXT_AWARE_SHARE = 0.5

const unescape = (text: string): string =>
  text.replace(/\\(n|t|r|"|'|`|\$|\\)/g, (_, char: string) => {
    switch (char) {
      case "n":
        return "\n"
      case "t":
        return "\t"
      case "r":
        return "\r"
      default:
        return char
    }
  })

// ---------------------------------------------------------------------------------------------
// Strategies, in cascade order

/** The text exactly as given. */
export const exact: Strategy = { name: "exact", find: (content, find) => occurrences(content, find) }

/** Whole lines that are equal once each line is trimmed (indentation or trailing spaces differ). */
export const lineTrimmed: Strategy = {
  name: "line-trimmed",
  find: (content, find) => lineWindows(content, find, (lines, first, search) => linesEqual(lines, first, search, trim))
}

/**
 * Blocks of at least 3 lines whose first and last lines equal the search's (trimmed) and whose
 * middle is similar (edit distance); the block may be a few lines longer or shorter.
 */
export const blockAnchor: Strategy = {
  name: "block-anchor",
  find: (content, find) => {
    const search = searchLines(find)
    const count = search.lines.length
    if (count < 3) return []
    const first = search.lines[0]!.trim()
    const last = search.lines[count - 1]!.trim()
    const middle = search.lines.slice(1, -1)
    const index = linesOf(content)
    const trimmed = index.lines.map(trim)
    const found: Array<Range> = []
    let work = 0
    for (let start = 0; start < index.lines.length; start++) {
      if (trimmed[start] !== first) continue
      let best: { end: number; score: number } | undefined
      const furthest = Math.min(index.lines.length - 1, start + 2 * count)
      for (let end = start + 2; end <= furthest; end++) {
        if (trimmed[end] !== last) continue
        const { score, cost } = similarity(middle, index.lines.slice(start + 1, end))
        work += cost
        if (work > BLOCK_ANCHOR_WORK) return []
        if (best === undefined || score > best.score) best = { end, score }
      }
      if (best !== undefined && best.score >= BLOCK_ANCHOR_SIMILARITY) {
        found.push(lineRange(content, index, start, best.end - start + 1, search.trailingNewline))
      }
    }
    return found
  }
}

/**
 * Runs of whitespace count as one space: within a line for a one-line search (so it may match
 * part of a line), line by line for a longer one.
 */
export const whitespaceNormalized: Strategy = {
  name: "whitespace-normalized",
  find: (content, find) => {
    const search = searchLines(find)
    if (search.lines.length === 1) {
      const tokens = find.trim().split(/\s+/).filter((token) => token.length > 0)
      if (tokens.length === 0) return []
      const pattern = new RegExp(tokens.map(escapeRegExp).join("[ \\t]+"), "g")
      const found: Array<Range> = []
      for (const match of content.matchAll(pattern)) found.push({ start: match.index, end: match.index + match[0].length })
      return found
    }
    return lineWindows(content, find, (lines, first, search) => linesEqual(lines, first, search, collapse))
  }
}

/** Whole lines equal once the block's common indentation is removed from both sides. */
export const indentationFlexible: Strategy = {
  name: "indentation-flexible",
  find: (content, find) =>
    lineWindows(content, find, (lines, first, search) => {
      // Equal after dedenting implies equal when trimmed: a cheap test first, the window copy only for candidates.
      if (!linesEqual(lines, first, search, trim)) return false
      const left = dedent(lines.slice(first, first + search.length))
      const right = dedent(search)
      return left.every((line, index) => line === right[index])
    })
}

/** The search with `\n`, `\t`, `\"`, `\'`, `\\` (and `\r`, `` \` ``, `\$`) escapes turned into the characters. */
export const escapeNormalized: Strategy = {
  name: "escape-normalized",
  find: (content, find) => {
    const plain = unescape(find)
    return plain === find ? [] : occurrences(content, plain)
  }
}

/**
 * Beyond OpenCode: what a model types for typography. Whole lines equal once trimmed, made NFC
 * (`é` as one character or as `e` and a combining accent) and with typographic dashes, quotes
 * and spaces as ASCII; for a one-line search also inside a line (dashes, quotes and spaces only).
 */
export const unicodeNormalized: Strategy = {
  name: "unicode-normalized",
  find: (content, find) => {
    const lines = lineWindows(content, find, (lines, first, search) => linesEqual(lines, first, search, fold))
    if (lines.length > 0 || find.includes("\n")) return lines
    const wanted = foldPunctuation(find)
    const folded = foldPunctuation(content)
    return folded === content && wanted === find ? [] : occurrences(folded, wanted)
  }
}

/** The search without its leading and trailing whitespace (blank lines around a fragment). */
export const trimmedBoundary: Strategy = {
  name: "trimmed-boundary",
  find: (content, find) => {
    const trimmed = find.trim()
    return trimmed === find || trimmed.length === 0 ? [] : occurrences(content, trimmed)
  }
}

/**
 * Blocks of the search's length (at least 3 lines) whose first and last lines match (trimmed)
 * and where at least half of the middle lines match (trimmed).
 */
export const contextAware: Strategy = {
  name: "context-aware",
  find: (content, find) =>
    lineWindows(
      content,
      find,
      (lines, first, search) => {
        const count = search.length
        if (lines[first]!.trim() !== search[0]!.trim() || lines[first + count - 1]!.trim() !== search[count - 1]!.trim()) return false
        let same = 0
        for (let index = 1; index < count - 1; index++) if (lines[first + index]!.trim() === search[index]!.trim()) same++
        return same / (count - 2) >= CONTEXT_AWARE_SHARE
      },
      3
    )
}

/**
 * Every exact occurrence, without overlaps. It accepts nothing `exact` does not, so in the
 * cascade it never gets to decide (as in OpenCode, where it is last too); it is kept so the order
 * mirrors OpenCode's and `replaceAll` has an explicit last resort.
 */
export const multiOccurrence: Strategy = {
  name: "multi-occurrence",
  find: (content, find) => {
    const found: Array<Range> = []
    if (find.length === 0) return found
    let index = content.indexOf(find)
    while (index !== -1) {
      found.push({ start: index, end: index + find.length })
      index = content.indexOf(find, index + find.length)
    }
    return found
  }
}

/**
 * The cascade: OpenCode's replacers, block-anchor (the loosest but one) moved after the ones
 * that compare every line, and unicode-normalized added.
 */
export const strategies: ReadonlyArray<Strategy> = [
  exact,
  lineTrimmed,
  whitespaceNormalized,
  indentationFlexible,
  escapeNormalized,
  unicodeNormalized,
  trimmedBoundary,
  blockAnchor,
  contextAware,
  multiOccurrence
]

