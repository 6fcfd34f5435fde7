import { Effect } from "effect"
import * as fsp from "node:fs/promises"
import * as path from "node:path"

// A small glob: `*` and `?` within one path segment, `**` for any number of segments, `{a,b}`
// alternatives. Enough for `instructions` entries; `.git` and `node_modules` are not entered.

const MAGIC = /[*?{[]/
const SKIP_DIRS: ReadonlySet<string> = new Set([".git", "node_modules"])
const MAX_MATCHES = 1_000

const segmentRegex = (segment: string): RegExp => {
  let out = ""
  let inBraces = false
  for (const char of segment) {
    if (char === "*") out += "[^/]*"
    else if (char === "?") out += "[^/]"
    else if (char === "{") {
      out += "(?:"
      inBraces = true
    } else if (char === "}" && inBraces) {
      out += ")"
      inBraces = false
    } else if (char === "," && inBraces) out += "|"
    else out += char.replace(/[.+^$()|[\]\\]/g, "\\$&")
  }
  return new RegExp(`^${out}$`)
}

/** Existing files matching the absolute `pattern` (the pattern itself when it has no magic). */
export const expandGlob = (pattern: string): Effect.Effect<ReadonlyArray<string>> =>
  Effect.promise(async () => {
    const segments = pattern.split(path.sep)
    const firstMagic = segments.findIndex((segment) => MAGIC.test(segment))
    if (firstMagic < 0) {
      const stat = await fsp.stat(pattern).catch(() => undefined)
      return stat?.isFile() ? [pattern] : []
    }
    const base = segments.slice(0, firstMagic).join(path.sep) || path.sep
    const rest = segments.slice(firstMagic).filter((segment) => segment !== "")
    const matchers = rest.map((segment) => (segment === "**" ? "**" as const : segmentRegex(segment)))
    const found: Array<string> = []

    const walk = async (dir: string, index: number): Promise<void> => {
      if (found.length >= MAX_MATCHES || index >= matchers.length) return
      const matcher = matchers[index]!
      if (matcher === "**") {
        // `**` matches nothing here, or one more directory level.
        await walk(dir, index + 1)
      }
      const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => [])
      await Promise.all(entries.map(async (entry) => {
        const full = path.join(dir, entry.name)
        const isDir = entry.isDirectory() ||
          (entry.isSymbolicLink() && (await fsp.stat(full).then((s) => s.isDirectory(), () => false)))
        if (matcher === "**") {
          if (isDir && !SKIP_DIRS.has(entry.name) && !entry.name.startsWith(".")) await walk(full, index)
          else if (!isDir && index === matchers.length - 1) found.push(full)
          return
        }
        if (!matcher.test(entry.name)) return
        if (index === matchers.length - 1) {
          if (!isDir) found.push(full)
        } else if (isDir) {
          await walk(full, index + 1)
        }
      }))
    }
    await walk(base, 0)
    return [...new Set(found)].sort()
  })
