import { Data, Effect } from "effect"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { Language, type Node, Parser } from "web-tree-sitter"
import * as BashArity from "../BashArity.js"
import type { InstanceInfo } from "../Instance.js"
import { isInsideProject, realPath } from "./ExternalDirectory.js"

/**
 * Splits a shell command into the simple commands it runs, so every one of them is checked
 * against the `bash` rules on its own: a denied `rm` hidden in `ls && rm -rf x`, in a pipe,
 * a subshell, `$( )`, backticks or a loop body is still seen.
 *
 * A command's pattern is its source text, as in OpenCode. Where that text is not the command
 * as it runs (`FOO=1 rm -rf x`, `\rm -rf x`, `"rm" -rf x`, a line continuation), the words
 * as the command receives them are a second pattern, and a command run through a wrapper
 * (`sudo`, `env`, `nohup`, `xargs`, `timeout`, …) adds the command it runs, so `rm *: deny` is
 * dodged neither by spelling nor by a wrapper (and an allow must cover every form). Scripts run
 * as text (`bash -c '…'`, `eval …`) are parsed in turn, and `find -exec cmd` adds `cmd`.
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

export interface ParsedCommand {
  /**
   * Every simple command, in source order, including `cd` and friends, then the commands of the
   * scripts it runs as text (`bash -c '…'`, `eval …`).
   */
  readonly commands: ReadonlyArray<BashCommand>
  /** The files the script redirects output to or input from (`> out.txt`, `< in.txt`), as the shell sees them. */
  readonly redirects: ReadonlyArray<string>
  /** `bash` permission patterns, de-duplicated, in source order. */
  readonly patterns: ReadonlyArray<string>
  /** The matching "always allow" patterns (`git status *`), de-duplicated. */
  readonly always: ReadonlyArray<string>
  /**
   * tree-sitter could not make sense of part of the input (or of a script it runs). That whole
   * script is then added as one more pattern (and as its own exact "always" entry), so a rule
   * still sees it.
   */
  readonly incomplete: boolean
}

/** The parser could not be loaded (a broken installation), or gave up on the input. */
export class BashParseError extends Data.TaggedError("BashParseError")<{ readonly reason: string }> {
  override get message() {
    return `Could not parse the shell command: ${this.reason}`
  }
}

/**
 * Commands that run another command given in their arguments, with the options whose value is
 * the next word, and how many plain words come before the command (`timeout 5s cmd`).
 */
const WRAPPERS: ReadonlyMap<string, { readonly valued: ReadonlySet<string>; readonly leading?: number }> = new Map([
  ["command", { valued: new Set<string>() }],
  ["builtin", { valued: new Set<string>() }],
  ["exec", { valued: new Set(["-a"]) }],
  ["nohup", { valued: new Set<string>() }],
  ["time", { valued: new Set(["-f", "-o"]) }],
  ["nice", { valued: new Set(["-n"]) }],
  ["ionice", { valued: new Set(["-c", "-n", "-p"]) }],
  ["setsid", { valued: new Set<string>() }],
  ["stdbuf", { valued: new Set(["-i", "-o", "-e"]) }],
  ["timeout", { valued: new Set(["-k", "-s"]), leading: 1 }],
  ["env", { valued: new Set(["-u", "-C", "-S"]) }],
  ["sudo", { valued: new Set(["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"]) }],
  ["doas", { valued: new Set(["-u", "-C"]) }],
  ["xargs", { valued: new Set(["-a", "-d", "-E", "-e", "-I", "-i", "-L", "-l", "-n", "-P", "-s"]) }]
])

/**
 * The command a wrapper runs (`rm -rf x` for `sudo -u root nohup rm -rf x`), unwrapped as far
 * as it goes; undefined when `tokens` is not a wrapper with a command.
 */
export const wrappedCommand = (tokens: ReadonlyArray<string>): ReadonlyArray<string> | undefined => {
  let current = tokens
  let unwrapped: ReadonlyArray<string> | undefined
  for (let depth = 0; depth < 8; depth++) {
    const wrapper = current[0] === undefined ? undefined : WRAPPERS.get(current[0])
    if (wrapper === undefined) break
    let index = 1
    let leading = wrapper.leading ?? 0
    while (index < current.length) {
      const word = current[index]!
      if (word === "--") {
        index++
        break
      }
      // `command -v git` only looks the command up.
      if (current[0] === "command" && (word === "-v" || word === "-V")) return unwrapped
      if (word.startsWith("-") && word.length > 1) {
        // `-n 10` takes the next word; `-n10` and `--name=value` carry their value.
        index += wrapper.valued.has(word) ? 2 : 1
        continue
      }
      if (current[0] === "env" && /^[A-Za-z_][A-Za-z0-9_]*=/.test(word)) {
        index++
        continue
      }
      if (leading > 0) {
        leading--
        index++
        continue
      }
      break
    }
    if (index >= current.length) break
    current = current.slice(index)
    unwrapped = current
  }
  return unwrapped
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
    case "translated_string":
      return node.text.slice(2, -1)
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

interface Collected {
  readonly commands: Array<BashCommand>
  readonly redirects: Array<string>
}

const collect = (node: Node, source: string, into: Collected): void => {
  // A command the parser only invented to repair broken input (`ls &&`) has no text.
  if (COMMAND_TYPES.has(node.type) && !node.isMissing && node.text.trim() !== "") into.commands.push(commandOf(node, source))
  if (node.type === "file_redirect") {
    const target = redirectTarget(node)
    if (target !== undefined && target !== "") into.redirects.push(target)
  }
  for (const child of node.namedChildren) if (child !== null) collect(child, source, into)
}

/** The always-allow pattern of a command: its arity prefix and anything after it. */
export const alwaysPattern = (tokens: ReadonlyArray<string>): string => `${BashArity.prefix(tokens).join(" ")} *`

/** Shells whose `-c` argument is a script of its own. */
const SHELLS: ReadonlySet<string> = new Set(["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash"])
/** Scripts inside scripts (`bash -c "eval '…'"`) are followed this deep. */
const MAX_NESTING = 3

/** The script a command runs as text: `bash -c '<script>'`, `eval <words>` (through wrappers too). */
export const innerScript = (tokens: ReadonlyArray<string>): string | undefined => {
  const command = wrappedCommand(tokens) ?? tokens
  const [name, ...args] = command
  if (name === "eval") return args.length > 0 ? args.join(" ") : undefined
  if (name === undefined || !SHELLS.has(path.basename(name))) return undefined
  const flag = args.findIndex((arg) => /^-[A-Za-z]*c[A-Za-z]*$/.test(arg))
  return flag === -1 ? undefined : args[flag + 1]
}

/** The commands `find … -exec cmd {} ;` (and `-execdir`, `-ok`, `-okdir`) runs. */
export const findExecCommands = (tokens: ReadonlyArray<string>): Array<ReadonlyArray<string>> => {
  const command = wrappedCommand(tokens) ?? tokens
  if (command[0] === undefined || path.basename(command[0]) !== "find") return []
  const found: Array<ReadonlyArray<string>> = []
  for (let index = 1; index < command.length; index++) {
    if (!["-exec", "-execdir", "-ok", "-okdir"].includes(command[index]!)) continue
    const end = command.findIndex((word, at) => at > index && (word === ";" || word === "+"))
    const words = command.slice(index + 1, end === -1 ? command.length : end)
    if (words.length > 0) found.push(words)
    index = end === -1 ? command.length : end
  }
  return found
}

interface Analysis extends Collected {
  /** Parts of the input tree-sitter could not read (the outer script, or a nested one, whole). */
  readonly unreadable: Array<string>
}

/** Collects the commands of `source`, and of every script it runs (`bash -c`, `eval`). */
const analyze = (parser: Parser, source: string, depth: number, into: Analysis): void => {
  const tree = parser.parse(source)
  if (tree === null) throw new Error("the parser returned no tree")
  try {
    const first = into.commands.length
    collect(tree.rootNode, source, into)
    if (tree.rootNode.hasError && source.trim() !== "") into.unreadable.push(source.trim())
    if (depth >= MAX_NESTING) return
    for (const entry of into.commands.slice(first)) {
      const script = innerScript(entry.tokens)
      if (script !== undefined && script.trim() !== "") analyze(parser, script, depth + 1, into)
    }
  } finally {
    tree.delete()
  }
}

/** Parses `command` into the simple commands it runs and the permission patterns they need. */
export const parseCommand = (command: string): Effect.Effect<ParsedCommand, BashParseError> =>
  Effect.tryPromise({
    try: loadParser,
    catch: (error) => new BashParseError({ reason: `the bash grammar could not be loaded (${String(error)})` })
  }).pipe(
    Effect.flatMap((parser) =>
      Effect.try({
        try: () => {
          const { commands, redirects, unreadable }: Analysis = { commands: [], redirects: [], unreadable: [] }
          analyze(parser, command, 0, { commands, redirects, unreadable })
          const patterns = new Set<string>()
          const always = new Set<string>()
          for (const entry of commands) {
            const name = entry.tokens[0]
            if (name === undefined || DIRECTORY_CHANGES.has(name)) continue
            patterns.add(entry.text)
            if (entry.respelled) patterns.add(entry.tokens.join(" "))
            always.add(alwaysPattern(entry.tokens))
            if (entry.respelled) always.add(`${entry.sourcePrefix} *`)
            // `sudo rm -rf x`, `xargs rm`, `nohup rm …`, `find -exec rm`: what actually runs is checked too.
            for (const inner of [wrappedCommand(entry.tokens), ...findExecCommands(entry.tokens)]) {
              if (inner === undefined) continue
              patterns.add(inner.join(" "))
              always.add(alwaysPattern(inner))
            }
          }
          // What could not be read is checked as a whole, so a rule still sees it.
          for (const text of unreadable) {
            patterns.add(text)
            always.add(text)
          }
          const incomplete = unreadable.length > 0
          return { commands, redirects, patterns: [...patterns], always: [...always], incomplete } satisfies ParsedCommand
        },
        catch: (error) => new BashParseError({ reason: String(error) })
      })
    )
  )

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
  commands: ReadonlyArray<BashCommand>,
  options: { readonly instance: InstanceInfo; readonly workdir: string; readonly redirects?: ReadonlyArray<string> }
): Array<string> => {
  const { instance, workdir } = options
  const globs = new Set<string>()
  const check = (arg: string) => {
    const absolute = path.resolve(workdir, expandPath(arg, instance))
    if (!isStreamDevice(absolute) && !isInsideProject(instance, absolute)) globs.add(globOf(absolute))
  }
  if (!isInsideProject(instance, workdir)) globs.add(globOf(workdir))
  for (const command of commands) {
    for (const arg of pathArguments(command.tokens)) check(arg)
    // `sudo rm /etc/x`: the wrapped command's paths count too.
    for (const arg of pathArguments(wrappedCommand(command.tokens) ?? [])) check(arg)
  }
  for (const target of options.redirects ?? []) check(target)
  return [...globs]
}
