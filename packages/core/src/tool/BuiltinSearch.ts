import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import {
  abortable,
  type FileSearchError,
  type FilesInput,
  type FilesResult,
  type GrepInput,
  type GrepMatch,
  type GrepResult,
  InvalidPattern,
  listingRoot,
  SearchFailed,
  statOrFail
} from "./FileSearchTypes.js"
import { withGitExcluded } from "./Globs.js"
import { TaskPool, walk } from "./IgnoreWalk.js"

// The built-in engine, for machines without ripgrep: listing and searching files in-process with
// the same answers as ripgrep.

const CONCURRENCY = 24

export const builtinFiles = (input: FilesInput): Effect.Effect<FilesResult, FileSearchError> =>
  abortable(input.signal, async (signal) => {
    const root = await listingRoot(input.cwd)
    const limit = input.limit ?? Number.POSITIVE_INFINITY
    const files: Array<string> = []
    let truncated = false
    let partial = false
    let excluded = 0
    const pool = new TaskPool(CONCURRENCY)
    const onAbort = () => pool.stop()
    signal.addEventListener("abort", onAbort)
    try {
      await walk({
        root,
        globs: withGitExcluded(input.globs),
        pool,
        onError: () => void (partial = true),
        onFile: (file) => {
          if (input.exclude?.(file)) {
            excluded++
            return
          }
          if (files.length >= limit) {
            truncated = true
            pool.stop()
            return
          }
          files.push(file)
        }
      })
    } finally {
      signal.removeEventListener("abort", onAbort)
    }
    if (signal.aborted) throw new SearchFailed({ detail: "The search was aborted." })
    return { files, truncated, partial, excluded }
  })

/**
 * The pattern as a JavaScript RegExp. Leading inline flags (`(?i)`, `(?s)`, `(?m)`, `(?x)`
 * is not supported) are understood, since models write ripgrep/Rust syntax.
 */
export const compilePattern = (pattern: string): RegExp => {
  let source = pattern
  let flags = "u"
  const inline = /^\(\?([imsU]+)\)/.exec(source)
  if (inline) {
    source = source.slice(inline[0].length)
    for (const flag of inline[1]!) if (flag === "i" || flag === "s") flags += flag
  }
  try {
    return new RegExp(source, flags)
  } catch (unicodeError) {
    // Patterns like `\-` or `\/` are fine outside unicode mode; take them as written.
    try {
      return new RegExp(source, flags.replace("u", ""))
    } catch {
      throw new InvalidPattern({
        pattern,
        detail: unicodeError instanceof Error ? unicodeError.message.replace(/^Invalid regular expression: /, "").replace(/^\/[\s\S]*\/[a-z]*: /, "") : String(unicodeError)
      })
    }
  }
}

const searchFile = async (
  file: string,
  regex: RegExp,
  prefilter: RegExp | undefined
): Promise<Array<GrepMatch> | undefined> => {
  // The callback API: fs.promises.readFile is about 2.5x slower for many small files.
  const buffer = await new Promise<Buffer | undefined>((resolve) =>
    fs.readFile(file, (error, data) => resolve(error ? undefined : data))
  )
  if (buffer === undefined) return undefined
  // ripgrep's default: a NUL byte marks a binary file, which a recursive search skips.
  if (buffer.indexOf(0) !== -1) return []
  const text = buffer.toString("utf8")
  if (prefilter) {
    prefilter.lastIndex = 0
    if (!prefilter.test(text)) return []
  }
  const matches: Array<GrepMatch> = []
  // Lines end at `\n`; a final newline does not start another line.
  for (let start = 0, number = 1; start < text.length; number++) {
    let end = text.indexOf("\n", start)
    if (end === -1) end = text.length
    const line = text.slice(start, end)
    if (regex.test(line)) matches.push({ path: file, line: number, text: line.endsWith("\r") ? line.slice(0, -1) : line })
    start = end + 1
  }
  return matches
}

export const builtinGrep = (input: GrepInput): Effect.Effect<GrepResult, FileSearchError> =>
  abortable(input.signal, async (signal) => {
    const regex = compilePattern(input.pattern)
    // A whole-file test rejects most files cheaply; lookbehinds could see across lines, so not for them.
    const prefilter = input.pattern.includes("(?<") ? undefined : new RegExp(regex.source, `${regex.flags}m`)
    const root = path.resolve(input.cwd)
    const limit = input.limit ?? Number.POSITIVE_INFINITY
    const matches: Array<GrepMatch> = []
    let truncated = false
    let partial = false
    let excluded = 0
    const stat = await statOrFail(root)
    const pool = new TaskPool(CONCURRENCY)
    const onAbort = () => pool.stop()
    signal.addEventListener("abort", onAbort)
    const search = (file: string) =>
      pool.push(async () => {
        const found = await searchFile(file, regex, prefilter)
        if (found === undefined) {
          partial = true
          return
        }
        if (pool.stopped && signal.aborted) return
        // Checked after the search, so both engines count the same files: those with matches.
        if (found.length > 0 && input.exclude?.(file)) {
          excluded++
          return
        }
        for (const match of found) {
          if (matches.length >= limit) {
            truncated = true
            pool.stop()
            return
          }
          matches.push(match)
        }
      })
    try {
      if (stat.isDirectory()) {
        await walk({ root, globs: withGitExcluded(input.globs), pool, onError: () => void (partial = true), onFile: search })
      } else {
        // A file named explicitly is searched whatever the globs and ignore files say (as ripgrep does).
        search(root)
        await pool.wait()
      }
    } finally {
      signal.removeEventListener("abort", onAbort)
    }
    if (signal.aborted) throw new SearchFailed({ detail: "The search was aborted." })
    return { matches, truncated, partial, excluded }
  })
