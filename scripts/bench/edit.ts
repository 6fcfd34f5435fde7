/**
 * Edit benchmark: the edit tool's replaceAll of 34 000 matches in a 1.6 MB file (one per line),
 * as the model calls it (read, match, diff, atomic write), with the CPU it takes and the longest
 * the event loop waited meanwhile (a timer ticking every 5 ms); then its parts alone: the match
 * cascade, the diff shown to the user, the session diff's line count; a fuzzy block-anchor search
 * whose first and last lines are everywhere; an edit whose oldString is nowhere, so every fuzzy
 * strategy runs over the file; and apply_patch with 500 hunks on the same file, exact and typed
 * with ASCII quotes for the file's curly ones (every hunk found by the last, folding pass).
 * Median and min of several runs. Runs on the TypeScript sources, no build needed:
 * `pnpm bench:edit`. Options (env): BENCH_RUNS (default 5), BENCH_LINES (default 34000).
 *
 * Before the fix (same machine): the edit did not finish in 240 s with the loop blocked all along
 * (jsdiff's Myers diff of 68 000 changed lines; the session diff's count alone took 50 s of CPU).
 */
import { Agent, type MessageID, type SessionID } from "@agent/domain"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Instance, makeInstanceInfo } from "../../packages/core/src/runtime/Instance.js"
import type * as Tool from "../../packages/core/src/tool/Tool.js"
import * as ApplyPatch from "../../packages/core/src/tools/ApplyPatch.js"
import * as Edit from "../../packages/core/src/tools/Edit.js"
import * as EditMatch from "../../packages/core/src/tool/EditMatch.js"
import * as FileDiff from "../../packages/core/src/tool/FileDiff.js"
import * as LineDiff from "../../packages/core/src/tool/LineDiff.js"

const RUNS = Number(process.env.BENCH_RUNS ?? 5)
const LINES = Number(process.env.BENCH_LINES ?? 34_000)

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

/** A tool context that allows everything; a new session each call (a run rewrites the file another run's session saw). */
let sessions = 0
const context = (): Tool.ToolContext => ({
  sessionID: `ses_bench_${sessions++}` as SessionID,
  messageID: "msg_bench" as MessageID,
  callID: "call_bench",
  agent: new Agent({ name: "build", mode: "primary", native: true, permission: [], options: {} }),
  abort: new AbortController().signal,
  ask: () => Effect.void,
  rules: [],
  metadata: () => Effect.void
})

interface Sample {
  readonly wall: number
  readonly cpu: number
  /** The longest wait between two ticks of a 5 ms timer. */
  readonly gap: number
}

/** Wall and CPU time of `run`, and the longest stall of the event loop while it ran. */
const sample = async (run: () => Promise<unknown>): Promise<Sample> => {
  let last = performance.now()
  let gap = 0
  const timer = setInterval(() => {
    const now = performance.now()
    gap = Math.max(gap, now - last)
    last = now
  }, 5)
  const cpu = process.cpuUsage()
  const start = performance.now()
  await run()
  const wall = performance.now() - start
  const used = process.cpuUsage(cpu)
  clearInterval(timer)
  gap = Math.max(gap, performance.now() - last)
  return { wall, cpu: (used.user + used.system) / 1000, gap }
}

const measure = async (name: string, prepare: () => void, run: () => Promise<unknown>) => {
  prepare()
  await run() // warm-up
  const samples: Array<Sample> = []
  for (let i = 0; i < RUNS; i++) {
    prepare()
    samples.push(await sample(run))
  }
  return {
    case: name,
    "median ms": median(samples.map((s) => s.wall)).toFixed(0),
    "min ms": Math.min(...samples.map((s) => s.wall)).toFixed(0),
    "median CPU ms": median(samples.map((s) => s.cpu)).toFixed(0),
    "longest loop stall ms": Math.max(...samples.map((s) => s.gap)).toFixed(0)
  }
}

const main = async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-edit-"))
  const file = path.join(root, "big.ts")
  const original = Array.from({ length: LINES }, (_, i) => `const value${i} = computeOldName(input${i}) // x`).join("\n") + "\n"
  const replaced = original.replaceAll("computeOldName", "computeNewName")
  console.log(`${LINES} lines, ${(original.length / 1e6).toFixed(2)} MB, in ${root}`)
  const instance = makeInstanceInfo({ directory: root })
  const [edit, patch] = await Effect.runPromise(Effect.all([Edit.make, ApplyPatch.make]).pipe(Effect.provideService(Instance, instance)))
  const reset = () => fs.writeFileSync(file, original)
  const nothing = () => undefined

  const every500 = Array.from({ length: Math.floor(LINES / 68) }, (_, i) => i * 68 + 7)
  const patchText = [
    "*** Begin Patch",
    "*** Update File: big.ts",
    ...every500.flatMap((line) => ["@@", `-const value${line} = computeOldName(input${line}) // x`, `+const value${line} = patched(input${line})`]),
    "*** End Patch"
  ].join("\n")
  // The same file with curly quotes; the patch types them as ASCII.
  const curly = original.replaceAll("(input", "(\u201Cinput").replaceAll(") // x", "\u201D) // x")
  const foldedPatchText = [
    "*** Begin Patch",
    "*** Update File: big.ts",
    ...every500.flatMap((line) => ["@@", `-const value${line} = computeOldName("input${line}") // x`, `+const value${line} = patched(input${line})`]),
    "*** End Patch"
  ].join("\n")
  const missing = ["const value7 = computeOldName(input7) // x", "  somethingThatIsNowhere()", "const value9 = computeOldName(input9) // y"].join("\n")
  const anchorContent = Array.from({ length: LINES }, (_, i) => (i % 3 === 0 ? "}" : `  stmt ${i}`)).join("\n")
  const anchorSearch = ["}", ...Array.from({ length: 100 }, (_, i) => `  other ${i}`), "}"].join("\n")

  const rows = [
    await measure("edit tool: replaceAll, 34 000 matches", reset, async () => {
      await Effect.runPromise(edit.execute({ filePath: file, oldString: "computeOldName", newString: "computeNewName", replaceAll: true }, context()))
      if (fs.readFileSync(file, "utf8") !== replaced) throw new Error("wrong result")
    }),
    await measure("EditMatch.replace (replaceAll)", nothing, async () => EditMatch.replace(original, "computeOldName", "computeNewName", true)),
    await measure("FileDiff.compare (diff shown)", nothing, async () => FileDiff.compare(file, original, replaced)),
    await measure("LineDiff.count (session diff)", nothing, async () => LineDiff.count(original, replaced)),
    await measure("block-anchor, '}' everywhere", nothing, async () => EditMatch.blockAnchor.find(anchorContent, anchorSearch)),
    await measure("edit tool: oldString nowhere (every fuzzy strategy)", reset, async () => {
      const exit = await Effect.runPromiseExit(edit.execute({ filePath: file, oldString: missing, newString: "x" }, context()))
      if (exit._tag !== "Failure") throw new Error("expected no match")
    }),
    await measure(`apply_patch tool: ${every500.length} hunks`, reset, async () => {
      await Effect.runPromise(patch.execute({ patchText }, context()))
    }),
    await measure(`apply_patch tool: ${every500.length} hunks, quotes folded`, () => fs.writeFileSync(file, curly), async () => {
      await Effect.runPromise(patch.execute({ patchText: foldedPatchText }, context()))
      if (!fs.readFileSync(file, "utf8").includes("const value7 = patched(input7)")) throw new Error("wrong result")
    })
  ]
  console.table(rows)
  fs.rmSync(root, { recursive: true, force: true })
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
