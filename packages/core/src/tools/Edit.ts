import { Effect, Either, Schema } from "effect"
import { Instance } from "../Instance.js"
import * as Prompts from "../Prompts.js"
import * as Tool from "../Tool.js"
import * as EditMatch from "./EditMatch.js"
import { guard, relativeToWorktree, resolvePath } from "./ExternalDirectory.js"
import * as FileDiff from "./FileDiff.js"
import * as FileLock from "./FileLock.js"
import * as FileTimes from "./FileTimes.js"
import { pathPatterns } from "./PathRules.js"
import * as FileDisk from "./FileDisk.js"
import * as TextEncoding from "./TextEncoding.js"
import { ensureFresh, load, replacementShape, store, yieldToEventLoop } from "./Write.js"

const TOOL = "edit"

const Parameters = Schema.Struct({
  filePath: Schema.String.annotations({
    description: "Path of the file to change, absolute or relative to the working directory"
  }),
  oldString: Schema.String.annotations({
    description: "The text to replace; empty to create the file (or overwrite it) with newString"
  }),
  newString: Schema.String.annotations({ description: "The text to put in its place (must differ from oldString)" }),
  replaceAll: Schema.optional(
    Schema.Boolean.annotations({ description: "Replace every occurrence of oldString instead of exactly one (default false)" })
  )
})

const fail = (detail: string) => new Tool.ToolExecutionError({ tool: TOOL, detail })

const explain = (file: string, failure: EditMatch.ReplaceFailure): string => {
  switch (failure._tag) {
    case "Identical":
      return "No changes to apply: oldString and newString are identical."
    case "NotFound":
      return `Could not find oldString in ${file}. It must match the file's content exactly, including whitespace and ` +
        "indentation; read the file again and copy the passage as it is."
    case "MultipleMatches":
      return `Found multiple matches for oldString (${failure.count} places) in ${file}. Include more surrounding lines ` +
        "in oldString so it identifies one place, or set replaceAll to true to replace every occurrence."
  }
}

export const make: Effect.Effect<Tool.AnyTool, never, Instance> = Effect.gen(function*() {
  const instance = yield* Instance
  const disk = yield* FileDisk.FileDisk
  return Tool.make({
    id: TOOL,
    fileEffects: "listed",
    description: Prompts.read("tool/edit.txt"),
    parameters: Parameters,
    execute: (params, context) =>
      Effect.gen(function*() {
        if (params.oldString === params.newString) return yield* fail(explain("", { _tag: "Identical" }))
        const file = resolvePath(instance, params.filePath)
        const relative = relativeToWorktree(instance, file)
        yield* guard(context, instance, file)
        return yield* FileLock.withLock(file)(
          Effect.gen(function*() {
            const existing = yield* load(TOOL, file)
            yield* ensureFresh(TOOL, context.sessionID, file, existing)
            const before = existing?.text ?? ""
            let after: string
            let shape = existing?.shape
            let note = ""
            if (params.oldString === "") {
              after = FileDiff.normalizeLineEndings(params.newString)
              // Overwriting a file is a full replacement, as with write.
              if (existing !== undefined) ({ shape, note } = replacementShape(existing, after))
            } else {
              if (existing === undefined) return yield* fail(`File not found: ${file}`)
              // Only the replaced bytes change: new text must fit the file's encoding (see TextEncoding).
              const char = TextEncoding.unencodable(params.newString, existing.shape.encoding)
              if (char !== undefined) return yield* fail(TextEncoding.latin1Refusal(file, char))
              const replaced = EditMatch.replace(
                before,
                FileDiff.normalizeLineEndings(params.oldString),
                FileDiff.normalizeLineEndings(params.newString),
                params.replaceAll ?? false
              )
              if (Either.isLeft(replaced)) return yield* fail(explain(file, replaced.left))
              after = replaced.right.content
            }
            // A large file's edit runs in steps, with the event loop free between them.
            yield* yieldToEventLoop
            // Line endings, BOM and encoding follow the file; a new file follows newString.
            const bytes = shape ? FileDiff.toBytes(after, shape) : Buffer.from(params.newString, "utf8")
            yield* yieldToEventLoop
            const { diff, additions, deletions } = FileDiff.compare(file, before, after)
            yield* yieldToEventLoop
            yield* context.ask({ permission: "edit", patterns: pathPatterns(instance, file), always: ["*"], metadata: { filepath: file, diff } })
            const mtimeMs = yield* store(TOOL, disk, file, bytes, existing !== undefined)
            FileTimes.record(context.sessionID, file, mtimeMs)
            return {
              title: relative,
              output: `Edit applied successfully.${note}`,
              metadata: { filepath: file, diff, additions, deletions }
            }
          })
        )
      })
  })
})
