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
import { ensureFresh, load, store } from "./Write.js"

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
            if (params.oldString === "") {
              after = FileDiff.normalizeLineEndings(params.newString)
            } else {
              if (existing === undefined) return yield* fail(`File not found: ${file}`)
              const replaced = EditMatch.replace(
                before,
                FileDiff.normalizeLineEndings(params.oldString),
                FileDiff.normalizeLineEndings(params.newString),
                params.replaceAll ?? false
              )
              if (Either.isLeft(replaced)) return yield* fail(explain(file, replaced.left))
              after = replaced.right.content
            }
            // Line endings and BOM follow the file; a new file follows newString.
            const raw = existing ? FileDiff.encode(after, existing.shape) : params.newString
            const diff = FileDiff.unified(file, before, after)
            const { additions, deletions } = FileDiff.countChanges(before, after)
            yield* context.ask({ permission: "edit", patterns: pathPatterns(instance, file), always: ["*"], metadata: { filepath: file, diff } })
            const mtimeMs = yield* store(TOOL, file, raw)
            FileTimes.record(context.sessionID, file, mtimeMs)
            return {
              title: relative,
              output: "Edit applied successfully.",
              metadata: { filepath: file, diff, additions, deletions }
            }
          })
        )
      })
  })
})
