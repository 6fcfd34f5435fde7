import { Effect, Schema } from "effect"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { Instance } from "../Instance.js"
import * as Prompts from "../Prompts.js"
import * as Tool from "../Tool.js"
import { guard, relativeToWorktree, resolvePath } from "./ExternalDirectory.js"
import * as FileDiff from "./FileDiff.js"
import * as FileLock from "./FileLock.js"
import * as FileTimes from "./FileTimes.js"
import { pathPatterns } from "./PathRules.js"

const TOOL = "write"

/** A file as the editing tools see it: `\n` text without BOM, and what to restore on write. */
export interface TextFile {
  /** The bytes on disk, as text (to restore the file exactly). */
  readonly raw: string
  readonly text: string
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
      if (stat.isDirectory()) throw new Error(`${file} is a directory, not a file`)
      const raw = await fsp.readFile(file, "utf8")
      return { raw, ...FileDiff.decode(raw), mtimeMs: stat.mtimeMs }
    },
    catch: (error) => failure(tool, `Cannot read ${file}: ${(error as Error).message}`)
  })

/** Writes raw text (creating parent directories) and returns the file's new modification time. */
export const store = (tool: string, file: string, raw: string): Effect.Effect<number, Tool.ToolExecutionError> =>
  Effect.tryPromise({
    try: async () => {
      await fsp.mkdir(path.dirname(file), { recursive: true })
      await fsp.writeFile(file, raw, "utf8")
      return (await fsp.stat(file)).mtimeMs
    },
    catch: (error) => failure(tool, `Cannot write ${file}: ${(error as Error).message}`)
  })

/** Fails when the file changed on disk after this session last read (or wrote) it. */
export const ensureFresh = (tool: string, sessionID: string, file: string, current: TextFile | undefined) =>
  current !== undefined && FileTimes.isStale(sessionID, file, current.mtimeMs)
    ? Effect.fail(
      failure(
        tool,
        `${file} was modified on disk since you last read it (modified ${new Date(current.mtimeMs).toISOString()}, ` +
          `last read ${new Date(FileTimes.lastRead(sessionID, file)!).toISOString()}). ` +
          "Read the file again with the read tool before changing it."
      )
    )
    : Effect.void

const Parameters = Schema.Struct({
  filePath: Schema.String.annotations({
    description: "Path of the file to write, absolute or relative to the working directory"
  }),
  content: Schema.String.annotations({ description: "The complete new content of the file" })
})

export const make: Effect.Effect<Tool.AnyTool, never, Instance> = Effect.gen(function*() {
  const instance = yield* Instance
  return Tool.make({
    id: TOOL,
    fileEffects: "listed",
    description: Prompts.read("tool/write.txt"),
    parameters: Parameters,
    execute: (params, context) =>
      Effect.gen(function*() {
        const file = resolvePath(instance, params.filePath)
        const relative = relativeToWorktree(instance, file)
        yield* guard(context, instance, file)
        return yield* FileLock.withLock(file)(
          Effect.gen(function*() {
            const existing = yield* load(TOOL, file)
            yield* ensureFresh(TOOL, context.sessionID, file, existing)
            // An existing file keeps its BOM and line endings; a new one is written as given.
            const raw = existing ? FileDiff.encode(params.content, existing.shape) : params.content
            const diff = FileDiff.unified(file, existing?.text ?? "", FileDiff.decode(raw).text)
            yield* context.ask({ permission: "edit", patterns: pathPatterns(instance, file), always: ["*"], metadata: { filepath: file, diff } })
            const mtimeMs = yield* store(TOOL, file, raw)
            FileTimes.record(context.sessionID, file, mtimeMs)
            return {
              title: relative,
              output: "Wrote file successfully.",
              metadata: { filepath: file, diff, exists: existing !== undefined }
            }
          })
        )
      })
  })
})
