import { Effect, Either, Schema } from "effect"
import * as Prompts from "../runtime/Prompts.js"
import { Instance, type InstanceInfo } from "../runtime/Instance.js"
import * as FileDiff from "../tool/FileDiff.js"
import * as FileDisk from "../tool/FileDisk.js"
import * as FileLock from "../tool/FileLock.js"
import { FileTimes } from "../tool/FileTimes.js"
import * as LineEndings from "../tool/LineEndings.js"
import * as PatchWrite from "../tool/PatchWrite.js"
import * as TextEncoding from "../tool/TextEncoding.js"
import * as Tool from "../tool/Tool.js"
import { applyHunkSteps } from "../tool/PatchHunks.js"
import { guard, relativeToWorktree, resolvePath } from "../tool/ExternalDirectory.js"
import { parse } from "../tool/PatchParse.js"
import { pathPatterns } from "../tool/PathRules.js"
import { diskOnly, EditorFiles, type EditorFilesShape } from "../tool/EditorFiles.js"
import { load, loadFor, storeFor, type TextFile, yieldToEventLoop } from "./Write.js"
import { vacating } from "../sandbox/Vacate.js"

const TOOL = "apply_patch"

export { type Operation, parse } from "../tool/PatchParse.js"
export { applyHunks, type Hunk } from "../tool/PatchHunks.js"

// ---------------------------------------------------------------------------------------------
// The tool

const Parameters = Schema.Struct({
  patchText: Schema.String.annotations({
    description: "The whole patch, from \"*** Begin Patch\" to \"*** End Patch\""
  })
})

const fail = (detail: string) => new Tool.ToolExecutionError({ tool: TOOL, detail })

interface FileState {
  readonly original: TextFile | undefined
  /**
   * The text after the patch so far, each line with its own ending (see LineEndings), without
   * BOM; undefined when the file is (or will be) absent.
   */
  raw: string | undefined
  shape: FileDiff.TextShape
}

/** The state's text with `\n` endings, for diffs. */
const textOf = (state: FileState): string | undefined => state.raw === undefined ? undefined : FileDiff.normalizeLineEndings(state.raw)

interface Change {
  readonly file: string
  readonly state: FileState
  readonly type: "add" | "update" | "delete" | "move"
  readonly diff: string
  readonly additions: number
  readonly deletions: number
  readonly movedFrom?: string
}

/** What the patch does to `file`, with its diff (a moved file's against its source). */
const describeChange = (
  file: string,
  state: FileState,
  states: ReadonlyMap<string, FileState>,
  moves: ReadonlyMap<string, string>
): Change => {
  const before = state.original?.text ?? ""
  const after = textOf(state) ?? ""
  const source = moves.get(file)
  const sourceText = source !== undefined && state.original === undefined ? states.get(source)?.original?.text : undefined
  const base = sourceText ?? before
  const type = state.raw === undefined
    ? "delete"
    : source !== undefined
    ? "move"
    : state.original === undefined
    ? "add"
    : "update"
  return {
    file,
    state,
    type,
    ...FileDiff.compare(source ?? file, base, after, file),
    ...(source !== undefined ? { movedFrom: source } : {})
  }
}

/** The tool result for a patch whose writing failed: what failed, and which files were changed or not. */
const failureReport = (
  instance: InstanceInfo,
  outcome: Extract<PatchWrite.Outcome, { readonly _tag: "Failed" }>,
  files: ReadonlyArray<string>
): string => {
  const name = (file: string) => relativeToWorktree(instance, file)
  const cause = `cannot write ${name(outcome.file)}: ${FileDisk.reason(outcome.error)}.`
  if (outcome.applied.length === 0) {
    const restored = outcome.restored.length > 0
      ? ` ${outcome.restored.map(name).join(", ")} had been changed and ${outcome.restored.length === 1 ? "was" : "were"} put back.`
      : ""
    return `Patch not applied: ${cause}${restored} No file was changed: ${files.map(name).join(", ")} are as they were.`
  }
  const applied = outcome.applied.map(({ file, error }) => `${name(file)} (could not be put back: ${FileDisk.reason(error)})`)
  const notApplied = files.filter((file) => !outcome.applied.some((entry) => entry.file === file)).map(name)
  return `Patch partly applied: ${cause} Applied: ${applied.join(", ")}. Not applied (as they were): ${notApplied.join(", ") || "none"}.`
}

/**
 * Writes a patch's files one by one through the editor (each where the editor does not take it, as
 * `storeFor` does): the editor has no all-or-nothing write, so a failure says which files were written.
 */
const writeThroughEditor = (
  files: EditorFilesShape,
  sessionID: string,
  disk: FileDisk.FileDiskShape,
  instance: InstanceInfo,
  changes: ReadonlyArray<Change>
) =>
  Effect.gen(function*() {
    const mtimes = new Map<string, number>()
    for (const [index, change] of changes.entries()) {
      const bytes = FileDiff.rawBytes(change.state.raw!, change.state.shape)
      const written = yield* Effect.either(storeFor(files, sessionID, TOOL, disk, change.file, bytes, change.state.original !== undefined))
      if (written._tag === "Left") {
        const name = (change: Change) => relativeToWorktree(instance, change.file)
        if (index === 0) return yield* Effect.fail(written.left)
        return yield* fail(
          `Patch partly applied: ${written.left.detail} Applied: ${changes.slice(0, index).map(name).join(", ")}. ` +
            `Not applied (as they were): ${changes.slice(index).map(name).join(", ")}.`
        )
      }
      mtimes.set(change.file, written.right)
    }
    return mtimes
  })

/** The result of a patch that was applied. */
const success = (
  instance: InstanceInfo,
  summary: ReadonlyArray<{ readonly kind: "A" | "M" | "D"; readonly file: string }>,
  files: ReadonlyArray<Record<string, unknown>>,
  diff: string
) => {
  const lines = [...new Set(summary.map((entry) => `${entry.kind} ${relativeToWorktree(instance, entry.file)}`))]
  const names = [...new Set(summary.map((entry) => relativeToWorktree(instance, entry.file)))]
  return {
    title: names.length <= 3 ? names.join(", ") : `${names.length} files`,
    output: `Success. Updated the following files:\n${lines.join("\n")}`,
    metadata: { diff, files }
  }
}

export const make: Effect.Effect<Tool.AnyTool, never, Instance> = Effect.gen(function*() {
  const instance = yield* Instance
  const fileTimes = yield* FileTimes
  const disk = yield* FileDisk.FileDisk
  const editorFiles = yield* EditorFiles
  const vacate = yield* vacating
  return Tool.make({
    id: TOOL,
    fileEffects: "listed",
    description: Prompts.read("tool/apply_patch.txt"),
    parameters: Parameters,
    execute: (params, context) =>
      Effect.gen(function*() {
        const parsed = parse(params.patchText)
        if (Either.isLeft(parsed)) return yield* fail(`Invalid patch: ${parsed.left}`)
        const operations = parsed.right
        const absolute = (file: string) => resolvePath(instance, file)

        const touched: Array<string> = []
        for (const operation of operations) {
          touched.push(absolute(operation.path))
          if (operation.type === "update" && operation.moveTo !== undefined) touched.push(absolute(operation.moveTo))
        }
        const files = [...new Set(touched)]
        for (const file of files) yield* guard(context, instance, file)
        // Adds and updates go through the editor when it holds the files (unsaved buffers are patched);
        // a delete or a move is the disk's, all or nothing.
        const throughEditor = editorFiles !== diskOnly &&
          !operations.some((operation) => operation.type === "delete" || (operation.type === "update" && operation.moveTo !== undefined))

        return yield* FileLock.withLocks(files)(
          Effect.gen(function*() {
            // Everything is applied in memory first: one failing hunk changes nothing on disk.
            const states = new Map<string, FileState>()
            const stateOf = (file: string) =>
              Effect.gen(function*() {
                let state = states.get(file)
                if (state === undefined) {
                  const original = yield* Effect.zipRight(vacate(file), throughEditor ? loadFor(editorFiles, context.sessionID, TOOL, file) : load(TOOL, file))
                  state = { original, raw: original?.raw, shape: original?.shape ?? FileDiff.LF }
                  states.set(file, state)
                }
                return state
              })
            const summary: Array<{ readonly kind: "A" | "M" | "D"; readonly file: string }> = []
            const moves = new Map<string, string>()

            for (const operation of operations) {
              const file = absolute(operation.path)
              const state = yield* stateOf(file)
              switch (operation.type) {
                case "add": {
                  // Over an existing file, the new lines take its line ending style, as an update's do.
                  state.raw = state.shape.eol === "\r\n" ? operation.content.replace(/\n/g, "\r\n") : operation.content
                  summary.push({ kind: "A", file })
                  break
                }
                case "delete": {
                  if (state.raw === undefined) {
                    return yield* fail(`Patch not applied: line ${operation.line}: cannot delete ${file}: file not found`)
                  }
                  state.raw = undefined
                  summary.push({ kind: "D", file })
                  break
                }
                case "update": {
                  yield* yieldToEventLoop
                  if (state.raw === undefined) {
                    return yield* fail(`Patch not applied: line ${operation.line}: cannot update ${file}: file not found`)
                  }
                  const steps = applyHunkSteps(LineEndings.split(state.raw), operation.hunks, file, state.shape.eol)
                  let step = steps.next()
                  // A patch of many hunks on a large file runs a hunk at a time, the event loop free in between.
                  for (; !step.done; step = steps.next()) yield* yieldToEventLoop
                  // A bare move (no hunks) keeps the file byte for byte, a missing final newline included.
                  const applied = operation.hunks.length === 0 ? Either.right(state.raw) : Either.map(step.value, LineEndings.join)
                  if (Either.isLeft(applied)) return yield* fail(`Patch not applied, no file was changed. ${applied.left}`)
                  if (operation.moveTo !== undefined && absolute(operation.moveTo) !== file) {
                    const target = absolute(operation.moveTo)
                    const destination = yield* stateOf(target)
                    destination.raw = applied.right
                    destination.shape = state.shape
                    state.raw = undefined
                    moves.set(target, file)
                    summary.push({ kind: "M", file: target })
                  } else {
                    state.raw = applied.right
                    summary.push({ kind: "M", file })
                  }
                  break
                }
              }
            }

            // Only the patched lines change: new text must fit each file's encoding (see TextEncoding).
            for (const [file, state] of states) {
              const char = state.raw === undefined ? undefined : TextEncoding.unencodable(state.raw, state.shape.encoding)
              if (char !== undefined) return yield* fail(`Patch not applied, no file was changed. ${TextEncoding.latin1Refusal(file, char)}`)
            }

            const changes: Array<Change> = []
            for (const [file, state] of states) {
              yield* yieldToEventLoop
              changes.push(describeChange(file, state, states, moves))
            }
            // A moved file's source shows as part of its move, not as a separate deletion.
            const shown = changes.filter((change) => !(change.type === "delete" && [...moves.values()].includes(change.file)))
            const diff = shown.map((change) => change.diff).join("\n")
            const metadataFiles = shown.map((change) => ({
              filepath: change.file,
              relativePath: relativeToWorktree(instance, change.file),
              type: change.type,
              diff: change.diff,
              additions: change.additions,
              deletions: change.deletions,
              ...(change.movedFrom !== undefined ? { movedFrom: change.movedFrom } : {})
            }))

            const patterns = [...new Set(files.flatMap((file) => pathPatterns(instance, file)))]
            yield* context.ask({
              permission: "edit",
              patterns,
              always: ["*"],
              metadata: { filepath: files[0]!, diff, files: metadataFiles }
            })

            if (throughEditor) {
              const mtimes = yield* writeThroughEditor(editorFiles, context.sessionID, disk, instance, changes)
              for (const [file, mtimeMs] of mtimes) fileTimes.record(context.sessionID, file, mtimeMs)
              return success(instance, summary, metadataFiles, diff)
            }
            const outcome = yield* Effect.promise(() =>
              PatchWrite.writeFiles(
                disk,
                changes.map(({ file, state }) => ({
                  file,
                  bytes: state.raw === undefined ? undefined : FileDiff.rawBytes(state.raw, state.shape),
                  original: state.original?.bytes
                }))
              )
            ).pipe(Effect.uninterruptible)
            for (const [file, mtimeMs] of outcome.mtimes) fileTimes.record(context.sessionID, file, mtimeMs)
            if (outcome._tag === "Failed") return yield* fail(failureReport(instance, outcome, changes.map((change) => change.file)))

            return success(instance, summary, metadataFiles, diff)
          })
        )
      })
  })
})
