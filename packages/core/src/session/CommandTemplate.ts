/**
 * Expanding a command template into a message: arguments (`$1`, `$2`, …, `$ARGUMENTS`),
 * shell output (`` !`command` ``) and `@path` file inclusion. Pure text work is separate from
 * the effects (running shells, reading files), so each rule can be tested on its own.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { attachmentMime, MAX_ATTACHMENT_BYTES } from "../tool/Attachment.js"
import { MAX_BYTES, MAX_LINES } from "../tool/Truncation.js"
import type { InstanceInfo } from "../runtime/Instance.js"
import { exec, type ExecResult } from "../sandbox/Exec.js"
import { type SandboxPlan, type SandboxShape } from "../sandbox/Sandbox.js"
import { looksBinary } from "../tools/Read.js"
import { shellFor } from "../tools/Bash.js"

// --- arguments -------------------------------------------------------------------------------

/** Splits what the user typed after the command name into words; quotes group words and are removed. */
export const parseArguments = (input: string): Array<string> => {
  const words: Array<string> = []
  for (const match of input.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) words.push(match[1] ?? match[2] ?? match[3]!)
  return words
}

const PLACEHOLDER = /\$ARGUMENTS|\$([1-9]\d*)/g
const POSITIONAL = /\$([1-9]\d*)/g

/** The arguments a template takes, in order: `$1`, `$2`, …, then `$ARGUMENTS` if used. */
export const hints = (template: string): Array<string> => {
  const numbers = [...new Set([...template.matchAll(POSITIONAL)].map((match) => Number(match[1])))].sort((a, b) => a - b)
  return [...numbers.map((n) => `$${n}`), ...(template.includes("$ARGUMENTS") ? ["$ARGUMENTS"] : [])]
}

/** How the arguments fill one template: the highest `$N` takes every word from N on. */
export interface ArgumentFill {
  readonly raw: string
  readonly words: ReadonlyArray<string>
  readonly last: number
}

export const argumentFill = (template: string, raw: string): ArgumentFill => ({
  raw: raw.trim(),
  words: parseArguments(raw),
  last: Math.max(0, ...[...template.matchAll(POSITIONAL)].map((match) => Number(match[1])))
})

/** Replaces `$ARGUMENTS` and `$N` in `text` (a missing argument is empty). */
export const fillArguments = (text: string, fill: ArgumentFill): string =>
  text.replace(PLACEHOLDER, (_token: string, digits: string | undefined) => {
    if (digits === undefined) return fill.raw
    const position = Number(digits)
    if (position > fill.words.length) return ""
    return position === fill.last ? fill.words.slice(position - 1).join(" ") : fill.words[position - 1]!
  })

// --- segments --------------------------------------------------------------------------------

/** A template cut into literal text and `` !`command` `` pieces. */
export type Segment = { readonly type: "text"; readonly text: string } | { readonly type: "shell"; readonly command: string }

/**
 * Cuts a template at its shell substitutions. Arguments are filled into each piece afterwards,
 * so an argument that happens to contain `` !`…` `` is text, never run.
 */
export const segments = (template: string): Array<Segment> => {
  const out: Array<Segment> = []
  let at = 0
  for (const match of template.matchAll(/!`([^`]+)`/g)) {
    if (match.index > at) out.push({ type: "text", text: template.slice(at, match.index) })
    out.push({ type: "shell", command: match[1]! })
    at = match.index + match[0].length
  }
  if (at < template.length) out.push({ type: "text", text: template.slice(at) })
  return out
}

// --- file references -------------------------------------------------------------------------

/**
 * `@path` references in `text`, in order, without duplicates. An `@` after a word character
 * (an e-mail address) or a backtick does not count; trailing punctuation is not part of the path.
 */
export const fileReferences = (text: string): Array<string> => {
  const found: Array<string> = []
  for (const match of text.matchAll(/(?<![\w`@/])@([^\s`'"()[\]{}<>,;!?]+)/g)) {
    const ref = match[1]!.replace(/[.:]+$/, "")
    if (ref !== "" && !found.includes(ref)) found.push(ref)
  }
  return found
}

// --- shell substitution ----------------------------------------------------------------------

/** How long one `` !`command` `` may run by default (`AGENT_COMMAND_SHELL_TIMEOUT_MS` overrides). */
export const DEFAULT_SHELL_TIMEOUT_MS = 30_000

export const shellTimeout = (instance: InstanceInfo): number => {
  const value = Number(instance.env.AGENT_COMMAND_SHELL_TIMEOUT_MS)
  return Number.isInteger(value) && value > 0 ? value : DEFAULT_SHELL_TIMEOUT_MS
}

/** Where a `` !`command` `` runs: the sandbox of the command's agent. */
export interface ShellSandbox {
  readonly sandbox: SandboxShape
  readonly plan: SandboxPlan
}

const envOf = (instance: InstanceInfo): Record<string, string> =>
  Object.fromEntries(Object.entries(instance.env).filter((entry): entry is [string, string] => entry[1] !== undefined))

/** What the message gets from one run: stdout, or why there is none. */
const describeRun = (command: string, timeoutMs: number, result: ExecResult): string => {
  if (result.error !== undefined) return `[could not run \`${command}\`: ${result.error}]`
  const output = result.stdout.replace(/\n+$/, "") + (result.cut ? `\n[output cut at ${MAX_BYTES} bytes]` : "")
  if (result.timedOut) return `${output}${output ? "\n" : ""}[\`${command}\` did not finish within ${timeoutMs} ms and was stopped]`
  if (result.code === 0) return output
  const why = result.code === null ? `was killed by ${result.signal}` : `exited with code ${result.code}`
  const detail = result.stderr.trim()
  return `${output}${output ? "\n" : ""}[\`${command}\` ${why}${detail ? `: ${detail}` : ""}]`
}

/**
 * Runs `command` with the user's shell in the project directory and answers with what it
 * printed, in the agent's sandbox when one is given. A failure, a timeout, a shell that cannot
 * start, a sandbox that is required and cannot be set up, and what the sandbox blocked are
 * reported in the text, where the user and the model will see them, instead of failing the command.
 */
export const runShell = (
  instance: InstanceInfo,
  command: string,
  timeoutMs: number,
  where?: ShellSandbox
): Effect.Effect<string> =>
  Effect.gen(function*() {
    const argv = [shellFor(instance), "-c", command] as const
    const options = { cwd: instance.directory, timeoutMs, maxBytes: MAX_BYTES }
    if (where === undefined) {
      return describeRun(command, timeoutMs, yield* exec({ file: argv[0], args: argv.slice(1), env: envOf(instance) }, options))
    }
    const ran = yield* Effect.either(Effect.acquireUseRelease(
      where.sandbox.prepare({
        plan: where.plan,
        argv,
        cwd: instance.directory,
        env: envOf(instance),
        // The output is awaited anyway: background jobs end with the command.
        keeper: "exec",
        tool: "command"
      }),
      (launch) =>
        Effect.gen(function*() {
          const result = yield* exec(launch, options)
          const blocked = launch.sandboxed ? yield* launch.blocked(`${result.stdout}\n${result.stderr}`) : []
          return { result, blocked }
        }),
      (launch) => launch.release
    ))
    if (ran._tag === "Left") return `[could not run \`${command}\`: ${ran.left.message}]`
    const { blocked, result } = ran.right
    const text = describeRun(command, timeoutMs, result)
    if (blocked.length === 0) return text
    const what = blocked.map((entry) => entry.kind === "write" ? `writing to ${entry.target}` : `a connection to ${entry.target}`)
    return `${text}${text ? "\n" : ""}[the sandbox blocked ${what.join(", ")}]`
  })

// --- file inclusion --------------------------------------------------------------------------

/** What an `@path` reference adds to the message. */
export type Inclusion =
  | {
    readonly type: "file"
    /** Where the file is, relative to the project when inside it. */
    readonly display: string
    readonly absolute: string
    readonly mime: string
    /** A `data:` URL for images and PDFs; `file://` otherwise. */
    readonly url: string
    /** The text the model reads (files and directories), absent for attachments. */
    readonly text?: string
  }
  | { readonly type: "agent"; readonly name: string }

const MAX_DIRECTORY_ENTRIES = 500

const statOrUndefined = (file: string) => {
  try {
    return fs.statSync(file)
  } catch {
    return undefined
  }
}

/** The first `MAX_LINES` lines / `MAX_BYTES` bytes of a text file, with a note when cut. */
const textOf = (file: string, size: number): string => {
  const fd = fs.openSync(file, "r")
  try {
    const buffer = Buffer.alloc(Math.min(size, MAX_BYTES))
    const read = fs.readSync(fd, buffer, 0, buffer.length, 0)
    const head = buffer.subarray(0, read)
    if (looksBinary(head.subarray(0, 4096))) return `[binary file, ${size} bytes, not included]`
    let text = head.toString("utf8")
    const lines = text.split("\n")
    let note = ""
    if (lines.length > MAX_LINES) {
      text = lines.slice(0, MAX_LINES).join("\n")
      note = `\n[cut after ${MAX_LINES} lines; read the file for the rest]`
    } else if (size > read) {
      // Do not end on half a line.
      text = text.slice(0, Math.max(0, text.lastIndexOf("\n")))
      note = `\n[cut at ${MAX_BYTES} bytes of ${size}; read the file for the rest]`
    }
    return text.replace(/\n$/, "") + note
  } finally {
    fs.closeSync(fd)
  }
}

const listingOf = (dir: string): string => {
  const entries = fs.readdirSync(dir, { withFileTypes: true })
    .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name))
    .sort()
  const shown = entries.slice(0, MAX_DIRECTORY_ENTRIES)
  return shown.join("\n") + (entries.length > shown.length ? `\n[${entries.length - shown.length} more entries]` : "")
}

/** Where `@ref` may be, in the order tried: relative to the working directory, then the project root; `~/` is the home. */
export const referenceCandidates = (instance: InstanceInfo, ref: string): ReadonlyArray<string> => {
  const home = instance.home || os.homedir()
  return ref.startsWith("~/")
    ? [path.join(home, ref.slice(2))]
    : path.isAbsolute(ref)
    ? [ref]
    : [...new Set([path.resolve(instance.directory, ref), path.resolve(instance.worktree, ref)])]
}

/** The file or directory `@ref` names (the first candidate that exists), before anything is read. */
export const referenceTarget = (
  instance: InstanceInfo,
  ref: string
): { readonly absolute: string; readonly kind: "file" | "directory" } | undefined => {
  for (const absolute of referenceCandidates(instance, ref)) {
    const stat = statOrUndefined(absolute)
    if (stat?.isDirectory()) return { absolute, kind: "directory" }
    if (stat?.isFile()) return { absolute, kind: "file" }
  }
  return undefined
}

/**
 * Resolves `@ref`: a file or directory (relative to the working directory, then the project
 * root; `~/` is the home), else an agent of that name, else nothing (the text stays as typed).
 */
export const resolveReference = (
  instance: InstanceInfo,
  ref: string,
  isAgent: (name: string) => boolean
): Inclusion | undefined => {
  for (const absolute of referenceCandidates(instance, ref)) {
    const stat = statOrUndefined(absolute)
    if (!stat) continue
    const relative = path.relative(instance.worktree, absolute)
    const display = relative.startsWith("..") || path.isAbsolute(relative) ? absolute : relative
    const url = `file://${absolute}`
    if (stat.isDirectory()) {
      return { type: "file", display, absolute, mime: "application/x-directory", url, text: listingOf(absolute) }
    }
    if (!stat.isFile()) continue
    const attachment = attachmentMime(absolute)
    if (attachment) {
      if (stat.size > MAX_ATTACHMENT_BYTES) {
        return { type: "file", display, absolute, mime: "text/plain", url, text: `[${display} is over 10 MB, not attached]` }
      }
      const data = fs.readFileSync(absolute).toString("base64")
      return { type: "file", display, absolute, mime: attachment, url: `data:${attachment};base64,${data}` }
    }
    return { type: "file", display, absolute, mime: "text/plain", url, text: textOf(absolute, stat.size) }
  }
  return isAgent(ref) ? { type: "agent", name: ref } : undefined
}

/** How an included file or directory reads in the message. */
export const inclusionText = (inclusion: Extract<Inclusion, { type: "file" }>): string =>
  inclusion.mime === "application/x-directory"
    ? `<directory path="${inclusion.display}">\n${inclusion.text ?? ""}\n</directory>`
    : `<file path="${inclusion.display}">\n${inclusion.text ?? ""}\n</file>`
