import { Clock, Context, Duration, Effect, Layer } from "effect"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { ConfigService } from "../config/ConfigService.js"
import * as Identifier from "../runtime/Identifier.js"
import { Instance, type InstanceInfo } from "../runtime/Instance.js"

/** Default line limit of a tool output (`tool_output.max_lines`). */
export const MAX_LINES = 2000
/** Default byte limit of a tool output (`tool_output.max_bytes`), 50 KB. */
export const MAX_BYTES = 51_200
/** Saved full outputs older than this are deleted. */
export const RETENTION: Duration.Duration = Duration.days(7)
/** How often the saved outputs are swept. */
export const CLEANUP_INTERVAL: Duration.Duration = Duration.hours(1)

/** Where full outputs of truncated tool calls are saved: `<data>/tool-output`. */
export const toolOutputDirectory = (instance: InstanceInfo): string => path.join(instance.paths.data, "tool-output")

/** Which end of the output is kept: `head` keeps the first lines, `tail` the last (bash). */
export type TruncateDirection = "head" | "tail"

export interface TruncateLimits {
  readonly maxLines: number
  readonly maxBytes: number
}

export interface TruncateOptions {
  /** Overrides `tool_output.max_lines` for this call. */
  readonly maxLines?: number
  /** Overrides `tool_output.max_bytes` for this call. */
  readonly maxBytes?: number
  /** Default `head`. */
  readonly direction?: TruncateDirection
  /** Whether the `task` tool with the explore agent is available to the model; changes the hint. */
  readonly canDelegate?: boolean
}

export interface TruncateResult {
  /** The text to hand to the model: the original text, or the kept part plus a notice. */
  readonly content: string
  readonly truncated: boolean
  /** Where the complete text was saved; set only when `truncated` and the save succeeded. */
  readonly outputPath?: string
}

/** The part of a text that survives the limits. */
export interface TruncateCut {
  readonly kept: string
  /** The limit that stopped the cut. */
  readonly unit: "lines" | "bytes"
  /** How many lines (unit `lines`) or bytes (unit `bytes`) of the original are not in `kept`. */
  readonly removed: number
}

// ---------------------------------------------------------------------------------------------
// Pure helpers. A text's lines are its `\n`-separated pieces; a single trailing newline ends the
// last line instead of starting an empty one, so "a\nb\n" has two lines and 3 bytes of content.

const NEWLINE = 10

/** The text without one trailing newline. */
const contentOf = (text: string): string => (text.charCodeAt(text.length - 1) === NEWLINE ? text.slice(0, -1) : text)

/** Number of `\n` in `text`, counting no further than `stopAt`. */
const countNewlines = (text: string, stopAt: number = Infinity): number => {
  let count = 0
  let index = text.indexOf("\n")
  while (index !== -1 && count < stopAt) {
    count++
    index = text.indexOf("\n", index + 1)
  }
  return count
}

/** Number of lines of `text` (a trailing newline does not start a new line). */
export const countLines = (text: string): number => (text.length === 0 ? 0 : countNewlines(contentOf(text)) + 1)

/**
 * Whether `text` is within both limits. Exact about bytes, but never splits the text: a text
 * with more UTF-16 units than the byte limit cannot fit (each unit is at least one byte), and
 * newlines are only counted up to the line limit.
 */
export const fits = (text: string, limits: TruncateLimits): boolean => {
  const content = contentOf(text)
  if (content.length > limits.maxBytes) return false
  if (Buffer.byteLength(content, "utf8") > limits.maxBytes) return false
  return countNewlines(content, limits.maxLines) < limits.maxLines
}

/** The longest prefix of `text` whose UTF-8 encoding fits in `maxBytes`, never splitting a character. */
export const utf8Head = (text: string, maxBytes: number): string => {
  if (maxBytes <= 0) return ""
  // Every UTF-16 unit is at least one byte, so the answer lies within the first `maxBytes` units.
  const buffer = Buffer.from(text.length > maxBytes ? text.slice(0, maxBytes) : text, "utf8")
  if (buffer.length <= maxBytes) return buffer.toString("utf8")
  let end = maxBytes
  while (end > 0 && (buffer[end]! & 0xc0) === 0x80) end--
  return buffer.toString("utf8", 0, end)
}

/** The longest suffix of `text` whose UTF-8 encoding fits in `maxBytes`, never splitting a character. */
export const utf8Tail = (text: string, maxBytes: number): string => {
  if (maxBytes <= 0) return ""
  const buffer = Buffer.from(text.length > maxBytes ? text.slice(-maxBytes) : text, "utf8")
  if (buffer.length <= maxBytes) return buffer.toString("utf8")
  let start = buffer.length - maxBytes
  while (start < buffer.length && (buffer[start]! & 0xc0) === 0x80) start++
  return buffer.toString("utf8", start)
}

const byteLength = (text: string): number => Buffer.byteLength(text, "utf8")

/**
 * Keeps the first (`head`) or last (`tail`) whole lines of `text` that fit in both limits,
 * joined by `\n`. A line longer than the whole byte budget can never be shown whole, so the
 * part of it that still fits is kept, cut at a character boundary. Returns `undefined` when the
 * text already fits. Walks only the kept lines, never the whole text, except to count what was
 * removed.
 */
export const cut = (text: string, limits: TruncateLimits, direction: TruncateDirection = "head"): TruncateCut | undefined => {
  if (fits(text, limits)) return undefined
  const content = contentOf(text)
  const { maxBytes, maxLines } = limits
  let lines = 0
  let bytes = 0
  let hitBytes = false
  let kept: string

  if (direction === "head") {
    let position = 0
    let end = 0
    let partial = ""
    while (lines < maxLines) {
      const newline = content.indexOf("\n", position)
      const lineEnd = newline === -1 ? content.length : newline
      const line = content.slice(position, lineEnd)
      const separator = lines > 0 ? 1 : 0
      const size = byteLength(line) + separator
      if (bytes + size > maxBytes) {
        hitBytes = true
        if (size - separator > maxBytes) {
          partial = utf8Head(line, maxBytes - bytes - separator)
          if (partial.length > 0) {
            bytes += byteLength(partial) + separator
            lines++
          }
        }
        break
      }
      bytes += size
      lines++
      end = lineEnd
      if (newline === -1) break
      position = newline + 1
    }
    kept = content.slice(0, end)
    if (partial.length > 0) kept = lines > 1 ? `${kept}\n${partial}` : partial
  } else {
    let end = content.length
    let start = content.length
    let partial = ""
    while (lines < maxLines) {
      const newline = end === 0 ? -1 : content.lastIndexOf("\n", end - 1)
      const line = content.slice(newline + 1, end)
      const separator = lines > 0 ? 1 : 0
      const size = byteLength(line) + separator
      if (bytes + size > maxBytes) {
        hitBytes = true
        if (size - separator > maxBytes) {
          partial = utf8Tail(line, maxBytes - bytes - separator)
          if (partial.length > 0) {
            bytes += byteLength(partial) + separator
            lines++
          }
        }
        break
      }
      bytes += size
      lines++
      start = newline + 1
      if (newline === -1) break
      end = newline
    }
    kept = content.slice(start)
    if (partial.length > 0) kept = lines > 1 ? `${partial}\n${kept}` : partial
  }

  return hitBytes
    ? { kept, unit: "bytes", removed: byteLength(text) - bytes }
    : { kept, unit: "lines", removed: countLines(text) - lines }
}

/** Tells the model where the rest is and how to look at it without flooding its context. */
export const hint = (file: string, canDelegate: boolean): string =>
  canDelegate
    ? `The tool ran to completion; only its output was shortened. The complete output is in ${file}. ` +
      `If you need the missing part, hand the file to the explore agent with the task tool and say what to look for; ` +
      `it can search and page through the file and report back, which keeps your own context small. ` +
      `Do not read the whole file yourself.`
    : `The tool ran to completion; only its output was shortened. The complete output is in ${file}. ` +
      `If you need the missing part, search the file with grep, or read a slice of it with read using offset and limit. ` +
      `Do not read the whole file at once.`

/** The content handed to the model for a cut output; `file` is undefined when saving failed. */
export const render = (
  result: TruncateCut,
  direction: TruncateDirection,
  file: string | undefined,
  canDelegate: boolean
): string => {
  if (direction === "tail") {
    const saved = file === undefined
      ? "The full output could not be saved; only the end is shown."
      : `Full output saved to: ${file}`
    return `...output truncated...\n\n${saved}\n\n${result.kept}`
  }
  const notice = `...${result.removed} ${result.unit} truncated...`
  const next = file === undefined
    ? "The full output could not be saved, so the missing part is not available. Narrow the request to see it."
    : hint(file, canDelegate)
  return `${result.kept}\n\n${notice}\n\n${next}`
}

/**
 * Deletes the regular files in `directory` last modified before `cutoff` (ms since epoch) and
 * returns how many were deleted. A missing directory holds nothing to delete; a file that
 * cannot be removed is logged and skipped.
 */
export const removeExpired = Effect.fnUntraced(function*(directory: string, cutoff: number) {
  const names = yield* Effect.tryPromise(() => fs.readdir(directory)).pipe(
    Effect.catchIf((error) => errorCode(error.cause) === "ENOENT", () => Effect.succeed<Array<string>>([])),
    Effect.orDie
  )
  let removed = 0
  for (const name of names) {
    const file = path.join(directory, name)
    const deleted = yield* Effect.tryPromise(async () => {
      const stat = await fs.lstat(file)
      if (!stat.isFile() || stat.mtimeMs >= cutoff) return false
      await fs.unlink(file)
      return true
    }).pipe(
      Effect.catchAll((error) =>
        errorCode(error.cause) === "ENOENT"
          ? Effect.succeed(false)
          : Effect.logWarning("cannot remove saved tool output").pipe(
            Effect.annotateLogs({ file, error: String(error.cause) }),
            Effect.as(false)
          )
      )
    )
    if (deleted) removed++
  }
  return removed
})

const errorCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined

// ---------------------------------------------------------------------------------------------

/** Shortens tool outputs to what fits in the model's context and keeps the full text on disk. */
export class Truncation extends Context.Tag("@agent/core/Truncation")<
  Truncation,
  {
    /** The directory holding the saved full outputs. */
    readonly directory: string
    /** `text` unchanged when it fits the limits; otherwise the kept part plus a notice, full text saved. */
    readonly output: (text: string, options?: TruncateOptions) => Effect.Effect<TruncateResult>
    /** Deletes saved outputs older than `RETENTION`; returns how many were deleted. */
    readonly cleanup: () => Effect.Effect<number>
  }
>() {
  /** Sweeps old outputs when built and then every hour while its scope is open. */
  static readonly layer: Layer.Layer<Truncation, never, Instance | ConfigService> = Layer.scoped(
    Truncation,
    Effect.gen(function*() {
      const instance = yield* Instance
      const config = yield* (yield* ConfigService).get()
      const defaults: TruncateLimits = {
        maxLines: config.tool_output?.max_lines ?? MAX_LINES,
        maxBytes: config.tool_output?.max_bytes ?? MAX_BYTES
      }
      const directory = toolOutputDirectory(instance)

      const save = (text: string) =>
        Effect.tryPromise(async () => {
          await fs.mkdir(directory, { recursive: true, mode: 0o700 })
          const file = path.join(directory, Identifier.ascending("toolOutput"))
          await fs.writeFile(file, text, { encoding: "utf8", mode: 0o600, flag: "wx" })
          return file
        })

      // Called every step (or every tool call): untraced, a span would cost more than the call.
      const output = Effect.fnUntraced(function*(text: string, options: TruncateOptions = {}) {
        const limits: TruncateLimits = {
          maxLines: options.maxLines ?? defaults.maxLines,
          maxBytes: options.maxBytes ?? defaults.maxBytes
        }
        const direction = options.direction ?? "head"
        const result = cut(text, limits, direction)
        if (result === undefined) return { content: text, truncated: false } satisfies TruncateResult
        // A failed save must not fail the tool call: the model still gets the kept part.
        const file = yield* save(text).pipe(
          Effect.tapError((error) =>
            Effect.logError("cannot save full tool output").pipe(Effect.annotateLogs({ directory, error: String(error.cause) }))
          ),
          Effect.option
        )
        const outputPath = file._tag === "Some" ? file.value : undefined
        const content = render(result, direction, outputPath, options.canDelegate ?? false)
        return (outputPath === undefined
          ? { content, truncated: true }
          : { content, truncated: true, outputPath }) satisfies TruncateResult
      })

      const cleanup = Effect.fn("Truncation.cleanup")(function*() {
        const now = yield* Clock.currentTimeMillis
        return yield* removeExpired(directory, now - Duration.toMillis(RETENTION))
      })

      const sweep = cleanup().pipe(Effect.catchAllCause(Effect.logError))
      yield* sweep
      yield* Effect.sleep(CLEANUP_INTERVAL).pipe(
        Effect.zipRight(sweep),
        Effect.forever,
        Effect.catchAllCause(Effect.logError),
        Effect.forkScoped
      )

      return { directory, output, cleanup }
    })
  )
}
