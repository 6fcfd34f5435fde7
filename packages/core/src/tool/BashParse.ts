import { Data, Effect } from "effect"
import { createRequire } from "node:module"
import { Language, type Node, Parser } from "web-tree-sitter"
import type { PermissionRule, PermissionRuleset } from "@agent/domain"
import * as BashArity from "./BashArity.js"
import { type BashCommand, commandOf, isComputedName, patternTextOf, redirectTarget, valueOf } from "./BashWords.js"
import * as Permission from "../permission/Permission.js"
import { commandName, runsOf } from "./BashWrappers.js"

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
