import { ConfigError } from "@agent/domain"
import type { ConfigSource } from "@agent/domain"
import * as fs from "node:fs"
import * as path from "node:path"
import type { InstanceInfo } from "../runtime/Instance.js"
import type { ConfigWarning } from "./ConfigInfo.js"

// ---------------------------------------------------------------------------------------------
// Plumbing. The loader is synchronous and throws `ConfigError`; `loadConfig` turns that into
// the error channel. Config files are small, so sync fs keeps this simple and fast.

export type JsonObject = Record<string, unknown>
export type Path = ReadonlyArray<string>

export const isObject = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

export const pathKey = (p: Path): string => JSON.stringify(p)

export const configError = (file: string, detail: string, line?: number, key?: string): ConfigError =>
  new ConfigError({
    file,
    detail,
    ...(line === undefined ? {} : { line }),
    ...(key === undefined ? {} : { key })
  })

export const makeSource = (file: string, key: Path, line: number | undefined): ConfigSource =>
  line === undefined ? { file, key: key.join(".") } : { file, key: key.join("."), line }

/** An environment switch is on unless unset, empty, "0" or "false". */
export const isEnvFlag = (value: string | undefined): boolean =>
  value !== undefined && value !== "" && value !== "0" && value.toLowerCase() !== "false"

/** Maps character offsets of a text to 1-based line numbers. */
export const lineIndex = (text: string): (offset: number) => number => {
  const starts = [0]
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1)
  return (offset) => {
    let lo = 0
    let hi = starts.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (starts[mid]! <= offset) lo = mid
      else hi = mid - 1
    }
    return lo + 1
  }
}

export const readText = (file: string): string | undefined => {
  let stat: fs.Stats
  try {
    stat = fs.statSync(file)
  } catch {
    return undefined
  }
  if (!stat.isFile()) return undefined
  try {
    const text = fs.readFileSync(file, "utf8")
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  } catch (error) {
    throw configError(file, `cannot read file: ${error instanceof Error ? error.message : String(error)}`)
  }
}

export const isDirectory = (dir: string): boolean => {
  try {
    return fs.statSync(dir).isDirectory()
  } catch {
    return false
  }
}

export const expandHome = (p: string, home: string): string =>
  p === "~" ? home : p.startsWith("~/") ? path.join(home, p.slice(2)) : p

/** One loaded layer, already normalised into the shape of the merged config. */
export interface Source {
  readonly file: string
  readonly value: JsonObject
  /** Where a path of `value` is written in the file. */
  readonly locate: (p: Path) => ConfigSource
}

/** Paths whose value was moved during normalisation, mapped to where they are in the file. */
export type Remap = Map<string, Path>

export const remapPath = (remap: Remap, p: Path): Path => {
  for (let i = p.length; i > 0; i--) {
    const to = remap.get(pathKey(p.slice(0, i)))
    if (to !== undefined) return [...to, ...p.slice(i)]
  }
  return p
}

export interface LoadContext {
  readonly instance: InstanceInfo
  readonly warnings: Array<ConfigWarning>
  /** What `{env:}` and `{file:}` references put in, with the reference: secrets until shown otherwise. */
  readonly substitutions: Map<string, string>
}

/** Whether the file looks binary: a NUL byte in its first 8 KB (as git decides). */
export const isBinaryFile = (file: string): boolean => {
  let fd: number | undefined
  try {
    fd = fs.openSync(file, "r")
    const head = Buffer.alloc(8192)
    return head.subarray(0, fs.readSync(fd, head, 0, head.length, 0)).includes(0)
  } catch {
    return false
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

/**
 * `.md` files below `dir`, sorted, with their names relative to `dir` (`/`-separated, no
 * extension). Other files, and binary `.md` files, are skipped with a warning (dotfiles quietly).
 */
export const markdownFiles = (
  dir: string,
  recursive: boolean,
  warnings: Array<ConfigWarning>
): Array<{ readonly file: string; readonly name: string }> => {
  const out: Array<{ file: string; name: string }> = []
  const walk = (current: string) => {
    let entries: Array<fs.Dirent>
    try {
      entries = fs.readdirSync(current, { withFileTypes: true })
    } catch {
      return
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const entry of entries) {
      const full = path.join(current, entry.name)
      const isDir = entry.isDirectory() || (entry.isSymbolicLink() && isDirectory(full))
      if (isDir) {
        if (recursive) walk(full)
      } else if (entry.name.startsWith(".")) {
        continue
      } else if (!entry.name.endsWith(".md")) {
        warnings.push({ file: full, key: "", message: "not a .md file; skipped (agents and commands are markdown files)" })
      } else if (isBinaryFile(full)) {
        warnings.push({ file: full, key: "", message: "binary file, not markdown; skipped" })
      } else {
        const name = path.relative(dir, full).slice(0, -".md".length).split(path.sep).join("/")
        out.push({ file: full, name })
      }
    }
  }
  walk(dir)
  return out
}
