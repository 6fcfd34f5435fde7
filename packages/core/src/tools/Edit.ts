import { Effect, Either, Schema } from "effect"
import * as Prompts from "../runtime/Prompts.js"
import { Instance } from "../runtime/Instance.js"
import * as EditMatch from "../tool/EditMatch.js"
import * as FileDiff from "../tool/FileDiff.js"
import { EditorFiles } from "../tool/EditorFiles.js"
import * as FileDisk from "../tool/FileDisk.js"
import * as FileLock from "../tool/FileLock.js"
import { FileTimes } from "../tool/FileTimes.js"
import * as LineEndings from "../tool/LineEndings.js"
import * as TextEncoding from "../tool/TextEncoding.js"
import * as Tool from "../tool/Tool.js"
import { guard, relativeToWorktree, resolvePath } from "../tool/ExternalDirectory.js"
import { pathPatterns } from "../tool/PathRules.js"
import { withAliases } from "../tool/ArgumentAliases.js"
import { ensureFresh, loadFor, replacementShape, storeFor, yieldToEventLoop } from "./Write.js"
import { vacating } from "../sandbox/Vacate.js"

const TOOL = "edit"

const Canonical = Schema.Struct({
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

const Parameters = withAliases(Canonical)

const fail = (detail: string) => new Tool.ToolExecutionError({ tool: TOOL, detail })

const explain = (file: string, failure: EditMatch.ReplaceFailure): string => {
  switch (failure._tag) {
    case "Identical":
      return "No changes to apply: oldString and newString are identical."
    case "NotFound":
      return `Could not find oldString in ${file}. It must match the file's content exactly, including whitespace and ` +
        "indentation; read the file again and copy the passage as it is."
    case "MultipleMatches": {
      const how = failure.strategy === "exact" ? "" : ` ${STRATEGY_NOTES[failure.strategy]}`
      return `Found multiple matches for oldString (${failure.count} places${how}) in ${file}, at ${linesText(failure.lines)}. ` +
        "Include more surrounding lines in oldString so it identifies one place, or set replaceAll to true to replace " +
        "every occurrence."
    }
  }
}

/** "line 3", "lines 3 and 9", "lines 3, 9, 12 and 20 more". */
const linesText = (lines: ReadonlyArray<number>): string => {
  if (lines.length === 1) return `line ${lines[0]}`
  const shown = lines.slice(0, 10)
  const rest = lines.length - shown.length
  return rest > 0
    ? `lines ${shown.join(", ")} and ${rest} more`
    : `lines ${shown.slice(0, -1).join(", ")} and ${shown[shown.length - 1]}`
}

/** What each fuzzy strategy tolerated, for the tool result. */
const STRATEGY_NOTES: Record<EditMatch.StrategyName, string> = {
  "exact": "exactly",
  "line-trimmed": "when lines are compared without their leading and trailing whitespace",
  "whitespace-normalized": "when runs of whitespace count as one space",
  "indentation-flexible": "when the whole block may be indented differently",
  "escape-normalized": "when escapes such as \\n and \\\" are read as the characters they stand for",
  "unicode-normalized": "when typographic dashes, quotes and spaces are read as ASCII and Unicode in one normal form (NFC)",
  "trimmed-boundary": "when the whitespace around oldString is left out",
  "block-anchor": "by its first and last lines, with a similar middle",
  "context-aware": "by its first and last lines and half of the lines between",
  "multi-occurrence": "exactly"
}

/** What the result says about a match that was not exact. */
const matchNote = (replaced: EditMatch.Replaced): string => {
  if (replaced.strategy === "exact" || replaced.strategy === "multi-occurrence") return ""
  const places = replaced.count === 1 ? "one place" : `${replaced.count} places`
  const shifted = replaced.reindented ? " newString was re-indented to the indentation found there." : ""
  return ` oldString was not found exactly; it matched ${places} ${STRATEGY_NOTES[replaced.strategy]} ` +
    `(strategy: ${replaced.strategy}).${shifted} Check the diff.`
}

export const make: Effect.Effect<Tool.AnyTool, never, Instance> = Effect.gen(function*() {
  const instance = yield* Instance
  const fileTimes = yield* FileTimes
  const disk = yield* FileDisk.FileDisk
  const files = yield* EditorFiles
  const vacate = yield* vacating
  return Tool.make({
    id: TOOL,
    fileEffects: "listed",
    description: Prompts.read("tool/edit.txt"),
    parameters: Parameters.parameters,
    jsonSchema: Parameters.jsonSchema,
    execute: (params, context) =>
      Effect.gen(function*() {
        if (params.oldString === params.newString) return yield* fail(explain("", { _tag: "Identical" }))
        const file = resolvePath(instance, params.filePath)
        const relative = relativeToWorktree(instance, file)
        yield* guard(context, instance, file)
        return yield* FileLock.withLock(file)(
          Effect.gen(function*() {
            yield* vacate(file)
            const existing = yield* loadFor(files, context.sessionID, TOOL, file)
            yield* ensureFresh(fileTimes, TOOL, context.sessionID, file, existing)
            const before = existing?.text ?? ""
            let after: string
            let shape = existing?.shape
            let note = ""
            // The text as written, each line with its own ending; undefined to write `after` in `shape`.
            let raw: string | undefined
            if (params.oldString === "") {
              after = FileDiff.normalizeLineEndings(params.newString)
              // Overwriting a file is a full replacement, as with write.
              if (existing !== undefined) ({ shape, note } = replacementShape(existing, after))
            } else {
              if (existing === undefined) return yield* fail(`File not found: ${file}`)
              // Only the replaced bytes change: new text must fit the file's encoding (see TextEncoding).
              const char = TextEncoding.unencodable(params.newString, existing.shape.encoding)
              if (char !== undefined) return yield* fail(TextEncoding.latin1Refusal(file, char))
              const steps = EditMatch.replaceSteps(
                before,
                FileDiff.normalizeLineEndings(params.oldString),
                FileDiff.normalizeLineEndings(params.newString),
                params.replaceAll ?? false
              )
              let step = steps.next()
              // A large file's fuzzy search runs a strategy at a time, with the event loop free between them.
              for (; !step.done; step = steps.next()) yield* yieldToEventLoop
              const replaced = step.value
              if (Either.isLeft(replaced)) return yield* fail(explain(file, replaced.left))
              after = replaced.right.content
              note = matchNote(replaced.right)
              // Only the replaced text changes: the other lines keep their endings (a file may mix CRLF and LF).
              raw = LineEndings.replaceRanges(existing.raw, replaced.right.replacements, existing.shape.eol)
            }
            // A large file's edit runs in steps, with the event loop free between them.
            yield* yieldToEventLoop
            // Line endings, BOM and encoding follow the file; a new file follows newString.
            const bytes = shape === undefined
              ? Buffer.from(params.newString, "utf8")
              : raw !== undefined
              ? FileDiff.rawBytes(raw, shape)
              : FileDiff.toBytes(after, shape)
            yield* yieldToEventLoop
            const { diff, additions, deletions } = FileDiff.compare(file, before, after)
            yield* yieldToEventLoop
            yield* context.ask({ permission: "edit", patterns: pathPatterns(instance, file), always: ["*"], metadata: { filepath: file, diff } })
            const mtimeMs = yield* storeFor(files, context.sessionID, TOOL, disk, file, bytes, existing !== undefined)
            fileTimes.record(context.sessionID, file, mtimeMs)
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
