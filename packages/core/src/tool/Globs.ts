// Globs as ripgrep reads them (`--glob`), compiled to regular expressions over `/`-separated paths.

/**
 * A glob as a regular expression over `/`-separated paths: `**` (whole segments) crosses
 * directories, `*` and `?` stay inside one segment, `[...]` / `[!...]` classes, `{a,b}`
 * alternatives (nestable), `\` escapes the next character.
 */
export const globToRegExp = (glob: string, flags = ""): RegExp => new RegExp(`^${globSource(glob)}$`, flags)

const REGEX_SPECIAL = /[.*+?^${}()|[\]\\/]/g
const escapeRegex = (text: string) => text.replace(REGEX_SPECIAL, "\\$&")

const globSource = (glob: string): string => {
  let out = ""
  let depth = 0
  for (let i = 0; i < glob.length; i++) {
    const char = glob[i]!
    if (char === "\\") {
      i++
      out += i < glob.length ? escapeRegex(glob[i]!) : "\\\\"
    } else if (char === "*") {
      if (glob[i + 1] === "*") {
        const atStart = i === 0 || glob[i - 1] === "/" || glob[i - 1] === "{" || glob[i - 1] === ","
        const next = glob[i + 2]
        if (atStart && next === "/") {
          out += "(?:.*/)?"
          i += 2
          continue
        }
        if (atStart && (next === undefined || (depth > 0 && (next === "}" || next === ",")))) {
          out += ".*"
          i += 1
          continue
        }
        // `**` inside a segment is just two stars.
        i += 1
      }
      out += "[^/]*"
    } else if (char === "?") {
      out += "[^/]"
    } else if (char === "[") {
      const end = classEnd(glob, i)
      if (end === -1) {
        out += "\\["
        continue
      }
      let body = glob.slice(i + 1, end)
      let negated = false
      if (body.startsWith("!") || body.startsWith("^")) {
        negated = true
        body = body.slice(1)
      }
      const escaped = body.replace(/[\\\]^]/g, "\\$&")
      out += negated ? `[^/${escaped}]` : `(?!/)[${escaped}]`
      i = end
    } else if (char === "{") {
      depth++
      out += "(?:"
    } else if (char === "}" && depth > 0) {
      depth--
      out += ")"
    } else if (char === "," && depth > 0) {
      out += "|"
    } else {
      out += escapeRegex(char)
    }
  }
  // An unclosed `{` is closed at the end of the glob.
  return out + ")".repeat(depth)
}

/** Index of the `]` closing the class opened at `start`, or -1. A `]` first in the class is literal. */
const classEnd = (glob: string, start: number): number => {
  let i = start + 1
  if (glob[i] === "!" || glob[i] === "^") i++
  if (glob[i] === "]") i++
  for (; i < glob.length; i++) if (glob[i] === "]") return i
  return -1
}

export interface OverrideGlob {
  readonly regex: RegExp
  /** Plain globs include; `!` globs exclude. */
  readonly include: boolean
  readonly directoryOnly: boolean
}

/** A `--glob` as ripgrep reads it: gitignore anchoring (no `/` → any depth, leading `/` → root). */
export const compileOverride = (raw: string): OverrideGlob => {
  let glob = raw
  let include = true
  if (glob.startsWith("!")) {
    include = false
    glob = glob.slice(1)
  } else if (glob.startsWith("\\!")) {
    glob = glob.slice(1)
  }
  let directoryOnly = false
  if (glob.length > 1 && glob.endsWith("/")) {
    directoryOnly = true
    glob = glob.slice(0, -1)
  }
  if (glob.startsWith("/")) glob = glob.slice(1)
  else if (!glob.includes("/") && !glob.startsWith("**/")) glob = `**/${glob}`
  return { regex: globToRegExp(glob), include, directoryOnly }
}

/** `.git` is never listed or searched; it goes last so it wins over any user glob. */
export const withGitExcluded = (globs: ReadonlyArray<string> | undefined) => [...(globs ?? []), "!.git"]
