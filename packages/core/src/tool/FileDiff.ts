import { formatPatch, type StructuredPatchHunk } from "diff"
import * as LineDiff from "./LineDiff.js"
import * as TextEncoding from "./TextEncoding.js"

/**
 * Diffs shown to the user before a file changes, and the text shape (BOM, line endings, encoding)
 * a rewrite must keep. Diffs are taken over `\n` text without a BOM, so a CRLF file does not show
 * every line as changed. The line diff is near-linear (see LineDiff); a diff text longer than
 * `MAX_DIFF_CHARS` keeps its first hunks and summarizes the rest.
 */

/** A diff text longer than this keeps only its first hunks (the rest would only flood the approval prompt). */
export const MAX_DIFF_CHARS = 500_000
/** Lines of context around each change, as jsdiff's patches have. */
const CONTEXT = 4

export interface FileChange {
  /** The unified diff (when too long, its first hunks and a summary line). */
  readonly diff: string
  readonly additions: number
  readonly deletions: number
}

/** The diff of `before` → `after` for `filepath` (both with `\n` line endings); `newPath` for a move. */
export const compare = (filepath: string, before: string, after: string, newPath: string = filepath): FileChange => {
  const runs = before === after ? [] : LineDiff.diff(before, after)
  const additions = runs.reduce((total, run) => total + (run.kind === "added" ? run.lines.length : 0), 0)
  const deletions = runs.reduce((total, run) => total + (run.kind === "removed" ? run.lines.length : 0), 0)
  const header = { oldFileName: filepath, newFileName: newPath, oldHeader: undefined, newHeader: undefined }
  const built = hunks(runs, MAX_DIFF_CHARS)
  const diff = formatPatch({ ...header, hunks: built.hunks })
  if (built.complete) return { diff, additions, deletions }
  const shownAdded = built.hunks.reduce((total, hunk) => total + hunk.lines.filter((line) => line[0] === "+").length, 0)
  const shownRemoved = built.hunks.reduce((total, hunk) => total + hunk.lines.filter((line) => line[0] === "-").length, 0)
  const more = `(the rest of the diff is not shown, it is too long: ${additions - shownAdded} more lines added and ` +
    `${deletions - shownRemoved} removed; the whole change adds ${additions} lines and removes ${deletions})\n`
  return { diff: diff + more, additions, deletions }
}

/**
 * Hunks with `CONTEXT` lines around each change, merged when close, exactly as jsdiff's
 * `structuredPatch` builds them (a test compares the two on jsdiff's own changes). Stops before
 * the hunk that would take the text past `maxChars` (`complete` false then).
 */
export const hunks = (
  runs: ReadonlyArray<LineDiff.Run>,
  maxChars = Infinity
): { readonly hunks: Array<StructuredPatchHunk>; readonly complete: boolean } => {
  const result: Array<StructuredPatchHunk> = []
  let chars = 0
  let oldLine = 1
  let newLine = 1
  let current: { oldStart: number; newStart: number; lines: Array<string> } | undefined
  /** Adds a line to the open hunk; false once the text would grow past `maxChars`. */
  const add = (line: string): boolean => {
    chars += line.length + 1
    current!.lines.push(line)
    return chars <= maxChars
  }
  const close = (trailing: ReadonlyArray<string>): boolean => {
    if (current === undefined) return true
    for (const line of trailing) if (!add(` ${line}`)) return false
    result.push({
      oldStart: current.oldStart,
      oldLines: oldLine - current.oldStart + trailing.length,
      newStart: current.newStart,
      newLines: newLine - current.newStart + trailing.length,
      lines: withEndMarkers(current.lines)
    })
    current = undefined
    chars += 24 // the @@ line
    return true
  }
  const partial = () => ({ hunks: result, complete: false })
  for (let index = 0; index < runs.length; index++) {
    const { kind, lines } = runs[index]!
    if (kind !== "same") {
      if (current === undefined) {
        current = { oldStart: oldLine, newStart: newLine, lines: [] }
        const previous = index > 0 ? runs[index - 1]!.lines.slice(-CONTEXT) : []
        current.oldStart -= previous.length
        current.newStart -= previous.length
        for (const line of previous) if (!add(` ${line}`)) return partial()
      }
      const marker = kind === "added" ? "+" : "-"
      for (const line of lines) if (!add(marker + line)) return partial()
      if (kind === "added") newLine += lines.length
      else oldLine += lines.length
      continue
    }
    if (current !== undefined) {
      if (lines.length <= CONTEXT * 2 && index < runs.length - 1) {
        for (const line of lines) if (!add(` ${line}`)) return partial()
      } else if (!close(lines.slice(0, CONTEXT))) {
        return partial()
      }
    }
    oldLine += lines.length
    newLine += lines.length
  }
  return close([]) ? { hunks: result, complete: true } : partial()
}

/** Lines still carry their `\n`; a line without one gets "\ No newline at end of file" after it. */
const withEndMarkers = (lines: ReadonlyArray<string>): Array<string> => {
  const marked: Array<string> = []
  for (const line of lines) {
    if (line.endsWith("\n")) marked.push(line.slice(0, -1))
    else marked.push(line, "\\ No newline at end of file")
  }
  return marked
}

/** What a text file looks like on disk beyond its lines. */
export interface TextShape {
  readonly bom: boolean
  readonly eol: "\n" | "\r\n"
  readonly encoding: TextEncoding.Encoding
}

const BOM = "\uFEFF"

export const LF: TextShape = { bom: false, eol: "\n", encoding: "utf8" }

/** Any line ending as `\n`. */
export const normalizeLineEndings = (text: string): string => text.replace(/\r\n/g, "\n")

/** Splits raw file text into its `\n` text without BOM and its shape (CRLF when most line breaks are CRLF). */
export const decode = (raw: string, encoding: TextEncoding.Encoding = "utf8"): { readonly text: string; readonly shape: TextShape } => {
  const bom = raw.startsWith(BOM)
  const body = bom ? raw.slice(1) : raw
  const crlf = body.match(/\r\n/g)?.length ?? 0
  const lf = body.match(/\n/g)?.length ?? 0
  return { text: normalizeLineEndings(body), shape: { bom, eol: crlf > 0 && crlf >= lf - crlf ? "\r\n" : "\n", encoding } }
}

/** The raw file text for `\n` text in the given shape. */
export const encode = (text: string, shape: TextShape): string => {
  const body = normalizeLineEndings(text.startsWith(BOM) ? text.slice(1) : text)
  return (shape.bom ? BOM : "") + (shape.eol === "\r\n" ? body.replace(/\n/g, "\r\n") : body)
}

/** The file's bytes for text whose line endings are already as they should be on disk (see LineEndings). */
export const rawBytes = (raw: string, shape: TextShape): Buffer => TextEncoding.encode((shape.bom ? BOM : "") + raw, shape.encoding)

/** The file's bytes for `\n` text in the given shape. */
export const toBytes = (text: string, shape: TextShape): Buffer => TextEncoding.encode(encode(text, shape), shape.encoding)
