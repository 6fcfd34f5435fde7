import { Either } from "effect"
import type * as LineEndings from "./LineEndings.js"
import { Seeker } from "./PatchSeek.js"

/** One line of a hunk: kept (context), removed or added. */
export interface HunkLine {
  readonly kind: "context" | "remove" | "add"
  readonly text: string
}

/** One hunk of an `*** Update File:` section. */
export interface Hunk {
  /** The text after `@@`: a line to find before looking for the hunk's lines. */
  readonly context?: string
  readonly lines: ReadonlyArray<HunkLine>
  readonly endOfFile: boolean
  /** 1-based line of the hunk in the patch. */
  readonly line: number
}

/** The lines the hunk expects in the file (context and removed), in order. */
export const oldLines = (lines: ReadonlyArray<HunkLine>): Array<string> =>
  lines.filter((line) => line.kind !== "add").map((line) => line.text)

/**
 * Without the blank line that closes a hunk's expected lines: it often stands for the file's
 * final newline, which is no line, or separates the hunk from the next (Codex retries without
 * one; we go on while there are more). A blank context line followed by added lines still goes
 * into the file, as an added line.
 */
const withoutTrailingBlank = (lines: ReadonlyArray<HunkLine>): ReadonlyArray<HunkLine> | undefined => {
  let last = lines.length - 1
  while (last >= 0 && lines[last]!.kind === "add") last--
  if (last < 0 || lines[last]!.text !== "") return undefined
  const kept = lines[last]!.kind === "context" && last < lines.length - 1 ? [{ kind: "add" as const, text: "" }] : []
  return [...lines.slice(0, last), ...kept, ...lines.slice(last + 1)]
}

/**
 * Applies the hunks of one file in order, as Codex does: each hunk's lines are looked for after
 * the previous hunk (and after its `@@` line); a hunk that only adds lines goes after its `@@`
 * line, or, without one, at the end of the file while the next hunks are still looked for where
 * the previous one ended. Lines the patch does not change (context lines included) keep their
 * text and ending; added lines take `eol`, and the result always ends with a newline.
 *
 * A generator that yields after each hunk, so the tool can let the event loop run in between
 * (`applyHunks` runs it through).
 */
export function* applyHunkSteps(
  file: LineEndings.Lines,
  hunks: ReadonlyArray<Hunk>,
  path: string,
  eol: "\n" | "\r\n"
): Generator<undefined, Either.Either<LineEndings.Lines, string>> {
  const seeker = new Seeker(file.texts)
  const texts: Array<string> = []
  const endings: Array<LineEndings.Ending> = []
  const appended: Array<string> = []
  let cursor = 0 // the next line of the file not yet passed
  const copyTo = (index: number) => {
    for (; cursor < index; cursor++) {
      texts.push(file.texts[cursor]!)
      endings.push(file.endings[cursor]!)
    }
  }
  const add = (text: string) => {
    texts.push(text)
    endings.push(eol)
  }
  for (const hunk of hunks) {
    yield undefined
    let from = cursor
    if (hunk.context !== undefined) {
      const found = seeker.seekLine(hunk.context, cursor)
      if (found === undefined) return Either.left(`line ${hunk.line}: could not find the context line "@@ ${hunk.context}" in ${path}`)
      from = found.index + 1
    }
    let lines = hunk.lines
    if (oldLines(lines).length === 0) {
      if (hunk.context === undefined || hunk.endOfFile) {
        for (const line of lines) appended.push(line.text)
      } else {
        copyTo(from)
        for (const line of lines) add(line.text)
      }
      continue
    }
    // The hunk's lines may repeat the `@@` line as their first context line (Codex would not find them then).
    const locate = (expected: ReadonlyArray<string>) =>
      (hunk.endOfFile ? seeker.seek(expected, from, true) : undefined) ?? seeker.seek(expected, from) ??
        (hunk.context !== undefined && from > cursor ? seeker.seek(expected, from - 1) : undefined)
    let found = locate(oldLines(lines))
    for (let shorter = withoutTrailingBlank(lines); found === undefined && shorter !== undefined; shorter = withoutTrailingBlank(shorter)) {
      if (oldLines(shorter).length === 0) break
      found = locate(oldLines(shorter))
      if (found !== undefined) lines = shorter
    }
    if (found === undefined) {
      const expected = oldLines(hunk.lines).map((line) => `  ${line}`).join("\n")
      return Either.left(`line ${hunk.line}: could not find the lines of this hunk in ${path}:\n${expected}`)
    }
    copyTo(found.index)
    for (const line of lines) {
      if (line.kind === "add") add(line.text)
      else if (line.kind === "context") copyTo(cursor + 1)
      else cursor++
    }
  }
  copyTo(file.texts.length)
  for (const text of appended) add(text)
  // An updated file always ends with a newline (Codex); a last line moved inward needs one anyway.
  for (let index = 0; index < endings.length; index++) if (endings[index] === "") endings[index] = eol
  return Either.right({ texts, endings })
}

/** `applyHunkSteps`, run through at once. */
export const applyHunks = (
  file: LineEndings.Lines,
  hunks: ReadonlyArray<Hunk>,
  path: string,
  eol: "\n" | "\r\n"
): Either.Either<LineEndings.Lines, string> => {
  const steps = applyHunkSteps(file, hunks, path, eol)
  for (let step = steps.next(); ; step = steps.next()) if (step.done) return step.value
}
