import type { Node } from "web-tree-sitter"
import * as BashArity from "./BashArity.js"

/** One simple command of a script. */
export interface BashCommand {
  /** The permission pattern: the command's source text, with its redirects when it has any. */
  readonly text: string
  /** The command name and its arguments as words, quotes and escapes removed. */
  readonly tokens: ReadonlyArray<string>
  /**
   * The source text of the command up to the end of its arity prefix (`FOO=1 npm test` for
   * `FOO=1 npm test --watch`), for an "always" pattern that covers the source-text pattern.
   */
  readonly sourcePrefix: string
  /** The command's own source text differs from its words joined by spaces. */
  readonly respelled: boolean
}

// ---------------------------------------------------------------------------------------------
// Words. The value of an argument is what the command receives, as far as it can be known
// without running anything: quotes and escapes go, expansions (`$HOME`, `$(...)`) stay as written.

const unescapeWord = (text: string): string => text.replace(/\\\n/g, "").replace(/\\(.)/gs, "$1")

const unescapeDoubleQuoted = (text: string): string => text.replace(/\\\n/g, "").replace(/\\([$`"\\])/g, "$1")

const ANSI_C_ESCAPES: Readonly<Record<string, string>> = {
  a: "\x07", b: "\b", e: "\x1b", E: "\x1b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v", "\\": "\\", "'": "'", "\"": "\"", "?": "?"
}

/** The text of `$'…'` as bash decodes it: `\x72` is `r`, `\162` is `r`, `\u0072` is `r`. */
export const decodeAnsiC = (body: string): string =>
  body.replace(
    /\\(?:([abeEfnrtv\\'"?])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|c(.))/gs,
    (whole, simple?: string, octal?: string, hex?: string, u4?: string, u8?: string, control?: string) => {
      if (simple !== undefined) return ANSI_C_ESCAPES[simple]!
      if (octal !== undefined) return String.fromCharCode(parseInt(octal, 8) & 0xff)
      const code = parseInt(hex ?? u4 ?? u8 ?? "", 16)
      if (!Number.isNaN(code)) return code <= 0x10ffff ? String.fromCodePoint(code) : whole
      return String.fromCharCode(control!.toUpperCase().charCodeAt(0) ^ 0x40)
    }
  )

export const valueOf = (node: Node): string => {
  switch (node.type) {
    case "word":
    case "number":
      return unescapeWord(node.text)
    case "string":
      return unescapeDoubleQuoted(node.text.slice(1, -1))
    case "raw_string":
      return node.text.slice(1, -1)
    case "ansi_c_string":
      return decodeAnsiC(node.text.slice(2, -1))
    case "translated_string":
      return unescapeDoubleQuoted(node.text.slice(2, -1))
    case "command_name":
      return node.namedChildCount === 1 ? valueOf(node.namedChild(0)!) : node.text
    case "concatenation": {
      // Children need not cover the whole text; the gaps are plain word characters.
      const source = node.text
      const base = node.startIndex
      let at = 0
      let value = ""
      for (const child of node.namedChildren) {
        if (child === null) continue
        value += unescapeWord(source.slice(at, child.startIndex - base)) + valueOf(child)
        at = child.endIndex - base
      }
      return value + unescapeWord(source.slice(at))
    }
    default:
      return node.text
  }
}

/**
 * A command name the shell computes when it runs: an expansion or substitution (`$R`,
 * `${X:-rm}`, `$(…)`, backticks), a glob (`/bin/r?`, `[r]m`), brace expansion (`{r,}m`) or
 * process substitution. Quoted look-alikes (`'$R'`) count too: the stricter reading is safe.
 */
export const isComputedName = (word: string): boolean =>
  /[$`*?]|\[[^\]]*\]|\{[^{}]*(,|\.\.)[^{}]*\}|[<>]\(/.test(word)

/** The nodes of a command's words (name, then arguments) with their values. */
const wordsOf = (node: Node): Array<{ readonly node: Node; readonly value: string }> => {
  if (node.type === "command") {
    const name = node.childForFieldName("name")
    if (name === null) return []
    const args = node.childrenForFieldName("argument").filter((child): child is Node => child !== null)
    return [name, ...args].map((word) => ({ node: word, value: valueOf(word) }))
  }
  // declaration_command / unset_command: the keyword, then each operand as written.
  const keyword = node.child(0)
  const operands = node.namedChildren.filter((child): child is Node => child !== null)
  return [
    ...(keyword === null ? [] : [{ node: keyword, value: keyword.text }]),
    ...operands.map((operand) => ({ node: operand, value: valueOf(operand) }))
  ]
}

/**
 * A command is checked with its redirects: `echo hi > out.txt`. The grammar hangs a redirect
 * written after `a && b` or `a | b` on the whole list or pipeline, but the shell applies it to
 * the last command only, so that command's pattern runs to the end of the redirect. A redirect
 * on a `{ … }` group or a subshell belongs to no single command.
 */
export const patternTextOf = (node: Node, source: string): string => {
  let current = node
  let end = node.endIndex
  for (let parent = current.parent; parent !== null; parent = current.parent) {
    if (parent.type === "redirected_statement" && parent.childForFieldName("body")?.id === current.id) {
      end = parent.endIndex
    } else if (!((parent.type === "list" || parent.type === "pipeline") && parent.lastNamedChild?.id === current.id)) {
      break
    }
    current = parent
  }
  return source.slice(node.startIndex, end)
}

export const commandOf = (node: Node, source: string): BashCommand => {
  const words = wordsOf(node)
  const tokens = words.map((word) => word.value)
  const prefixWords = BashArity.prefix(tokens).length
  const lastPrefixWord = words[Math.max(prefixWords, 1) - 1]
  return {
    text: patternTextOf(node, source),
    tokens,
    sourcePrefix: lastPrefixWord ? source.slice(node.startIndex, lastPrefixWord.node.endIndex) : node.text,
    respelled: tokens.length > 0 && node.text !== tokens.join(" ")
  }
}

/** The file of a redirect; none for a descriptor copy (`2>&1`, `<&-`). */
export const redirectTarget = (node: Node): string | undefined => {
  const destination = node.childForFieldName("destination")
  if (destination === null || destination.isMissing) return undefined
  const operator = node.children.find((child) => child !== null && !child.isNamed)?.type
  const value = valueOf(destination)
  if ((operator === ">&" || operator === "<&") && /^(\d+-?|-)$/.test(value)) return undefined
  return value
}
