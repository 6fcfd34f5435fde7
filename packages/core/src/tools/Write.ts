import { Effect, Schema } from "effect"
import * as fsp from "node:fs/promises"
import * as FileDiff from "../tool/FileDiff.js"
import { diskOnly, EditorFiles, type EditorFilesShape } from "../tool/EditorFiles.js"
import * as FileDisk from "../tool/FileDisk.js"
import * as FileLock from "../tool/FileLock.js"
import { FileTimes, type FileTimesStore } from "../tool/FileTimes.js"
import * as TextEncoding from "../tool/TextEncoding.js"
import * as Tool from "../tool/Tool.js"
import { guard, relativeToWorktree, resolvePath } from "../tool/ExternalDirectory.js"
import { pathPatterns } from "../tool/PathRules.js"
import { withAliases } from "../tool/ArgumentAliases.js"
import * as Prompts from "../runtime/Prompts.js"
import { Instance } from "../runtime/Instance.js"
import { standsIn } from "../sandbox/Placeholders.js"
import { vacating } from "../sandbox/Vacate.js"

const TOOL = "write"

/** A file as the editing tools see it: `\n` text without BOM, and what to restore on write. */
export interface TextFile {
  /** The bytes on disk (to restore the file exactly). */
  readonly bytes: Buffer
  readonly text: string
  /** The text as on disk without BOM: each line with its own ending (see LineEndings). */
  readonly raw: string
  /** BOM, line endings and encoding (Latin-1 for a file that is not valid UTF-8: see TextEncoding). */
  readonly shape: FileDiff.TextShape
  readonly mtimeMs: number
}

const failure = (tool: string, detail: string) => new Tool.ToolExecutionError({ tool, detail })

/** The file's current text, or `undefined` when it does not exist; a directory is an error. */
export const load = (tool: string, file: string): Effect.Effect<TextFile | undefined, Tool.ToolExecutionError> =>
  Effect.tryPromise({
    try: async () => {
      const stat = await fsp.stat(file).catch((error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT") return undefined
        throw error
      })
      if (stat === undefined) return undefined
      if (stat.isDirectory()) {
        throw new Error(
          standsIn(file)
            ? `${file} is held by an empty directory while a sandboxed command runs (so that commands cannot create it); try again once that command has ended`
            : `${file} is a directory, not a file`
        )
      }
      const bytes = await fsp.readFile(file)
      const encoding = TextEncoding.detect(bytes)
      const decoded = TextEncoding.decode(bytes, encoding)
      const { text, shape } = FileDiff.decode(decoded, encoding)
      return { bytes, text, raw: shape.bom ? decoded.slice(1) : decoded, shape, mtimeMs: stat.mtimeMs }
    },
    catch: (error) => failure(tool, `Cannot read ${file}: ${(error as Error).message}`)
  })

/** What the tool result says about the file when a write failed. */
export const unchangedNote = (existed: boolean) => (existed ? "The original file is unchanged." : "The file was not created.")

/**
 * Writes the file's new bytes (creating parent directories) atomically (see FileDisk) and returns
 * its new modification time. Runs to its end once started: an interrupted write would leave a
 * temp file behind. On failure the message names the file and the error and says the file is as
 * it was.
 */
export const store = (
  tool: string,
  disk: FileDisk.FileDiskShape,
  file: string,
  bytes: Uint8Array,
  existed: boolean
): Effect.Effect<number, Tool.ToolExecutionError> =>
  Effect.tryPromise({
    try: () => FileDisk.replace(disk, file, bytes),
    catch: (error) => failure(tool, `Cannot write ${file}: ${FileDisk.reason(error)}. ${unchangedNote(existed)}`)
  }).pipe(Effect.uninterruptible)

/**
 * The file as the session's editor has it (its unsaved buffer), in the disk file's encoding and
 * line-ending shape; the disk's when the editor does not hold it. A new file is the disk's answer.
 */
export const loadFor = (files: EditorFilesShape, sessionID: string, tool: string, file: string) =>
  files === diskOnly ? load(tool, file) : Effect.gen(function*() {
    const disk = yield* load(tool, file)
    if (disk === undefined) return disk
    const text = yield* files.read(sessionID, file).pipe(Effect.orElseSucceed(() => undefined))
    if (text === undefined || text === disk.raw) return disk
    const { text: normalized, shape } = FileDiff.decode(text, disk.shape.encoding)
    return { ...disk, bytes: Buffer.from(text, "utf8"), text: normalized, raw: shape.bom ? text.slice(1) : text, shape: { ...shape, encoding: disk.shape.encoding } }
  })

/**
 * Writes through the session's editor when it takes the file (text that is valid UTF-8), else as
 * `store` does. Returns the file's modification time (now, when the editor has not saved it).
 */
export const storeFor = (
  files: EditorFilesShape,
  sessionID: string,
  tool: string,
  disk: FileDisk.FileDiskShape,
  file: string,
  bytes: Uint8Array,
  existed: boolean
): Effect.Effect<number, Tool.ToolExecutionError> =>
  files === diskOnly ? store(tool, disk, file, bytes, existed) : Effect.gen(function*() {
    const text = Buffer.from(bytes).toString("utf8")
    const valid = Buffer.from(text, "utf8").equals(Buffer.from(bytes))
    const wrote = valid
      ? yield* files.write(sessionID, file, text).pipe(
        Effect.mapError((error) => failure(tool, `Cannot write ${file} through the editor: ${error.message}. ${unchangedNote(existed)}`))
      )
      : false
    if (!wrote) return yield* store(tool, disk, file, bytes, existed)
    return yield* Effect.promise(() => fsp.stat(file).then((stat) => stat.mtimeMs, () => Date.now()))
  }).pipe(Effect.uninterruptible)

/**
 * Lets the event loop run (timers, signals, I/O) between the steps of a large edit; an
 * interruption (a timeout, Ctrl-C) takes effect here. Effect's own yield may resume in a
 * microtask, which lets none of those run.
 */
export const yieldToEventLoop: Effect.Effect<void> = Effect.async<void>((resume) => {
  const timer = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(timer))
})

/**
 * The shape a full replacement of `existing` with `text` is written in: the file's own, except
 * that a Latin-1 file whose new text has characters Latin-1 cannot hold becomes UTF-8.
 */
export const replacementShape = (existing: TextFile, text: string): { readonly shape: FileDiff.TextShape; readonly note: string } => {
  const char = TextEncoding.unencodable(text, existing.shape.encoding)
  if (char === undefined) return { shape: existing.shape, note: "" }
  return {
    shape: { ...existing.shape, encoding: "utf8" },
    note: ` The file was not valid UTF-8 (it was read as Latin-1); it is UTF-8 now, since the new content has ${TextEncoding.describeChar(char)}.`
  }
}

/** Fails when the file changed on disk after this session last read (or wrote) it. */
export const ensureFresh = (fileTimes: FileTimesStore, tool: string, sessionID: string, file: string, current: TextFile | undefined) =>
  current !== undefined && fileTimes.isStale(sessionID, file, current.mtimeMs)
    ? Effect.fail(
      failure(
        tool,
        `${file} was modified on disk since you last read it (modified ${new Date(current.mtimeMs).toISOString()}, ` +
          `last read ${new Date(fileTimes.lastRead(sessionID, file)!).toISOString()}). ` +
          "Read the file again with the read tool before changing it."
      )
    )
    : Effect.void

const Canonical = Schema.Struct({
  filePath: Schema.String.annotations({
    description: "Path of the file to write, absolute or relative to the working directory"
  }),
  content: Schema.String.annotations({ description: "The complete new content of the file" })
})

/** Also accepts Claude Code's argument names (see ArgumentAliases). */
const Parameters = withAliases(Canonical)

export const make: Effect.Effect<Tool.AnyTool, never, Instance> = Effect.gen(function*() {
  const instance = yield* Instance
  const fileTimes = yield* FileTimes
  const disk = yield* FileDisk.FileDisk
  const files = yield* EditorFiles
  const vacate = yield* vacating
  return Tool.make({
    id: TOOL,
    fileEffects: "listed",
    description: Prompts.read("tool/write.txt"),
    parameters: Parameters.parameters,
    jsonSchema: Parameters.jsonSchema,
    execute: (params, context) =>
      Effect.gen(function*() {
        const file = resolvePath(instance, params.filePath)
        const relative = relativeToWorktree(instance, file)
        yield* guard(context, instance, file)
        return yield* FileLock.withLock(file)(
          Effect.gen(function*() {
            yield* vacate(file)
            const existing = yield* loadFor(files, context.sessionID, TOOL, file)
            yield* ensureFresh(fileTimes, TOOL, context.sessionID, file, existing)
            // An existing file keeps its BOM, line endings and encoding; a new one is written as given, in UTF-8.
            const replacement = existing ? replacementShape(existing, params.content) : undefined
            const bytes = replacement ? FileDiff.toBytes(params.content, replacement.shape) : Buffer.from(params.content, "utf8")
            yield* yieldToEventLoop
            const { diff } = FileDiff.compare(file, existing?.text ?? "", FileDiff.decode(params.content).text)
            yield* yieldToEventLoop
            yield* context.ask({ permission: "edit", patterns: pathPatterns(instance, file), always: ["*"], metadata: { filepath: file, diff } })
            const mtimeMs = yield* storeFor(files, context.sessionID, TOOL, disk, file, bytes, existing !== undefined)
            fileTimes.record(context.sessionID, file, mtimeMs)
            return {
              title: relative,
              output: `Wrote file successfully.${replacement?.note ?? ""}`,
              metadata: { filepath: file, diff, exists: existing !== undefined }
            }
          })
        )
      })
  })
})
