/**
 * Snapshot benchmark (issue 10): the cost of recording each step's files on a generated git repository
 * of 10 000 files (100 directories × 100 files of ~1 KB), 10 files changed per step.
 *
 * 1. Store level: one `Snapshot.steps()` recorder, timing finish + begin around each step, for steps whose
 *    tools name their files (edit/write/apply_patch: only those files are hashed) and for steps that ran
 *    something unknown (bash, MCP, custom tools: the whole project is scanned).
 * 2. Loop level: the same session run with snapshots on and off (`snapshot: false`); the difference per step
 *    is what snapshots add to a step as the user sees it.
 * 3. Store growth per step against the bytes changed, loose and after a garbage collection (packed).
 *
 * Run after `pnpm build`: `pnpm bench:snapshot`. Targets: ≤ 20 ms per step, store growth proportional to
 * the changed bytes. BENCH_FILES and BENCH_STEPS change the sizes.
 */
import { Instance, makeAppLayer, SessionLoop, SessionStore, Snapshot } from "@agent/core"
import type { StepTouch } from "@agent/core"
import { FakeLLM, ScriptedModel, TestRuntime } from "@agent/testing"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const FILES = Number(process.env.BENCH_FILES ?? 10_000)
const STEPS = Number(process.env.BENCH_STEPS ?? 40)
const PER_STEP = 10
const DIRS = Math.max(1, Math.round(FILES / 100))

const percentile = (values: Array<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!
}
const stats = (values: Array<number>) =>
  `median ${percentile(values, 50).toFixed(1)} ms, p90 ${percentile(values, 90).toFixed(1)} ms, max ${Math.max(...values).toFixed(1)} ms`

const dirBytes = (dir: string): { apparent: number; disk: number } => {
  let apparent = 0
  let disk = 0
  const walk = (current: string) => {
    for (const entry of fs.readdirSync(current, { withFileTypes: true })) {
      const full = path.join(current, entry.name)
      if (entry.isDirectory()) walk(full)
      else {
        const stat = fs.statSync(full)
        apparent += stat.size
        disk += stat.blocks * 512
      }
    }
  }
  walk(dir)
  return { apparent, disk }
}
/** CPU milliseconds of this process (git runs in resident shells and is not counted). */
const selfCpu = () => {
  const usage = process.cpuUsage()
  return (usage.user + usage.system) / 1000
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`

const fileName = (index: number) => `src/d${index % DIRS}/file${Math.floor(index / DIRS)}.ts`

/** A sandbox with a git repository of FILES files, committed. */
const makeRepo = () => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-snapshot-")))
  const project = path.join(root, "project")
  for (let index = 0; index < FILES; index++) {
    const file = path.join(project, fileName(index))
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, `// file ${index}\n${`export const value${index} = ${index} // some source text\n`.repeat(20)}`)
  }
  fs.writeFileSync(path.join(project, ".gitignore"), "node_modules/\ndist/\n")
  const git = (...args: Array<string>) =>
    execFileSync("git", args, { cwd: project, env: { PATH: process.env.PATH, HOME: root, GIT_CONFIG_NOSYSTEM: "1" } })
  git("init", "-q")
  git("add", "-A")
  git("-c", "gc.auto=0", "-c", "user.email=bench@example.com", "-c", "user.name=bench", "commit", "-q", "-m", "generated")
  return { root, project }
}

/** Rewrites 10 files (spread over the tree) as a step would; returns the paths and bytes written. */
const mutate = (project: string, step: number) => {
  const files: Array<string> = []
  let bytes = 0
  for (let index = 0; index < PER_STEP; index++) {
    const file = path.join(project, fileName((step * 7919 + index * 997) % FILES))
    const content = fs.readFileSync(file, "utf8").replace(/ = (\d+)/, (_, n) => ` = ${Number(n) + 1}`) + `// step ${step}\n`
    fs.writeFileSync(file, content)
    files.push(file)
    bytes += Buffer.byteLength(content)
  }
  return { files, bytes }
}

const layerFor = (root: string, project: string, model: ScriptedModel, config: object = {}) => {
  fs.mkdirSync(path.join(root, "config", "agent"), { recursive: true })
  fs.writeFileSync(path.join(root, "config", "agent", "agent.json"), JSON.stringify({ permission: { "*": "allow" }, ...config }))
  return makeAppLayer({
    instance: Instance.layerWith({
      directory: project,
      home: path.join(root, "home"),
      env: {
        HOME: path.join(root, "home"),
        PATH: process.env.PATH,
        XDG_DATA_HOME: path.join(root, "data"),
        XDG_CONFIG_HOME: path.join(root, "config"),
        AGENT_MANAGED_DIR: path.join(root, "managed"),
        AGENT_DB: path.join(root, "agent.db")
      }
    }),
    providers: FakeLLM.layerModels(
      { "test/scripted": model, "test/small": TestRuntime.titleModel() },
      { defaultModel: "test/scripted", smallModel: "test/small" }
    )
  })
}

/** Store level: finish + begin per step, for one kind of step. */
const storeLevel = (kind: "paths" | "unknown") =>
  Effect.gen(function*() {
    const { root, project } = makeRepo()
    const result = yield* Effect.gen(function*() {
      const snapshot = yield* Snapshot
      const status = yield* snapshot.status()
      const first = performance.now()
      yield* snapshot.track()
      const initial = performance.now() - first
      const initialLoose = dirBytes(status.store)
      yield* Effect.sleep("4 seconds") // the store packs git's loose objects after a bulk update
      const initialPacked = dirBytes(status.store)
      yield* snapshot.gc({ grace: 0 })
      const afterInitial = dirBytes(status.store)
      const recorder = snapshot.steps()
      let start = yield* recorder.begin()
      const times: Array<number> = []
      let changedBytes = 0
      let ownCpu = 0
      for (let step = 0; step < STEPS; step++) {
        const { bytes, files } = mutate(project, step)
        changedBytes += bytes
        const touch: StepTouch = kind === "paths" ? { kind, paths: files } : { kind }
        const began = performance.now()
        const cpuBegan = selfCpu()
        const finished = yield* recorder.finish(start, touch)
        start = yield* recorder.begin()
        times.push(performance.now() - began)
        ownCpu += selfCpu() - cpuBegan
        if (finished?.patch?.files.length !== PER_STEP) throw new Error(`step ${step}: expected ${PER_STEP} changed files, got ${finished?.patch?.files.length}`)
      }
      yield* Effect.sleep("1500 millis") // let the background stat-cache update finish before measuring
      yield* snapshot.read([]) // and every queued object reach the disk
      const afterSteps = dirBytes(status.store)
      yield* snapshot.gc({ grace: 0 })
      const packed = dirBytes(status.store)
      return { initial, initialLoose, initialPacked, afterInitial, afterSteps, packed, times, changedBytes, ownCpu: ownCpu / STEPS }
    }).pipe(Effect.provide(layerFor(root, project, ScriptedModel.make([]))), Effect.scoped)
    fs.rmSync(root, { recursive: true, force: true })
    return result
  })

/** Loop level: a session whose every step rewrites 10 files (with bash, or with 10 write calls), snapshots on or off. */
const loopLevel = (snapshots: boolean, via: "bash" | "write") =>
  Effect.gen(function*() {
    const { root, project } = makeRepo()
    const stepTimes: Array<number> = []
    let last = 0
    const model = ScriptedModel.make(
      Array.from({ length: STEPS + 1 }, (_, step) => () => {
        const now = performance.now()
        if (last) stepTimes.push(now - last)
        last = now
        if (step === STEPS) return "done"
        const files = Array.from({ length: PER_STEP }, (_, index) => fileName((step * 7919 + index * 997) % FILES))
        if (via === "write") {
          return files.map((file) => ScriptedModel.toolCall("write", { filePath: file, content: `// rewritten at step ${step}\n${"x".repeat(1000)}\n` }))
        }
        return [ScriptedModel.toolCall("bash", { command: files.map((file) => `echo '// step ${step}' >> ${file}`).join(" && "), description: "edit" })]
      })
    )
    const outcome = yield* Effect.gen(function*() {
      const session = yield* (yield* SessionStore).create({ title: "bench" })
      return yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }] })
    }).pipe(Effect.provide(layerFor(root, project, model, snapshots ? {} : { snapshot: false })), Effect.scoped)
    fs.rmSync(root, { recursive: true, force: true })
    if (outcome.reason !== "completed") throw new Error(`run ended with ${outcome.reason}`)
    // Between model calls: the step's tools, then its snapshot; the first interval is left out.
    return stepTimes.slice(1)
  })

const program = Effect.gen(function*() {
  console.log(`machine: ${os.cpus().length} cores, load average ${os.loadavg().map((n) => n.toFixed(1)).join(" ")}`)
  console.log(`repository: ${FILES} files in ${DIRS} directories, ${PER_STEP} files changed per step, ${STEPS} steps\n`)
  const kinds = (process.env.BENCH_KINDS ?? "paths,unknown").split(",").filter((kind): kind is "paths" | "unknown" => kind === "paths" || kind === "unknown")
  for (const kind of kinds) {
    const run = yield* storeLevel(kind)
    const label = kind === "paths" ? "steps whose tools name their files (edit, write, apply_patch)" : "steps that ran bash / MCP / custom tools (full scan)"
    console.log(`store level, ${label}:`)
    console.log(`  per step (finish + next begin): ${stats(run.times)}   [target ≤ 20 ms]`)
    console.log(`  CPU per step in the runtime's own process: ${run.ownCpu.toFixed(1)} ms (git's own work not included)`)
    const loose = run.afterSteps.apparent - run.afterInitial.apparent
    const packed = run.packed.apparent - run.afterInitial.apparent
    console.log(
      `  first snapshot of the project: ${run.initial.toFixed(0)} ms; store ${kb(run.initialLoose.apparent)} ` +
        `(${kb(run.initialLoose.disk)} on disk), ${kb(run.initialPacked.disk)} on disk once packed in the background`
    )
    console.log(`  changed per step: ${kb(run.changedBytes / STEPS)} (${PER_STEP} files, rewritten whole)`)
    console.log(
      `  store growth per step: ${kb(loose / STEPS)} loose (${kb((run.afterSteps.disk - run.afterInitial.disk) / STEPS)} on disk, ` +
        `one loose object per file and changed directory), ${kb(packed / STEPS)} once packed by garbage collection`
    )
    console.log(`  ratio store growth / changed bytes: ${(loose / run.changedBytes).toFixed(2)} loose, ${(packed / run.changedBytes).toFixed(2)} packed\n`)
  }
  if (process.env.BENCH_LOOP === "0") return
  for (const via of ["write", "bash"] as const) {
    // On and off alternate, so that a change in the machine's load hits both.
    const on: Array<number> = []
    const off: Array<number> = []
    for (let round = 0; round < 2; round++) {
      on.push(...(yield* loopLevel(true, via)))
      off.push(...(yield* loopLevel(false, via)))
    }
    const added = percentile(on, 50) - percentile(off, 50)
    console.log(`loop level, every step rewrites 10 files with ${via === "write" ? "10 write calls" : "one bash command"} (scripted model answers at once):`)
    console.log(`  snapshots on:  whole step ${stats(on)}`)
    console.log(`  snapshots off: whole step ${stats(off)}`)
    console.log(`  added per step by snapshots (difference of medians): ${added.toFixed(1)} ms   [target ≤ 20 ms]\n`)
  }
})

Effect.runPromise(program).catch((error) => {
  console.error(error)
  process.exit(1)
})
