import { Effect, Schema } from "effect"
import * as path from "node:path"
import * as Prompts from "../runtime/Prompts.js"
import { Instance } from "../runtime/Instance.js"
import * as FileSearch from "../tool/FileSearch.js"
import * as Tool from "../tool/Tool.js"
import { guard, relativeToWorktree, resolvePath } from "../tool/ExternalDirectory.js"
import { leftOutNote, readDenied } from "../tool/PathRules.js"

const TOOL = "glob"

/** At most this many paths per call. */
export const LIMIT = 100

const Parameters = Schema.Struct({
  pattern: Schema.String.annotations({
    description: 'The glob pattern to match file paths against, e.g. "**/*.ts" or "src/**/*.test.{ts,tsx}"'
  }),
  path: Schema.optional(
    Schema.String.annotations({
      description:
        "The directory to search in, absolute or relative to the working directory. Leave it out to search the working directory."
    })
  )
})

const fail = (detail: string) => new Tool.ToolExecutionError({ tool: TOOL, detail })

/** Models sometimes spell "no value" as a string. */
export const optionalPath = (value: string | undefined): string | undefined =>
  value === undefined || ["", "undefined", "null", "."].includes(value.trim()) ? undefined : value

/** `glob`: files whose path matches a pattern, newest first. Needs the `Instance`. */
export const make: Effect.Effect<Tool.AnyTool, never, Instance> = Effect.gen(function*() {
  const instance = yield* Instance
  const search = FileSearch.make(instance)
  return Tool.make({
    id: TOOL,
    fileEffects: "none",
    description: Prompts.read("tool/glob.txt"),
    parameters: Parameters,
    execute: (params, context) =>
      Effect.gen(function*() {
        if (params.pattern.trim() === "") return yield* fail("The pattern must not be empty.")
        const requested = optionalPath(params.path)
        const dir = resolvePath(instance, requested ?? instance.directory)
        yield* context.ask({
          permission: TOOL,
          patterns: [params.pattern],
          always: ["*"],
          metadata: { pattern: params.pattern, path: dir }
        })
        yield* guard(context, instance, dir, "directory")

        const exclude = readDenied(instance, context.rules, dir)
        const result = yield* search
          .files({ cwd: dir, globs: [params.pattern], limit: LIMIT, signal: context.abort, ...(exclude ? { exclude } : {}) })
          .pipe(Effect.mapError((error) => fail(error.message)))
        const times = yield* FileSearch.modifiedTimes(result.files)
        const files = [...result.files].sort(FileSearch.byNewest(times))

        const lines = files.length === 0 ? ["No files found"] : [...files]
        if (result.truncated) {
          lines.push(
            "",
            `(Results are truncated: showing the first ${LIMIT} results. Use a more specific path or pattern to narrow them down.)`
          )
        }
        if (result.excluded > 0) lines.push("", leftOutNote(result.excluded))
        return {
          title: relativeToWorktree(instance, dir) || path.basename(dir),
          output: lines.join("\n"),
          metadata: { count: files.length, truncated: result.truncated, ...(result.excluded > 0 ? { leftOut: result.excluded } : {}) }
        }
      })
  })
})
