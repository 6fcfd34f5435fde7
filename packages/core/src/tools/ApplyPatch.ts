import { Effect, Either, Schema } from "effect"
import { Instance, type InstanceInfo } from "../Instance.js"
import * as Prompts from "../Prompts.js"
import * as Tool from "../Tool.js"
import { guard, relativeToWorktree, resolvePath } from "./ExternalDirectory.js"
import * as FileDiff from "./FileDiff.js"
import * as FileDisk from "./FileDisk.js"
import * as FileLock from "./FileLock.js"
import * as FileTimes from "./FileTimes.js"
import { applyHunks, type Hunk } from "./PatchHunks.js"
import * as PatchWrite from "./PatchWrite.js"
import { pathPatterns } from "./PathRules.js"
import * as TextEncoding from "./TextEncoding.js"
import { load, type TextFile, yieldToEventLoop } from "./Write.js"

const TOOL = "apply_patch"

// ---------------------------------------------------------------------------------------------
// The patch format
//
//   *** Begin Patch
//   *** Add File: path          then every line starts with "+"
//   *** Delete File: path
//   *** Update File: path
//   *** Move to: path           (optional)
//   @@ optional context line    then lines starting with " " (context), "-" (removed), "+" (added)
//   *** End of File             (optional: the hunk ends at the end of the file)
//   *** End Patch

export type Operation =
  | { readonly type: "add"; readonly path: string; readonly content: string; readonly line: number }
  | { readonly type: "delete"; readonly path: string; readonly line: number }
  | {
    readonly type: "update"
    readonly path: string
    readonly moveTo?: string
    readonly hunks: ReadonlyArray<Hunk>
    readonly line: number
  }

export { applyHunks, type Hunk }

const BEGIN = "*** Begin Patch"
const END = "*** End Patch"
const ADD = "*** Add File: "
const DELETE = "*** Delete File: "
const UPDATE = "*** Update File: "
const MOVE = "*** Move to: "
const END_OF_FILE = "*** End of File"

const isFileHeader = (line: string) =>
  line.startsWith(ADD) || line.startsWith(DELETE) || line.startsWith(UPDATE) || line.trim() === END

/** Parses a patch; the error names the offending line. */
export const parse = (patchText: string): Either.Either<ReadonlyArray<Operation>, string> => {
  let lines = FileDiff.normalizeLineEndings(patchText).split("\n")
  let offset = 0 // lines dropped before lines[0], for line numbers
  while (lines.length > 0 && lines[0]!.trim() === "") {
    lines = lines.slice(1)
    offset++
  }
  while (lines.length > 0 && lines[lines.length - 1]!.trim() === "") lines = lines.slice(0, -1)
  // Tolerate a shell heredoc around the patch (`apply_patch <<'EOF'` … `EOF`).
  const heredoc = lines[0]?.match(/<<\s*['"]?(\w+)['"]?\s*$/)
  if (heredoc && lines.length > 1 && lines[lines.length - 1]!.trim() === heredoc[1]) {
    lines = lines.slice(1, -1)
    offset++
  }
  const at = (index: number) => index + offset + 1
  const error = (index: number, message: string) => Either.left(`line ${at(index)}: ${message}`)

  if (lines.length === 0 || lines[0]!.trim() !== BEGIN) return error(0, `the patch must start with "${BEGIN}"`)
  if (lines.length < 2 || lines[lines.length - 1]!.trim() !== END) {
    return error(Math.max(lines.length - 1, 0), `the patch must end with "${END}"`)
  }
  const last = lines.length - 1
  const operations: Array<Operation> = []
  let index = 1
  while (index < last) {
    const line = lines[index]!
    if (line.startsWith(ADD)) {
      const path = line.slice(ADD.length).trim()
      if (path === "") return error(index, "Add File needs a path")
      const start = index++
      const content: Array<string> = []
      while (index < last && !isFileHeader(lines[index]!)) {
        const body = lines[index]!
        if (!body.startsWith("+")) return error(index, `every line of an added file must start with "+" (in ${path})`)
        content.push(body.slice(1))
        index++
      }
      operations.push({ type: "add", path, content: content.length > 0 ? `${content.join("\n")}\n` : "", line: at(start) })
      continue
    }
    if (line.startsWith(DELETE)) {
      const path = line.slice(DELETE.length).trim()
      if (path === "") return error(index, "Delete File needs a path")
      operations.push({ type: "delete", path, line: at(index) })
      index++
      continue
    }
    if (line.startsWith(UPDATE)) {
      const path = line.slice(UPDATE.length).trim()
      if (path === "") return error(index, "Update File needs a path")
      const start = index++
      let moveTo: string | undefined
      if (index < last && lines[index]!.startsWith(MOVE)) {
        moveTo = lines[index]!.slice(MOVE.length).trim()
        if (moveTo === "") return error(index, "Move to needs a path")
        index++
      }
      const hunks: Array<Hunk> = []
      let current: { context?: string; oldLines: Array<string>; newLines: Array<string>; endOfFile: boolean; line: number } | undefined
      const close = (): string | undefined => {
        if (current === undefined) return undefined
        if (current.oldLines.length === 0 && current.newLines.length === 0) return `empty hunk in ${path}`
        hunks.push(current)
        current = undefined
        return undefined
      }
      while (index < last && !isFileHeader(lines[index]!)) {
        const body = lines[index]!
        if (body.startsWith("@@")) {
          const problem = close()
          if (problem) return error(index - 1, problem)
          const context = body.slice(2).trim()
          current = { oldLines: [], newLines: [], endOfFile: false, line: at(index), ...(context ? { context } : {}) }
        } else if (body.trim() === END_OF_FILE) {
          if (current === undefined) return error(index, `"${END_OF_FILE}" outside a hunk in ${path}`)
          current.endOfFile = true
        } else if (body === "" || body.startsWith(" ") || body.startsWith("-") || body.startsWith("+")) {
          if (current === undefined) current = { oldLines: [], newLines: [], endOfFile: false, line: at(index) }
          else if (current.endOfFile) return error(index, `lines after "${END_OF_FILE}" in ${path}`)
          const marker = body[0] ?? " "
          const text = body.slice(1)
          if (marker !== "+") current.oldLines.push(text)
          if (marker !== "-") current.newLines.push(text)
        } else {
          return error(
            index,
            `unexpected line in the hunk for ${path}: ${JSON.stringify(body)}. Hunk lines start with " " (context), ` +
              `"-" (remove), "+" (add) or "@@"`
          )
        }
        index++
      }
      const problem = close()
      if (problem) return error(index - 1, problem)
      if (hunks.length === 0 && moveTo === undefined) return error(start, `Update File ${path} has no hunks`)
      operations.push({ type: "update", path, hunks, line: at(start), ...(moveTo !== undefined ? { moveTo } : {}) })
      continue
    }
    return error(
      index,
      `expected "${ADD.trim()}", "${DELETE.trim()}", "${UPDATE.trim()}" or "${END}", got ${JSON.stringify(line)}`
    )
  }
  if (operations.length === 0) return error(0, "the patch contains no file operations")
  return Either.right(operations)
}

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
  /** The text after the patch so far (`\n` endings), undefined when the file is (or will be) absent. */
  text: string | undefined
  shape: FileDiff.TextShape
}

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
  const after = state.text ?? ""
  const source = moves.get(file)
  const sourceText = source !== undefined && state.original === undefined ? states.get(source)?.original?.text : undefined
  const base = sourceText ?? before
  const type = state.text === undefined
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

export const make: Effect.Effect<Tool.AnyTool, never, Instance> = Effect.gen(function*() {
  const instance = yield* Instance
  const disk = yield* FileDisk.FileDisk
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

        return yield* FileLock.withLocks(files)(
          Effect.gen(function*() {
            // Everything is applied in memory first: one failing hunk changes nothing on disk.
            const states = new Map<string, FileState>()
            const stateOf = (file: string) =>
              Effect.gen(function*() {
                let state = states.get(file)
                if (state === undefined) {
                  const original = yield* load(TOOL, file)
                  state = { original, text: original?.text, shape: original?.shape ?? FileDiff.LF }
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
                  state.text = operation.content
                  summary.push({ kind: "A", file })
                  break
                }
                case "delete": {
                  if (state.text === undefined) {
                    return yield* fail(`Patch not applied: line ${operation.line}: cannot delete ${file}: file not found`)
                  }
                  state.text = undefined
                  summary.push({ kind: "D", file })
                  break
                }
                case "update": {
                  yield* yieldToEventLoop
                  if (state.text === undefined) {
                    return yield* fail(`Patch not applied: line ${operation.line}: cannot update ${file}: file not found`)
                  }
                  const applied = applyHunks(state.text, operation.hunks, file)
                  if (Either.isLeft(applied)) return yield* fail(`Patch not applied, no file was changed. ${applied.left}`)
                  if (operation.moveTo !== undefined && absolute(operation.moveTo) !== file) {
                    const target = absolute(operation.moveTo)
                    const destination = yield* stateOf(target)
                    destination.text = applied.right
                    destination.shape = state.shape
                    state.text = undefined
                    moves.set(target, file)
                    summary.push({ kind: "M", file: target })
                  } else {
                    state.text = applied.right
                    summary.push({ kind: "M", file })
                  }
                  break
                }
              }
            }

            // Only the patched lines change: new text must fit each file's encoding (see TextEncoding).
            for (const [file, state] of states) {
              const char = state.text === undefined ? undefined : TextEncoding.unencodable(state.text, state.shape.encoding)
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

            const outcome = yield* Effect.promise(() =>
              PatchWrite.writeFiles(
                disk,
                changes.map(({ file, state }) => ({
                  file,
                  bytes: state.text === undefined ? undefined : FileDiff.toBytes(state.text, state.shape),
                  original: state.original?.bytes
                }))
              )
            ).pipe(Effect.uninterruptible)
            for (const [file, mtimeMs] of outcome.mtimes) FileTimes.record(context.sessionID, file, mtimeMs)
            if (outcome._tag === "Failed") return yield* fail(failureReport(instance, outcome, changes.map((change) => change.file)))

            const lines = [...new Set(summary.map((entry) => `${entry.kind} ${relativeToWorktree(instance, entry.file)}`))]
            const names = [...new Set(summary.map((entry) => relativeToWorktree(instance, entry.file)))]
            return {
              title: names.length <= 3 ? names.join(", ") : `${names.length} files`,
              output: `Success. Updated the following files:\n${lines.join("\n")}`,
              metadata: { diff, files: metadataFiles }
            }
          })
        )
      })
  })
})
