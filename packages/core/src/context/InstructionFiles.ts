import * as fs from "node:fs"
import * as path from "node:path"
import { isWithin as within } from "../tool/ExternalDirectory.js"
import * as InstructionLimits from "./InstructionLimits.js"

// Instruction files on disk: where they are looked for, and reading them (re-read only when changed).

/** Project files that hold instructions; the first name found anywhere on the path wins. */
export const PROJECT_FILES = ["AGENTS.md", "CLAUDE.md", "CONTEXT.md"] as const

/** One instruction as it is sent: a file or a URL with its text. */
export interface Entry extends InstructionLimits.Sized {
  readonly kind: "file" | "url"
}

export const formatEntry = (source: string, text: string): string => `Instructions from: ${source}\n${text}`

/** Directories from `start` up to `stop` (inclusive), nearest first; just `start` when outside `stop`. */
export const upward = (start: string, stop: string): Array<string> => {
  if (!within(start, stop)) return [start]
  const dirs: Array<string> = []
  for (let dir = start; ; dir = path.dirname(dir)) {
    dirs.push(dir)
    if (dir === stop || path.dirname(dir) === dir) break
  }
  return dirs
}

export const isFileSync = (file: string): boolean => {
  try {
    return fs.statSync(file, { throwIfNoEntry: false })?.isFile() ?? false
  } catch {
    return false
  }
}

/** The first `bytes` bytes of a file (a huge AGENTS.md is never read whole). */
const readHead = (file: string, bytes: number): string => {
  const fd = fs.openSync(file, "r")
  try {
    const buffer = Buffer.alloc(bytes)
    return buffer.subarray(0, fs.readSync(fd, buffer, 0, bytes, 0)).toString("utf8")
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * A reader of instruction files that keeps their contents, keyed by path and validated by
 * (mtimeMs, size). It returns the trimmed text of `file` (of its first `maxBytes` bytes when it is
 * larger) and its size, or undefined when it is not a readable file.
 */
export const makeFileReader = (maxBytes: number) => {
  const contents = new Map<string, { readonly mtimeMs: number; readonly size: number; readonly text: string }>()
  // Checked every step, so synchronous: a stat is microseconds, a thread-pool round trip is not.
  return (file: string): { readonly text: string; readonly size: number } | undefined => {
    let stat: fs.Stats | undefined
    try {
      // No exception for the usual case, a file that does not exist.
      stat = fs.statSync(file, { throwIfNoEntry: false })
    } catch {
      stat = undefined
    }
    if (!stat?.isFile()) {
      contents.delete(file)
      return undefined
    }
    const cached = contents.get(file)
    if (cached !== undefined && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size) return cached
    let raw: string
    try {
      raw = stat.size > maxBytes ? readHead(file, maxBytes) : fs.readFileSync(file, "utf8")
    } catch {
      return undefined
    }
    const text = (raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw).trim()
    const read = { mtimeMs: stat.mtimeMs, size: stat.size, text }
    contents.set(file, read)
    return read
  }
}
