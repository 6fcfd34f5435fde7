import { Data, Effect } from "effect"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { Language, type Node, Parser } from "web-tree-sitter"
import type { PermissionRule, PermissionRuleset } from "@agent/domain"
import * as BashArity from "./BashArity.js"
import * as Permission from "../permission/Permission.js"
import type { InstanceInfo } from "../runtime/Instance.js"
import { commandName, runsOf } from "./BashWrappers.js"
import { isInsideProject, realPath } from "./ExternalDirectory.js"

/**
 * Splits a shell command into the commands it runs, so each is checked against the `bash`
 * rules on its own: a denied `rm` hidden in `ls && rm -rf x`, in a pipe, a subshell, `$( )`,
 * backticks, a loop body or a function is still seen.
 *
 * A command's pattern is its source text, as in OpenCode. Where that text is not the command
 * as it runs, the command as it runs is a pattern too, and an allow must cover every form:
 * - the words as the command receives them (`FOO=1 rm x`, `\rm x`, `"rm" x`, `$'\x72m' x`);
 * - the name a path runs as (`/usr/bin/../bin/rm x` runs `rm x`);
 * - what a wrapper runs (`sudo`, `env -S`, `timeout`, `xargs`, … read with their own option
 *   grammar, BashWrappers.ts), `find -exec` commands, and the scripts run as text: `bash -c`,
 *   `eval`, `trap`, alias values, `watch`, `su -c`, and a heredoc or herestring fed to a shell
 *   or to `source /dev/stdin`;
 * - line continuations joined (`r\⏎m` is `rm`).
 * A command whose name is not known before it runs (`$R x`, `$(echo rm) x`, `/bin/r? x`, a
 * script piped into a shell, input the grammar cannot read) is opaque: no rule can tell what
 * it is, and PermissionService decides it by the strictest rule that could apply.
 */

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

/** A command whose name cannot be known before it runs. */
export interface OpaqueCommand {
  /** Its source text: what a rule written on purpose for it names. */
  readonly text: string
  /** Why what it runs is not known. */
  readonly reason: string
}

export interface ParsedCommand {
  /**
   * Every simple command, in source order, including `cd` and friends, then the commands of the
   * scripts it runs as text (`bash -c '…'`, `eval …`).
   */
  readonly commands: ReadonlyArray<BashCommand>
  /** Every command that runs, by the name it runs as and its words: through wrappers, paths resolved. */
  readonly runs: ReadonlyArray<ReadonlyArray<string>>
  /** The files the script redirects output to or input from (`> out.txt`, `< in.txt`), as the shell sees them. */
  readonly redirects: ReadonlyArray<string>
  /** `bash` permission patterns, de-duplicated, in source order. */
  readonly patterns: ReadonlyArray<string>
  /** The matching "always allow" patterns (`git status *`), de-duplicated. */
  readonly always: ReadonlyArray<string>
  /** Commands whose name cannot be known before they run; their texts are among `patterns`. */
  readonly opaque: ReadonlyArray<OpaqueCommand>
  /**
   * tree-sitter could not make sense of part of the input (or of a script it runs). That whole
   * script is then one more pattern (and its own exact "always" entry), and opaque.
   */
  readonly incomplete: boolean
}

/** The parser could not be loaded (a broken installation), or gave up on the input. */
export class BashParseError extends Data.TaggedError("BashParseError")<{ readonly reason: string }> {
  override get message() {
    return `Could not parse the shell command: ${this.reason}`
  }
}

/** Changing directory is not an action a rule should have to allow. */
const DIRECTORY_CHANGES: ReadonlySet<string> = new Set(["cd", "chdir", "pushd", "popd"])

/** Commands whose arguments are paths, checked against the project boundary. */
export const FILE_COMMANDS: ReadonlySet<string> = new Set([
  "cd", "chdir", "pushd", "popd", "rm", "cp", "mv", "mkdir", "touch", "chmod", "chown", "cat", "ln", "rmdir"
])

/** Builtins that are not `command` nodes in the grammar but still act (`export`, `unset`). */
const COMMAND_TYPES: ReadonlySet<string> = new Set(["command", "declaration_command", "unset_command"])

// ---------------------------------------------------------------------------------------------
// The parser: loaded once per process, on first use. Both wasm files ship in node_modules.

const require = createRequire(import.meta.url)
let loading: Promise<Parser> | undefined

const loadParser = (): Promise<Parser> => {
  loading ??= (async () => {
    const runtime = require.resolve("web-tree-sitter/tree-sitter.wasm")
    await Parser.init({ locateFile: () => runtime })
    const language = await Language.load(require.resolve("tree-sitter-bash/tree-sitter-bash.wasm"))
    const parser = new Parser()
    parser.setLanguage(language)
    return parser
  })().catch((error: unknown) => {
    // A failed load may be retried by the next call.
    loading = undefined
    throw error
  })
  return loading
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

const valueOf = (node: Node): string => {
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
const patternTextOf = (node: Node, source: string): string => {
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

const commandOf = (node: Node, source: string): BashCommand => {
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
const redirectTarget = (node: Node): string | undefined => {
  const destination = node.childForFieldName("destination")
  if (destination === null || destination.isMissing) return undefined
  const operator = node.children.find((child) => child !== null && !child.isNamed)?.type
  const value = valueOf(destination)
  if ((operator === ">&" || operator === "<&") && /^(\d+-?|-)$/.test(value)) return undefined
  return value
}

// ---------------------------------------------------------------------------------------------
// Standard input: a shell (or `source /dev/stdin`) that reads its script from it runs what
// arrives there. A heredoc or herestring is text we can read; a pipe is not.

type Stdin =
  | { readonly _tag: "Closed" }
  /** `text`: the whole pipeline, which a rule allowing it on purpose names. */
  | { readonly _tag: "Pipe"; readonly text: string }
  | { readonly _tag: "Text"; readonly text: string }

const CLOSED: Stdin = { _tag: "Closed" }

/** The heredoc or herestring among `node`'s own redirects, as text. */
const redirectedText = (node: Node, children: ReadonlyArray<Node | null> = node.namedChildren): string | undefined => {
  for (const child of children) {
    if (child === null) continue
    if (child.type === "herestring_redirect") {
      const value = child.namedChildren.find((part) => part !== null)
      return value ? `${valueOf(value)}\n` : ""
    }
    if (child.type === "heredoc_redirect") return heredocText(child)
  }
  return undefined
}

/**
 * A heredoc's body. The grammar reads a body whose first line starts with a backslash
 * (`bash <<'E'⏎\rm -rf x⏎E`) as words of the redirect (or of a command after it) and leaves the body empty; the shell runs
 * that line. The body is then taken from the source: the line after the misread word's newline,
 * up to the terminator (leading tabs removed for `<<-`, as the shell does).
 */
/** The first word under `node` (outside a heredoc body) that runs over a line end: body text misread. */
const misreadWord = (node: Node): Node | undefined => {
  for (const part of node.namedChildren) {
    if (part === null || part.type === "heredoc_body") continue
    if (part.type === "word" && part.text.includes("\n")) return part
    const inner = misreadWord(part)
    if (inner !== undefined) return inner
  }
  return undefined
}

const heredocText = (redirect: Node): string => {
  const parts = redirect.namedChildren.filter((part): part is Node => part !== null)
  const misread = misreadWord(redirect)
  if (misread === undefined) return parts.find((part) => part.type === "heredoc_body")?.text ?? ""
  const end = parts.find((part) => part.type === "heredoc_end")
  const start = misread.startIndex + misread.text.indexOf("\n") + 1
  const body = redirect.text.slice(start - redirect.startIndex, (end?.startIndex ?? redirect.endIndex) - redirect.startIndex)
  return redirect.children.some((part) => part?.type === "<<-") ? body.replace(/^\t+/gm, "") : body
}

/**
 * The standard input of `child`, a named child of `parent` whose own input is `stdin`: a pipe
 * for every command of a pipeline but the first, the heredoc or herestring of a redirected
 * statement for its body. The grammar hangs a redirect written after `a | b` on the whole
 * pipeline; the shell gives it to the last command.
 */
const stdinOfChild = (parent: Node, index: number, count: number, stdin: Stdin, source: string): Stdin => {
  if (parent.type === "pipeline" && index > 0) {
    const outer = parent.parent
    if (index === count - 1 && outer?.type === "redirected_statement" && outer.childForFieldName("body")?.id === parent.id) {
      const text = redirectedText(outer)
      if (text !== undefined) return { _tag: "Text", text }
    }
    return { _tag: "Pipe", text: patternTextOf(parent, source) }
  }
  if (parent.type === "redirected_statement" && index === 0) {
    const text = redirectedText(parent)
    if (text !== undefined) return { _tag: "Text", text }
  }
  return stdin
}

/** `r\⏎m` is `rm` to the shell; the grammar reads two words. Joined outside single quotes. */
export const joinContinuations = (source: string): string => {
  let out = ""
  let mode: "plain" | "single" | "double" | "ansi" = "plain"
  for (let index = 0; index < source.length; index++) {
    const char = source[index]!
    if (mode === "single") {
      out += char
      if (char === "'") mode = "plain"
      continue
    }
    if (char === "\\") {
      const next = source[index + 1]
      index++
      if (next === "\n" && mode !== "ansi") continue
      out += char + (next ?? "")
      continue
    }
    if (mode === "double") {
      if (char === "\"") mode = "plain"
    } else if (mode === "ansi") {
      if (char === "'") mode = "plain"
    } else if (char === "'") {
      mode = out.endsWith("$") ? "ansi" : "single"
    } else if (char === "\"") {
      mode = "double"
    }
    out += char
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Analysis.

/** The always-allow pattern of a command: its arity prefix and anything after it. */
export const alwaysPattern = (tokens: ReadonlyArray<string>): string => `${BashArity.prefix(tokens).join(" ")} *`

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/

/** Scripts inside scripts (`bash -c "eval '…'"`) are followed this deep. */
const MAX_NESTING = 3
/** Wrappers inside wrappers (`sudo env nice nohup …`) are followed this deep. */
const MAX_UNWRAP = 16

/** The commands `find … -exec cmd {} ;` (and `-execdir`, `-ok`, `-okdir`) runs. */
export const findExecCommands = (tokens: ReadonlyArray<string>): Array<ReadonlyArray<string>> => {
  if (tokens[0] === undefined || commandName(tokens[0]) !== "find") return []
  const found: Array<ReadonlyArray<string>> = []
  for (let index = 1; index < tokens.length; index++) {
    if (!["-exec", "-execdir", "-ok", "-okdir"].includes(tokens[index]!)) continue
    const end = tokens.findIndex((word, at) => at > index && (word === ";" || word === "+"))
    const words = tokens.slice(index + 1, end === -1 ? tokens.length : end)
    if (words.length > 0) found.push(words)
    index = end === -1 ? tokens.length : end
  }
  return found
}

/** One simple command and what it runs. */
interface Entry {
  readonly command: BashCommand
  /** The commands it runs, itself first, by the name they run as. */
  readonly runs: Array<ReadonlyArray<string>>
}

interface Analysis {
  readonly entries: Array<Entry>
  readonly redirects: Array<string>
  readonly opaque: Array<OpaqueCommand>
  /** Parts of the input tree-sitter could not read (the outer script, or a nested one, whole). */
  readonly unreadable: Array<string>
}

/** `owner`: the outermost command's text, which an opaque command inside its scripts is known by. */
type Analyze = (source: string, depth: number, stdin: Stdin, owner: string) => void

/**
 * Follows `tokens` through the wrappers and scripts it runs, adding each command that runs
 * to `runs`; a name computed at run time, a script from a pipe or an unreadable wrapper is
 * opaque.
 */
const follow = (
  tokens: ReadonlyArray<string>,
  context: {
    /** The command's text, or the outermost command's when it runs inside a script given as text. */
    readonly text: string
    readonly owned: boolean
    readonly stdin: Stdin
    readonly depth: number
    readonly runs: Array<ReadonlyArray<string>>
  },
  into: Analysis,
  analyze: Analyze
): void => {
  const opaque = (reason: string, text = context.text): void => void into.opaque.push({ text, reason })
  const script = (text: string, stdin: Stdin): void => {
    if (context.depth >= MAX_NESTING) return opaque(`scripts nest deeper than ${MAX_NESTING} levels`)
    if (text.trim() !== "") analyze(text, context.depth + 1, stdin, context.text)
  }
  let current = tokens
  for (let hop = 0; hop < MAX_UNWRAP; hop++) {
    // `sudo X=1 rm x` sets X for rm; other wrappers would fail to run `X=1`, and reading it so is stricter.
    while (hop > 0 && current.length > 0 && ASSIGNMENT.test(current[0]!)) current = current.slice(1)
    const first = current[0]
    if (first === undefined) return
    if (isComputedName(first)) return opaque(`the name of the command it runs (${first}) is computed when it runs`)
    const name = commandName(first)
    const resolved = [name, ...current.slice(1)]
    context.runs.push(resolved)
    for (const exec of findExecCommands(resolved)) follow(exec, context, into, analyze)
    const runs = runsOf(resolved)
    if (runs === undefined) return
    switch (runs._tag) {
      case "Command":
        current = runs.tokens
        continue
      case "Script":
        return script(runs.script, context.stdin)
      case "Stdin":
        if (context.stdin._tag === "Pipe") {
          return opaque(`${name} runs the script piped into it, which is not known before it runs`, context.owned ? context.text : context.stdin.text)
        }
        if (context.stdin._tag === "Text") return script(context.stdin.text, CLOSED)
        // The bash tool's standard input is closed: a shell that reads it runs nothing.
        return
      case "Unknown":
        return opaque(runs.reason)
    }
  }
  opaque(`wrappers nest deeper than ${MAX_UNWRAP} levels`)
}

const analyzeTree = (parser: Parser, source: string, depth: number, stdin: Stdin, owner: string | undefined, into: Analysis): void => {
  const tree = parser.parse(source)
  if (tree === null) throw new Error("the parser returned no tree")
  const found: Array<{ readonly entry: Entry; readonly stdin: Stdin }> = []
  try {
    const visit = (node: Node, input: Stdin): void => {
      // A command the parser only invented to repair broken input (`ls &&`) has no text.
      const children = node.namedChildren
      if (COMMAND_TYPES.has(node.type) && !node.isMissing && node.text.trim() !== "") {
        const own = node.type === "command" ? redirectedText(node, children) : undefined
        found.push({ entry: { command: commandOf(node, source), runs: [] }, stdin: own === undefined ? input : { _tag: "Text", text: own } })
      }
      if (node.type === "file_redirect") {
        const target = redirectTarget(node)
        if (target !== undefined && target !== "") into.redirects.push(target)
      }
      const pipes = node.type === "pipeline" || node.type === "redirected_statement"
      children.forEach((child, index) => {
        if (child !== null) visit(child, pipes ? stdinOfChild(node, index, children.length, input, source) : input)
      })
    }
    visit(tree.rootNode, stdin)
    if (tree.rootNode.hasError && source.trim() !== "") {
      into.unreadable.push(source.trim())
      into.opaque.push({ text: owner ?? source.trim(), reason: "the shell grammar could not read all of it" })
    }
  } finally {
    tree.delete()
  }
  into.entries.push(...found.map((item) => item.entry))
  const analyze: Analyze = (text, nested, input, outer) => analyzeSource(parser, text, nested, input, outer, into)
  for (const { entry, stdin: input } of found) {
    const text = owner ?? entry.command.text
    follow(entry.command.tokens, { text, owned: owner !== undefined, stdin: input, depth, runs: entry.runs }, into, analyze)
  }
}

/** Collects the commands of `source`, read as the grammar reads it and with continuations joined. */
const analyzeSource = (parser: Parser, source: string, depth: number, stdin: Stdin, owner: string | undefined, into: Analysis): void => {
  analyzeTree(parser, source, depth, stdin, owner, into)
  if (source.includes("\\\n")) {
    const joined = joinContinuations(source)
    if (joined !== source) analyzeTree(parser, joined, depth, stdin, owner, into)
  }
}

/** Parses `command` into the commands it runs and the permission patterns they need. */
export const parseCommand = (command: string): Effect.Effect<ParsedCommand, BashParseError> =>
  Effect.tryPromise({
    try: loadParser,
    catch: (error) => new BashParseError({ reason: `the bash grammar could not be loaded (${String(error)})` })
  }).pipe(
    Effect.flatMap((parser) =>
      Effect.try({
        try: () => {
          const into: Analysis = { entries: [], redirects: [], opaque: [], unreadable: [] }
          analyzeSource(parser, command, 0, CLOSED, undefined, into)
          const patterns = new Set<string>()
          const always = new Set<string>()
          for (const { command: entry, runs } of into.entries) {
            const name = entry.tokens[0]
            if (name === undefined) continue
            if (!DIRECTORY_CHANGES.has(commandName(name))) {
              patterns.add(entry.text)
              if (entry.respelled) patterns.add(entry.tokens.join(" "))
              always.add(alwaysPattern(entry.tokens))
              if (entry.respelled) always.add(`${entry.sourcePrefix} *`)
            }
            // `/bin/rm x`, `sudo rm -rf x`, `xargs rm`, `find -exec rm`: what actually runs is checked too.
            for (const run of runs) {
              // The command itself, when its name is not a path, is the source pattern already.
              if (run === runs[0] && run[0] === name) continue
              if (DIRECTORY_CHANGES.has(run[0]!)) continue
              patterns.add(run.join(" "))
              always.add(alwaysPattern(run))
            }
          }
          // What could not be read, or whose name is not known, is checked as a whole, so a rule still sees it.
          for (const { text } of into.opaque) {
            patterns.add(text)
            always.add(text)
          }
          const opaque = [...new Map(into.opaque.map((entry) => [entry.text, entry])).values()]
          return {
            commands: into.entries.map((entry) => entry.command),
            runs: into.entries.flatMap((entry) => entry.runs),
            redirects: into.redirects,
            patterns: [...patterns],
            always: [...always],
            opaque,
            incomplete: into.unreadable.length > 0
          } satisfies ParsedCommand
        },
        catch: (error) => new BashParseError({ reason: String(error) })
      })
    )
  )

const STRICTNESS = { allow: 0, ask: 1, deny: 2 } as const

/**
 * What the `bash` rules decide for `command` without asking anyone: every pattern the bash tool
 * would ask for, each command the rules cannot read by `Permission.evaluateOpaque`; the
 * strictest decides. For callers that cannot ask (the server expanding a client's arguments).
 */
export const decideCommand = (command: string, ...rulesets: ReadonlyArray<PermissionRuleset>) =>
  Effect.map(parseCommand(command), (parsed) => {
    const unreadable = new Map(parsed.opaque.map((entry) => [entry.text, entry.reason]))
    let worst: { readonly pattern: string; readonly rule: PermissionRule; readonly unreadable?: string } | undefined
    for (const pattern of parsed.patterns) {
      const reason = unreadable.get(pattern)
      const rule = reason === undefined
        ? Permission.evaluate("bash", pattern, ...rulesets)
        : Permission.evaluateOpaque("bash", pattern, ...rulesets)
      if (worst === undefined || STRICTNESS[rule.action] > STRICTNESS[worst.rule.action]) {
        worst = { pattern, rule, ...(reason === undefined ? {} : { unreadable: reason }) }
      }
    }
    return worst
  })

// ---------------------------------------------------------------------------------------------
// Paths outside the project.

/** `~`, `~/x`, `$NAME/x` and `${NAME}/x` as the shell would see them; unknown variables are empty. */
export const expandPath = (arg: string, instance: InstanceInfo): string => {
  const home = instance.home
  let value = arg
  if (value === "~") value = home
  else if (value.startsWith("~/")) value = path.join(home, value.slice(2))
  return value.replace(/\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g, (_match, braced, bare) => {
    const name = (braced ?? bare) as string
    return name === "HOME" ? home : instance.env[name] ?? ""
  })
}

/** A chmod mode: octal (`755`) or symbolic (`u+x`, `-w`, `a=r,u+w`). */
const CHMOD_MODE = /^(?:[0-7]{1,4}|(?:[ugoa]*[-+=][rwxXstugo]*)(?:,[ugoa]*[-+=][rwxXstugo]*)*)$/

/** The arguments of a file command that name paths: flags, chmod modes and chown owners are skipped. */
export const pathArguments = (tokens: ReadonlyArray<string>): Array<string> => {
  const [name, ...args] = tokens
  if (name === undefined || !FILE_COMMANDS.has(name)) return []
  const paths: Array<string> = []
  let optionsEnded = false
  let modeSeen = name !== "chmod" || args.some((arg) => arg.startsWith("--reference"))
  let ownerSeen = name !== "chown" || args.some((arg) => arg.startsWith("--reference"))
  for (const arg of args) {
    if (arg === "") continue
    if (!modeSeen && CHMOD_MODE.test(arg)) {
      modeSeen = true
      continue
    }
    if (!optionsEnded) {
      if (arg === "--") {
        optionsEnded = true
        continue
      }
      if (arg.startsWith("-")) continue
      if ((name === "pushd" || name === "popd") && arg.startsWith("+")) continue
    }
    if (!ownerSeen) {
      ownerSeen = true
      continue
    }
    paths.push(arg)
  }
  // A bare `cd` goes home.
  if (args.length === 0 && (name === "cd" || name === "chdir")) paths.push("~")
  return paths
}

const isDirectory = (target: string): boolean => {
  try {
    return fs.statSync(target).isDirectory()
  } catch {
    return false
  }
}

/** `<dir>/*` for a path outside the project: the directory itself, or a file's parent. */
const globOf = (target: string): string => {
  const real = realPath(target)
  return path.join(isDirectory(real) ? real : path.dirname(real), "*")
}

/** Redirecting to these reaches no file of anybody's. */
const STREAM_DEVICES: ReadonlySet<string> = new Set(["/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty"])
const isStreamDevice = (file: string) => STREAM_DEVICES.has(file) || /^\/dev\/fd\/\d+$/.test(file)

/**
 * The `external_directory` patterns a script needs: the working directory when it lies outside
 * the project, every path argument of a file command that does, and every file it redirects to
 * or from that does (`> ../elsewhere/out.txt`; `/dev/null` and the standard streams are not
 * files). Relative paths are taken from `workdir`; symlinks are followed, so a link inside the
 * project that points out counts as outside.
 */
export const externalDirectories = (
  runs: ReadonlyArray<ReadonlyArray<string>>,
  options: { readonly instance: InstanceInfo; readonly workdir: string; readonly redirects?: ReadonlyArray<string> }
): Array<string> => {
  const { instance, workdir } = options
  const globs = new Set<string>()
  const check = (arg: string) => {
    const absolute = path.resolve(workdir, expandPath(arg, instance))
    if (!isStreamDevice(absolute) && !isInsideProject(instance, absolute)) globs.add(globOf(absolute))
  }
  if (!isInsideProject(instance, workdir)) globs.add(globOf(workdir))
  // `runs` holds what wrappers run too: `sudo rm /etc/x` checks `rm /etc/x`.
  for (const run of runs) for (const arg of pathArguments(run)) check(arg)
  for (const target of options.redirects ?? []) check(target)
  return [...globs]
}
