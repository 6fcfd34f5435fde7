import { Effect, Schema } from "effect"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { diskOnly, EditorFiles } from "../tool/EditorFiles.js"
import * as FileKind from "../tool/FileKind.js"
import { FileTimes } from "../tool/FileTimes.js"
import * as TextEncoding from "../tool/TextEncoding.js"
import * as Tool from "../tool/Tool.js"
import { guard, relativeToWorktree, resolvePath } from "../tool/ExternalDirectory.js"
import { leftOutNote, pathPatterns, readDenied } from "../tool/PathRules.js"
import { levenshtein } from "../tool/EditMatch.js"
import { MAX_ATTACHMENT_BYTES } from "../tool/Attachment.js"
import { withAliases } from "../tool/ArgumentAliases.js"
import { StringDecoder } from "node:string_decoder"
import * as Prompts from "../runtime/Prompts.js"
import { Instance } from "../runtime/Instance.js"
import { InstructionLoader } from "../context/InstructionLoader.js"

const TOOL = "read"

/** Lines shown when no limit is given. */
export const DEFAULT_LIMIT = 2000
/** Longer lines are cut to this many characters. */
export const MAX_LINE_LENGTH = 2000
/** The numbered lines of one call stop at 50 KB. */
export const MAX_BYTES = 50 * 1024
/** A directory listing shows at most this many entries per call. */
export const MAX_ENTRIES = 1000
/** Larger files are read from the disk even when an editor holds them (see EditorFiles). */
export const MAX_EDITOR_BYTES = 4 * 1024 * 1024

const Canonical = Schema.Struct({
  filePath: Schema.String.annotations({
    description: "Path of the file or directory to read, absolute or relative to the working directory"
  }),
  offset: Schema.optional(
    Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)).annotations({
      description: "Line number to start from, counting from 1 (0 is the same as 1)",
      message: () => ({ message: "expected a line number: a whole number, 1 or more (0 counts as 1)", override: true })
    })
  ),
  limit: Schema.optional(
    Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)).annotations({
      description: `Maximum number of lines to show (default ${DEFAULT_LIMIT})`,
      message: () => ({ message: "expected a whole number of lines, 0 or more (0 means the default)", override: true })
    })
  )
})

/** Also accepts Claude Code's argument names (see ArgumentAliases). */
const Parameters = withAliases(Canonical)

const fail = (detail: string) => new Tool.ToolExecutionError({ tool: TOOL, detail })

// The stat and a small file's read are synchronous: from the page cache they take microseconds,
// while each trip through libuv's thread pool (a stat, then open, fstat, read and close) cost the
// loop more than the work (read call CPU 0.3 → 0.12 ms).
const statOf = (file: string) =>
  Effect.sync(() => {
    try {
      return fs.statSync(file, { throwIfNoEntry: false })
    } catch {
      return undefined
    }
  })

// ---------------------------------------------------------------------------------------------
// Binary detection

export { looksBinary } from "../tool/FileKind.js"

/** "512 bytes", "3.4 KB", "2.1 MB". */
const sizeText = (bytes: number): string =>
  bytes < 1024 ? `${bytes} bytes` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / (1024 * 1024)).toFixed(1)} MB`

/** Files up to this size are read in one call; larger ones are streamed in chunks of this size. */
const STREAM_CHUNK = 64 * 1024

/** The whole file, of `size` bytes at its stat; undefined when it has grown since (it is streamed then). */
const readSmall = (file: string, size: number): Buffer | undefined => {
  const fd = fs.openSync(file, "r")
  try {
    const buffer = Buffer.allocUnsafe(size + 1)
    let length = 0
    for (let read = -1; read !== 0 && length < buffer.length;) {
      read = fs.readSync(fd, buffer, length, buffer.length - length, null)
      length += read
    }
    return length > size ? undefined : buffer.subarray(0, length)
  } finally {
    fs.closeSync(fd)
  }
}

const headOf = async (file: string): Promise<Uint8Array> => {
  const handle = await fsp.open(file, "r")
  try {
    const buffer = Buffer.alloc(FileKind.SNIFF_BYTES)
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
    return buffer.subarray(0, bytesRead)
  } finally {
    await handle.close()
  }
}

// ---------------------------------------------------------------------------------------------
// Text: a small file in one read, a large one streamed

interface Slice {
  /** The shown lines, already cut to the line length limit. */
  readonly lines: ReadonlyArray<string>
  /** Lines in the file; only known when the scan was not stopped by the byte cap. */
  readonly total: number
  /** Lines after the shown ones exist. */
  readonly more: boolean
  /** The 50 KB cap stopped the scan. */
  readonly capped: boolean
}

const cutLine = (line: string): string => {
  const text = line.endsWith("\r") ? line.slice(0, -1) : line
  return text.length > MAX_LINE_LENGTH
    ? `${text.slice(0, MAX_LINE_LENGTH)}... (line truncated to ${MAX_LINE_LENGTH} chars)`
    : text
}

/**
 * Takes lines `start..start+limit-1` from a file fed to it in chunks; after those it only counts
 * newlines (on raw bytes) to know the total.
 */
class LineScanner {
  private readonly decoder: StringDecoder
  private readonly lines: Array<string> = []
  private bytes = 0
  private complete = 0 // lines ended by a newline so far
  private partial = "" // text of the line being read, kept only if it will be shown (and bounded)
  private open = false // characters after the last newline
  private collecting = true
  private more = false
  private capped = false

  constructor(private readonly start: number, private readonly limit: number, encoding: TextEncoding.Encoding = "utf8") {
    this.decoder = new StringDecoder(encoding)
  }

  /** Takes a finished line; false when no further line will be shown. */
  private take(line: string): boolean {
    this.complete++
    if (this.complete < this.start) return true
    if (this.lines.length >= this.limit) {
      this.more = true
      return false
    }
    const shown = cutLine(line)
    const size = Buffer.byteLength(shown, "utf8") + (this.lines.length > 0 ? 1 : 0)
    if (this.bytes + size > MAX_BYTES) {
      this.capped = true
      this.more = true
      return false
    }
    this.lines.push(shown)
    this.bytes += size
    return true
  }

  /** Feeds the next chunk; false once the 50 KB cap stopped the scan (the rest need not be read). */
  push(buffer: Buffer): boolean {
    if (!this.collecting) {
      for (let index = buffer.indexOf(10); index !== -1; index = buffer.indexOf(10, index + 1)) this.complete++
      if (buffer.length > 0) this.open = buffer[buffer.length - 1] !== 10
      return true
    }
    const chunk = this.decoder.write(buffer)
    let position = 0
    while (position < chunk.length) {
      const newline = chunk.indexOf("\n", position)
      const piece = newline === -1 ? chunk.slice(position) : chunk.slice(position, newline)
      if (this.complete + 1 >= this.start && this.partial.length <= MAX_LINE_LENGTH + 1) {
        this.partial = (this.partial + piece).slice(0, MAX_LINE_LENGTH + 2)
      }
      if (newline === -1) {
        this.open = this.open || piece.length > 0
        break
      }
      this.collecting = this.take(this.partial)
      this.partial = ""
      this.open = false
      position = newline + 1
      if (!this.collecting) {
        // The rest of this chunk is only counted.
        const rest = chunk.slice(position)
        for (let index = rest.indexOf("\n"); index !== -1; index = rest.indexOf("\n", index + 1)) this.complete++
        if (rest.length > 0) this.open = !rest.endsWith("\n")
        break
      }
    }
    return !this.capped
  }

  /** The slice, once the file has been fed to the end (or the cap stopped the scan). */
  finish(): Slice {
    if (!this.capped) {
      if (this.collecting) {
        const rest = this.decoder.end()
        if (rest.length > 0) {
          this.partial = (this.partial + rest).slice(0, MAX_LINE_LENGTH + 2)
          this.open = true
        }
        if (this.open) this.collecting = this.take(this.partial)
      } else if (this.open) {
        this.complete++
      }
    }
    return { lines: this.lines, total: this.complete, more: this.more, capped: this.capped }
  }
}

/** How far past the shown lines a scan reads only to learn whether the file is UTF-8. */
const MAX_VALIDATE_BYTES = 64 * 1024 * 1024

/**
 * Streams a large file through a scanner, so a huge file costs a scan, never its size in memory.
 * The bytes are checked as they pass; a file that is not UTF-8 is scanned again as Latin-1, as
 * the editing tools read it.
 */
const scanLines = async (
  file: string,
  start: number,
  limit: number,
  signal: AbortSignal
): Promise<Slice & { readonly encoding: TextEncoding.Encoding }> => {
  const scanned = await scanOnce(file, start, limit, signal, "utf8")
  if (scanned !== "not-utf8") return { ...scanned, encoding: "utf8" }
  return { ...(await scanOnce(file, start, limit, signal, "latin1")) as Slice, encoding: "latin1" }
}

/** One scan; as UTF-8, "not-utf8" when the bytes are not. */
const scanOnce = async (
  file: string,
  start: number,
  limit: number,
  signal: AbortSignal,
  encoding: TextEncoding.Encoding
): Promise<Slice | "not-utf8"> => {
  const scanner = new LineScanner(start, limit, encoding)
  const check = encoding === "utf8" ? new TextEncoding.Utf8Check() : undefined
  const stream = fs.createReadStream(file, { highWaterMark: STREAM_CHUNK, signal })
  let scanning = true
  let checked = 0
  let whole = true
  try {
    for await (const buffer of stream as AsyncIterable<Buffer>) {
      if (check !== undefined && !check.push(buffer)) return "not-utf8"
      checked += buffer.length
      if (scanning) scanning = scanner.push(buffer)
      // Once the cap stopped the scan, reading on only checks the encoding, and only so far.
      if (!scanning && (check === undefined || checked > MAX_VALIDATE_BYTES)) {
        whole = false
        break
      }
    }
  } finally {
    stream.destroy()
  }
  if (check !== undefined && whole && !check.end()) return "not-utf8"
  return scanner.finish()
}

// ---------------------------------------------------------------------------------------------
// Missing files

/** Up to 3 names in the same directory that look like what was asked for. */
const suggestions = async (file: string): Promise<Array<string>> => {
  const directory = path.dirname(file)
  const wanted = path.basename(file).toLowerCase()
  const names = await fsp.readdir(directory).catch(() => [] as Array<string>)
  const scored: Array<{ name: string; score: number }> = []
  for (const name of names) {
    const lower = name.toLowerCase()
    const shorter = Math.min(lower.length, wanted.length)
    let score: number | undefined
    if (lower === wanted) score = 0
    else if (shorter >= 3 && (lower.includes(wanted) || wanted.includes(lower))) score = 1
    else if (lower.startsWith(wanted.slice(0, Math.max(3, Math.floor(wanted.length / 2)))) && shorter >= 3) score = 2
    else {
      const distance = levenshtein(lower, wanted)
      if (distance <= Math.max(2, Math.floor(wanted.length / 4))) score = 2 + distance
    }
    if (score !== undefined) scored.push({ name, score })
  }
  return scored
    .sort((a, b) => a.score - b.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .slice(0, 3)
    .map((entry) => path.join(directory, entry.name))
}

// ---------------------------------------------------------------------------------------------

/** The directory's entries, minus those `exclude` leaves out (counted). */
const listDirectory = async (
  directory: string,
  exclude: ((file: string, isLink: boolean) => boolean) | undefined
): Promise<{ readonly names: Array<string>; readonly excluded: number }> => {
  const all = await fsp.readdir(directory, { withFileTypes: true })
  const entries = exclude
    ? all.filter((entry) => !exclude(path.join(directory, entry.name), entry.isSymbolicLink()))
    : all
  const names = await Promise.all(
    entries.map(async (entry) => {
      let isDirectory = entry.isDirectory()
      if (entry.isSymbolicLink()) {
        isDirectory = await fsp.stat(path.join(directory, entry.name)).then((stat) => stat.isDirectory(), () => false)
      }
      return isDirectory ? `${entry.name}/` : entry.name
    })
  )
  return { names: names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)), excluded: all.length - entries.length }
}

export const make: Effect.Effect<Tool.AnyTool, never, Instance | InstructionLoader> = Effect.gen(function*() {
  const instance = yield* Instance
  const fileTimes = yield* FileTimes
  const instructions = yield* InstructionLoader
  const files = yield* EditorFiles
  return Tool.make({
    id: TOOL,
    fileEffects: "none",
    description: Prompts.read("tool/read.txt"),
    parameters: Parameters.parameters,
    jsonSchema: Parameters.jsonSchema,
    execute: (params, context) =>
      Effect.gen(function*() {
        const file = resolvePath(instance, params.filePath)
        const title = relativeToWorktree(instance, file) || path.basename(file)
        const stat = yield* statOf(file)
        yield* guard(context, instance, file, stat?.isDirectory() ? "directory" : "file")
        yield* context.ask({ permission: "read", patterns: pathPatterns(instance, file), always: ["*"], metadata: { filepath: file } })

        if (stat === undefined) {
          const similar = yield* Effect.promise(() => suggestions(file))
          const hint = similar.length > 0 ? `\n\nDid you mean one of these?\n${similar.join("\n")}` : ""
          return yield* fail(`File not found: ${file}${hint}`)
        }
        const start = Math.max(params.offset ?? 1, 1)

        if (stat.isDirectory()) {
          // Entries the agent may not read are not shown, only counted (as list does).
          const { names: entries, excluded } = yield* Effect.tryPromise({
            try: () => listDirectory(file, readDenied(instance, context.rules, file)),
            catch: (error) => fail(`Cannot list directory ${file}: ${(error as Error).message}`)
          })
          if (start > 1 && start > entries.length) {
            return yield* fail(`Offset ${start} is out of range for this directory (${entries.length} entries)`)
          }
          const count = Math.min(params.limit || MAX_ENTRIES, MAX_ENTRIES)
          const shown = entries.slice(start - 1, start - 1 + count)
          const last = start - 1 + shown.length
          const note = last < entries.length
            ? `(Showing entries ${start}-${last} of ${entries.length}. Use offset=${last + 1} to continue.)`
            : `(${entries.length} entries)`
          const leftOut = excluded > 0 ? [leftOutNote(excluded)] : []
          return {
            title,
            output: [`<path>${file}</path>`, "<type>directory</type>", "<entries>", ...shown, note, ...leftOut, "</entries>"].join("\n"),
            metadata: {
              preview: shown.slice(0, 20).join("\n"),
              truncated: last < entries.length,
              ...(excluded > 0 ? { leftOut: excluded } : {})
            },
            truncated: true
          }
        }

        // What the file is comes from its first bytes, not its name (see FileKind).
        const small = yield* Effect.try({
          try: () => (stat.size <= STREAM_CHUNK ? readSmall(file, stat.size) : undefined),
          catch: (error) => fail(`Cannot read ${file}: ${(error as Error).message}`)
        })
        const head = small ?? (yield* Effect.tryPromise({
          try: () => headOf(file),
          catch: (error) => fail(`Cannot read ${file}: ${(error as Error).message}`)
        }))
        const kind = FileKind.sniff(head)
        if (kind.type === "attachment") {
          if (stat.size > MAX_ATTACHMENT_BYTES) {
            const megabytes = (stat.size / (1024 * 1024)).toFixed(1)
            return yield* fail(`Cannot attach ${file}: it is ${megabytes} MB, and images and PDFs are limited to 10 MB.`)
          }
          const data = small ?? (yield* Effect.tryPromise({
            try: () => fsp.readFile(file),
            catch: (error) => fail(`Cannot read ${file}: ${(error as Error).message}`)
          }))
          fileTimes.record(context.sessionID, file, stat.mtimeMs)
          const { mime, label } = kind
          return {
            title,
            output: [`<path>${file}</path>`, "<type>file</type>", "<content>", `${label} read successfully`, "</content>"].join("\n"),
            metadata: { preview: `${label} read successfully`, truncated: false },
            attachments: [{ mime, url: `data:${mime};base64,${data.toString("base64")}`, filename: path.basename(file) }],
            truncated: true
          }
        }
        if (kind.type === "image") {
          // Its bytes would mean nothing to the model: it is told what the file is instead.
          const description = `(A ${kind.format} image of ${sizeText(stat.size)}. It is not attached: images are attached ` +
            "as PNG, JPEG, GIF or WebP only. To look at it, convert it to PNG first, then read the PNG.)"
          return {
            title,
            output: [`<path>${file}</path>`, "<type>file</type>", "<content>", description, "</content>"].join("\n"),
            metadata: { preview: description, truncated: false },
            truncated: true
          }
        }
        if (kind.type === "binary") {
          return yield* fail(`Cannot read binary file: ${file}${kind.format !== undefined ? ` (a ${kind.format})` : ""}`)
        }
        const limit = params.limit || DEFAULT_LIMIT
        // A text file the editor holds is read as the editor has it (unsaved changes included); the disk told what
        // kind it is. A large one (a log) is streamed from the disk: the editor would send all of it.
        const buffer = files === diskOnly || stat.size > MAX_EDITOR_BYTES
          ? undefined
          : yield* files.read(context.sessionID, file).pipe(Effect.orElseSucceed(() => undefined))
        // A small file (most reads) is scanned from the bytes already read; a large one is streamed.
        const slice = yield* Effect.tryPromise({
          try: async (): Promise<Slice & { readonly encoding: TextEncoding.Encoding }> => {
            if (buffer !== undefined) {
              const scanner = new LineScanner(start, limit, "utf8")
              scanner.push(Buffer.from(buffer, "utf8"))
              return { ...scanner.finish(), encoding: "utf8" }
            }
            if (small !== undefined) {
              const encoding = TextEncoding.detect(small)
              const scanner = new LineScanner(start, limit, encoding)
              scanner.push(small)
              return { ...scanner.finish(), encoding }
            }
            return await scanLines(file, start, limit, context.abort)
          },
          catch: (error) => fail(`Cannot read ${file}: ${(error as Error).message}`)
        })
        if (!slice.capped && start > slice.total && !(slice.total === 0 && start === 1)) {
          return yield* fail(`Offset ${start} is out of range for this file (${slice.total} lines)`)
        }
        fileTimes.record(context.sessionID, file, stat.mtimeMs)

        const last = start + slice.lines.length - 1
        const note = slice.capped
          ? `(Output capped at 50 KB. Showing lines ${start}-${last}. Use offset=${last + 1} to continue.)`
          : slice.more
          ? `(Showing lines ${start}-${last} of ${slice.total}. Use offset=${last + 1} to continue.)`
          : `(End of file - total ${slice.total} lines)`
        const numbered = slice.lines.map((line, index) => `${start + index}: ${line}`)
        const body = numbered.length > 0 ? `${numbered.join("\n")}\n\n` : ""
        // Reading into a package with its own AGENTS.md brings those instructions along, once while the model sees them.
        const attached = yield* instructions.forRead({ scope: context.sessionID, filePath: file })
        const encodingNote = slice.encoding === "latin1" ? `\n${TextEncoding.LATIN1_NOTE}` : ""
        const output = `<path>${file}</path>\n<type>file</type>\n<content>\n${body}${note}${encodingNote}\n</content>${
          attached ? `\n\n${attached.reminder}` : ""
        }`
        return {
          title,
          output,
          // `loaded`: the instruction files this result carries (released when it is compacted or pruned).
          metadata: { preview: slice.lines.slice(0, 20).join("\n"), truncated: slice.more, ...(attached ? { loaded: attached.files } : {}) },
          truncated: true
        }
      })
  })
})
