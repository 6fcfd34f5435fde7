import { createTwoFilesPatch, diffLines } from "diff"

/**
 * Diffs shown to the user before a file changes, and the text shape (BOM, line endings) a rewrite
 * must keep. Diffs are taken over `\n` text without a BOM, so a CRLF file does not show every line
 * as changed.
 */

/** The unified diff of `before` → `after` for `filepath` (both with `\n` line endings); `newPath` for a move. */
export const unified = (filepath: string, before: string, after: string, newPath: string = filepath): string =>
  createTwoFilesPatch(filepath, newPath, before, after)

/** Lines added and removed between two texts. */
export const countChanges = (before: string, after: string): { readonly additions: number; readonly deletions: number } => {
  let additions = 0
  let deletions = 0
  for (const change of diffLines(before, after)) {
    if (change.added) additions += change.count
    else if (change.removed) deletions += change.count
  }
  return { additions, deletions }
}

/** What a text file looks like on disk beyond its lines. */
export interface TextShape {
  readonly bom: boolean
  readonly eol: "\n" | "\r\n"
}

const BOM = "\uFEFF"

export const LF: TextShape = { bom: false, eol: "\n" }

/** Any line ending as `\n`. */
export const normalizeLineEndings = (text: string): string => text.replace(/\r\n/g, "\n")

/** Splits raw file text into its `\n` text without BOM and its shape (CRLF when most line breaks are CRLF). */
export const decode = (raw: string): { readonly text: string; readonly shape: TextShape } => {
  const bom = raw.startsWith(BOM)
  const body = bom ? raw.slice(1) : raw
  const crlf = body.match(/\r\n/g)?.length ?? 0
  const lf = body.match(/\n/g)?.length ?? 0
  return { text: normalizeLineEndings(body), shape: { bom, eol: crlf > 0 && crlf >= lf - crlf ? "\r\n" : "\n" } }
}

/** The raw file text for `\n` text in the given shape. */
export const encode = (text: string, shape: TextShape): string => {
  const body = normalizeLineEndings(text.startsWith(BOM) ? text.slice(1) : text)
  return (shape.bom ? BOM : "") + (shape.eol === "\r\n" ? body.replace(/\n/g, "\r\n") : body)
}
