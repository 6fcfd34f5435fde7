import { Either } from "effect"
import * as FileDiff from "./FileDiff.js"
import type { Hunk, HunkLine } from "./PatchHunks.js"

// ---------------------------------------------------------------------------------------------
// The patch format (Codex's)
//
//   *** Begin Patch
//   *** Add File: path          then every line starts with "+"
//   *** Delete File: path
//   *** Update File: path
//   *** Move to: path           (optional)
//   @@ optional context line    then lines starting with " " (context), "-" (removed), "+" (added)
//   *** End of File             (optional: the hunk ends at the end of the file)
//   *** End Patch
//
// As in Codex, the `***` lines may carry spaces around them, blank lines between hunks (after
// `*** End of File`) are skipped, and the patch may be wrapped in a heredoc (`<<'EOF'` … `EOF`).

export type Operation =
  | { readonly type: "add"; readonly path: string; readonly content: string; readonly line: number }
  | { readonly type: "delete"; readonly path: string; readonly line: number }
  | {
    readonly type: "update"
    readonly path: string
    readonly moveTo?: string
    readonly hunks: ReadonlyArray<Hunk>
    readonly line: number
  }

const BEGIN = "*** Begin Patch"
const END = "*** End Patch"
const ADD = "*** Add File: "
const DELETE = "*** Delete File: "
const UPDATE = "*** Update File: "
const MOVE = "*** Move to: "
const END_OF_FILE = "*** End of File"

/** The text after `marker` when the line (spaces around it aside) starts with it. */
const after = (line: string, marker: string): string | undefined => {
  const trimmed = line.trimStart()
  return trimmed.startsWith(marker) ? trimmed.slice(marker.length).trim() : undefined
}

const isFileHeader = (line: string) =>
  after(line, ADD) !== undefined || after(line, DELETE) !== undefined || after(line, UPDATE) !== undefined || line.trim() === END

/** `<<EOF`, `<<'EOF'`, `<<"EOF"` (after a command or not): the delimiter; mismatched quotes are an error. */
const heredocStart = (line: string): Either.Either<string | undefined, string> => {
  const match = line.match(/<<-?\s*(['"]?)(\w+)(['"]?)\s*$/)
  if (match === null) return Either.right(undefined)
  const [, open, word, close] = match
  if (open !== close) {
    return Either.left(
      `the heredoc start ${JSON.stringify(line.trim())} has mismatched quotes: write <<'${word}' or <<${word}, ` +
        "or send the patch alone, from \"*** Begin Patch\" to \"*** End Patch\""
    )
  }
  return Either.right(word)
}

/** Parses a patch; the error names the offending line. */
export const parse = (patchText: string): Either.Either<ReadonlyArray<Operation>, string> => {
  let lines = FileDiff.normalizeLineEndings(patchText).split("\n")
  let offset = 0 // lines dropped before lines[0], for line numbers
  while (lines.length > 0 && lines[0]!.trim() === "") {
    lines = lines.slice(1)
    offset++
  }
  while (lines.length > 0 && lines[lines.length - 1]!.trim() === "") lines = lines.slice(0, -1)
  const at = (index: number) => index + offset + 1
  const error = (index: number, message: string) => Either.left(`line ${at(index)}: ${message}`)

  if (lines.length > 0 && lines[0]!.trim() !== BEGIN) {
    const heredoc = heredocStart(lines[0]!)
    if (Either.isLeft(heredoc)) return error(0, heredoc.left)
    if (heredoc.right !== undefined) {
      if (lines.length < 2 || lines[lines.length - 1]!.trim() !== heredoc.right) {
        return error(lines.length - 1, `the heredoc started on line ${at(0)} must end with a line "${heredoc.right}"`)
      }
      lines = lines.slice(1, -1)
      offset++
    }
  }

  if (lines.length === 0 || lines[0]!.trim() !== BEGIN) return error(0, `the patch must start with "${BEGIN}"`)
  if (lines.length < 2 || lines[lines.length - 1]!.trim() !== END) {
    return error(Math.max(lines.length - 1, 0), `the patch must end with "${END}"`)
  }
  const last = lines.length - 1
  const operations: Array<Operation> = []
  let index = 1
  while (index < last) {
    const line = lines[index]!
    if (line.trim() === "") {
      index++
      continue
    }
    const added = after(line, ADD)
    if (added !== undefined) {
      if (added === "") return error(index, "Add File needs a path")
      const start = index++
      const content: Array<string> = []
      while (index < last && !isFileHeader(lines[index]!)) {
        const body = lines[index]!
        if (!body.startsWith("+")) return error(index, `every line of an added file must start with "+" (in ${added})`)
        content.push(body.slice(1))
        index++
      }
      operations.push({ type: "add", path: added, content: content.length > 0 ? `${content.join("\n")}\n` : "", line: at(start) })
      continue
    }
    const deleted = after(line, DELETE)
    if (deleted !== undefined) {
      if (deleted === "") return error(index, "Delete File needs a path")
      operations.push({ type: "delete", path: deleted, line: at(index) })
      index++
      continue
    }
    const updated = after(line, UPDATE)
    if (updated !== undefined) {
      const parsed = parseUpdate(lines, index, last, updated, at)
      if (Either.isLeft(parsed)) return Either.left(parsed.left)
      operations.push({ ...parsed.right.operation, line: at(index) })
      index = parsed.right.next
      continue
    }
    return error(
      index,
      `expected "${ADD.trim()}", "${DELETE.trim()}", "${UPDATE.trim()}" or "${END}", got ${JSON.stringify(line)}`
    )
  }
  if (operations.length === 0) return error(0, "the patch contains no file operations")
  return Either.right(operations)
}

/** The `*** Update File:` section starting at `start`: its operation and the index after it. */
const parseUpdate = (
  lines: ReadonlyArray<string>,
  start: number,
  last: number,
  path: string,
  at: (index: number) => number
): Either.Either<{ readonly operation: Omit<Extract<Operation, { type: "update" }>, "line">; readonly next: number }, string> => {
  const error = (index: number, message: string) => Either.left(`line ${at(index)}: ${message}`)
  if (path === "") return error(start, "Update File needs a path")
  let index = start + 1
  let moveTo: string | undefined
  const move = index < last ? after(lines[index]!, MOVE) : undefined
  if (move !== undefined) {
    if (move === "") return error(index, "Move to needs a path")
    moveTo = move
    index++
  }
  const hunks: Array<Hunk> = []
  let current: { context?: string; lines: Array<HunkLine>; endOfFile: boolean; line: number } | undefined
  const close = (): string | undefined => {
    if (current === undefined) return undefined
    if (current.lines.length === 0) return `empty hunk in ${path}`
    hunks.push(current)
    current = undefined
    return undefined
  }
  while (index < last && !isFileHeader(lines[index]!)) {
    const body = lines[index]!
    if (body.startsWith("@@")) {
      const problem = close()
      if (problem) return error(index - 1, problem)
      // A unified diff's line numbers (`@@ -12,7 +12,8 @@ def f`) say nothing here: the text after them is the context.
      const context = body.slice(2).replace(/^\s*-\d+(,\d+)?\s+\+\d+(,\d+)?\s*@@/, "").trim()
      current = { lines: [], endOfFile: false, line: at(index), ...(context ? { context } : {}) }
    } else if (body.trim() === END_OF_FILE) {
      if (current === undefined) return error(index, `"${END_OF_FILE}" outside a hunk in ${path}`)
      current.endOfFile = true
    } else if ((current === undefined || current.endOfFile) && body.trim() === "") {
      // Blank lines before a hunk, or after one at the end of the file, say nothing (as in Codex).
    } else if (body === "" || body.startsWith(" ") || body.startsWith("-") || body.startsWith("+")) {
      if (current === undefined) current = { lines: [], endOfFile: false, line: at(index) }
      else if (current.endOfFile) return error(index, `lines after "${END_OF_FILE}" in ${path}`)
      const marker = body[0] ?? " "
      current.lines.push({ kind: marker === "+" ? "add" : marker === "-" ? "remove" : "context", text: body.slice(1) })
    } else {
      return error(
        index,
        `unexpected line in the hunk for ${path}: ${JSON.stringify(body)}. Hunk lines start with " " (context), ` +
          `"-" (remove), "+" (add) or "@@"`
      )
    }
    index++
  }
  const problem = close()
  if (problem) return error(index - 1, problem)
  if (hunks.length === 0 && moveTo === undefined) return error(start, `Update File ${path} has no hunks`)
  return Either.right({ operation: { type: "update", path, hunks, ...(moveTo !== undefined ? { moveTo } : {}) }, next: index })
}
