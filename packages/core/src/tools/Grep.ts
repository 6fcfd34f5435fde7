import { Effect, Schema } from "effect"
import * as fsp from "node:fs/promises"
import * as Prompts from "../runtime/Prompts.js"
import { Instance } from "../runtime/Instance.js"
import * as FileSearch from "../tool/FileSearch.js"
import * as Tool from "../tool/Tool.js"
import { guard, resolvePath } from "../tool/ExternalDirectory.js"
import { leftOutNote, readDenied } from "../tool/PathRules.js"
import { optionalPath } from "./Glob.js"

const TOOL = "grep"

/** Matching lines shown per call. */
export const LIMIT = 100
/** The search stops after this many matching lines; the count then reads "1000+". */
export const MAX_COLLECTED = 1000
/** Longer lines are cut to this many characters. */
export const MAX_LINE_LENGTH = 2000

const Parameters = Schema.Struct({
  pattern: Schema.String.annotations({
    description: 'The regular expression to search file contents for, e.g. "function\\s+\\w+" or "TODO"'
  }),
  path: Schema.optional(
    Schema.String.annotations({
      description:
        "The directory (or single file) to search, absolute or relative to the working directory. Leave it out to search the working directory."
    })
  ),
  include: Schema.optional(
    Schema.String.annotations({
      description: 'Only search files matching this glob, e.g. "*.js" or "*.{ts,tsx}"'
    })
  )
})

const fail = (detail: string) => new Tool.ToolExecutionError({ tool: TOOL, detail })

/** `grep`: lines matching a regular expression, files newest first. Needs the `Instance`. */
export const make: Effect.Effect<Tool.AnyTool, never, Instance> = Effect.gen(function*() {
  const instance = yield* Instance
  const search = FileSearch.make(instance)
  return Tool.make({
    id: TOOL,
    fileEffects: "none",
    description: Prompts.read("tool/grep.txt"),
    parameters: Parameters,
    execute: (params, context) =>
      Effect.gen(function*() {
        if (params.pattern === "") return yield* fail("The pattern must not be empty.")
        const target = resolvePath(instance, optionalPath(params.path) ?? instance.directory)
        const include = params.include?.trim() ? params.include.trim() : undefined
        yield* context.ask({
          permission: TOOL,
          patterns: [params.pattern],
          always: ["*"],
          metadata: { pattern: params.pattern, path: target, ...(include ? { include } : {}) }
        })
        const stat = yield* Effect.promise(() => fsp.stat(target).catch(() => undefined))
        if (!stat) return yield* fail(`Path not found: ${target}`)
        yield* guard(context, instance, target, stat.isDirectory() ? "directory" : "file")

        const exclude = readDenied(instance, context.rules, target)
        const result = yield* search
          .grep({
            cwd: target,
            pattern: params.pattern,
            globs: include ? [include] : [],
            limit: MAX_COLLECTED,
            signal: context.abort,
            ...(exclude ? { exclude } : {})
          })
          .pipe(
            Effect.mapError((error) =>
              fail(
                error._tag === "InvalidPattern"
                  ? `${error.message}. Fix the regular expression (escape special characters such as ( [ { . * + ? with a backslash to match them literally) and try again.`
                  : error.message
              )
            )
          )

        const leftOut = result.excluded > 0 ? [leftOutNote(result.excluded)] : []
        const leftOutMetadata = result.excluded > 0 ? { leftOut: result.excluded } : {}
        if (result.matches.length === 0) {
          const notes = [...(result.partial ? ["(Some paths were inaccessible and skipped)"] : []), ...leftOut]
          return {
            title: params.pattern,
            output: ["No files found", ...notes].join("\n\n"),
            metadata: { matches: 0, truncated: false, ...leftOutMetadata }
          }
        }

        const times = yield* FileSearch.modifiedTimes(result.matches.map((match) => match.path))
        const newest = FileSearch.byNewest(times)
        const sorted = [...result.matches].sort((a, b) => newest(a.path, b.path) || a.line - b.line)
        const shown = sorted.slice(0, LIMIT)
        const total = `${sorted.length}${result.truncated ? "+" : ""}`
        const hidden = sorted.length > shown.length || result.truncated

        const lines = [`Found ${total} matches${hidden ? ` (showing first ${LIMIT})` : ""}`]
        let current: string | undefined
        for (const match of shown) {
          if (match.path !== current) {
            if (current !== undefined) lines.push("")
            current = match.path
            lines.push(`${match.path}:`)
          }
          const text = match.text.length > MAX_LINE_LENGTH ? `${match.text.slice(0, MAX_LINE_LENGTH)}...` : match.text
          lines.push(`  Line ${match.line}: ${text}`)
        }
        if (hidden) {
          lines.push(
            "",
            `(Results truncated: showing ${shown.length} of ${total} matches. Use a more specific pattern, path or include glob to narrow them down.)`
          )
        }
        if (result.partial) lines.push("", "(Some paths were inaccessible and skipped)")
        if (leftOut.length > 0) lines.push("", ...leftOut)
        return {
          title: params.pattern,
          output: lines.join("\n"),
          metadata: { matches: sorted.length, truncated: hidden, ...leftOutMetadata }
        }
      })
  })
})
