/**
 * Snapshot benchmark (issue 10): the cost of recording each step's files on a generated git repository
 * of 10 000 files (100 directories × 100 files of ~1 KB), 10 files changed per step.
 *
 * 1. Store level: one `Snapshot.steps()` recorder, timing finish + begin around each step, for steps whose
 *    tools name their files (edit/write/apply_patch: only those files are hashed), and for steps that ran
 *    something unknown (bash, MCP, custom tools) with the project's directories watched (only the paths that
 *    changed are looked at) and without (`snapshot_store.watch: false`: every file is stated).
 * 2. Loop level: the same session run with snapshots on (watched, and for bash steps also with
 *    `snapshot_store.watch: false`) and off (`snapshot: false`), alternating; the difference of the medians
 *    is what snapshots add to a step as the user sees it. The snapshot calls the loop makes are timed too
 *    (the Snapshot service is wrapped), which is steadier on a busy machine.
 * 3. Store growth per step against the bytes changed: loose (as written), and packed (the step snapshots'
 *    new objects as `git pack-objects` stores them, which is what a garbage collection leaves).
 *
 * Run after `pnpm build`: `pnpm bench:snapshot`. Targets: ≤ 20 ms per step, store growth proportional to
 * the changed bytes. BENCH_FILES, BENCH_STEPS, BENCH_ROUNDS change the sizes; BENCH_KINDS (paths, watched,
 * full) and BENCH_LOOP=0 pick parts.
 */
import { Instance, makeAppLayer, SessionLoop, SessionStore, Snapshot } from "@agent/core"
import type { StepTouch } from "@agent/core"
import { FakeLLM, ScriptedModel, TestRuntime } from "@agent/testing"
import { Effect, Layer } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const FILES = Number(process.env.BENCH_FILES ?? 10_000)
const STEPS = Number(process.env.BENCH_STEPS ?? 40)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4)
const PER_STEP = 10
const DIRS = Math.max(1, Math.round(FILES / 100))
const TARGET = "[target ≤ 20 ms]"

const percentile = (values: Array<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!
}
const median = (values: Array<number>) => percentile(values, 50)
const stats = (values: Array<number>) =>
  `median ${median(values).toFixed(1)} ms, p90 ${percentile(values, 90).toFixed(1)} ms, max ${Math.max(...values).toFixed(1)} ms`

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

/** The runtime over `project`, with its own config and database under `state` (and its data there too, unless given). */
const layerFor = (
  state: string,
  project: string,
  model: ScriptedModel,
  config: object = {},
  snapshot?: Layer.Layer<Snapshot, never, any>,
  data = path.join(state, "data")
) => {
  fs.mkdirSync(path.join(state, "config", "agent"), { recursive: true })
  fs.writeFileSync(path.join(state, "config", "agent", "agent.json"), JSON.stringify({ permission: { "*": "allow" }, ...config }))
  return makeAppLayer({
    instance: Instance.layerWith({
      directory: project,
      home: path.join(state, "home"),
      env: {
        HOME: path.join(state, "home"),
        PATH: process.env.PATH,
        XDG_DATA_HOME: data,
        XDG_CONFIG_HOME: path.join(state, "config"),
        AGENT_MANAGED_DIR: path.join(state, "managed"),
        AGENT_DB: path.join(state, "agent.db")
      }
    }),
    providers: FakeLLM.layerModels(
      { "test/scripted": model, "test/small": TestRuntime.titleModel() },
      { defaultModel: "test/scripted", smallModel: "test/small" }
    ),
    ...(snapshot ? { snapshot } : {})
  })
}

/** The size of the objects the given snapshots add to `base`, packed as git packs them (deltas against the rest allowed). */
const packedGrowth = (store: string, base: string, snapshots: ReadonlyArray<string>) =>
  execFileSync("git", ["pack-objects", "--revs", "--thin", "--stdout", "-q"], {
    input: `${snapshots.join("\n")}\n^${base}\n`,
    env: { PATH: process.env.PATH, GIT_DIR: store, GIT_CONFIG_NOSYSTEM: "1", HOME: "/nonexistent" },
    maxBuffer: 1024 * 1024 * 1024
  }).length

type StoreKind = "paths" | "watched" | "full"

/** Store level: finish + begin per step, for one kind of step. */
const storeLevel = (root: string, project: string, kind: StoreKind) =>
  Effect.gen(function*() {
    const state = path.join(root, `state-${kind}`)
    const result = yield* Effect.gen(function*() {
      const snapshot = yield* Snapshot
      const status = yield* snapshot.status()
      const first = performance.now()
      const initialId = (yield* snapshot.track())!
      const initial = performance.now() - first
      yield* Effect.sleep("4 seconds") // the store packs git's loose objects after a bulk update
      yield* snapshot.read([]) // every queued object on disk
      const afterInitial = dirBytes(status.store)
      const recorder = snapshot.steps()
      let start = yield* recorder.begin()
      const times: Array<number> = []
      const ids: Array<string> = []
      let changedBytes = 0
      let ownCpu = 0
      for (let step = 0; step < STEPS; step++) {
        const { bytes, files } = mutate(project, step)
        changedBytes += bytes
        const touch: StepTouch = kind === "paths" ? { kind, paths: files } : { kind: "unknown" }
        const began = performance.now()
        const cpuBegan = selfCpu()
        const finished = yield* recorder.finish(start, touch)
        start = yield* recorder.begin()
        times.push(performance.now() - began)
        ownCpu += selfCpu() - cpuBegan
        if (finished?.patch?.files.length !== PER_STEP) throw new Error(`step ${step}: expected ${PER_STEP} changed files, got ${finished?.patch?.files.length}`)
        ids.push(finished.snapshot)
      }
      yield* Effect.sleep("1500 millis") // let the background stat-cache update finish before measuring
      yield* snapshot.read([]) // and every queued object reach the disk
      const afterSteps = dirBytes(status.store)
      const packed = packedGrowth(status.store, initialId, ids)
      return { initial, afterInitial, afterSteps, packed, times, changedBytes, ownCpu: ownCpu / STEPS }
    }).pipe(
      Effect.provide(layerFor(state, project, ScriptedModel.make([]), kind === "full" ? { snapshot_store: { watch: false } } : {})),
      Effect.scoped
    )
    fs.rmSync(state, { recursive: true, force: true })
    return result
  })

/** The real Snapshot service, with the time of each step's finish and the next step's begin recorded (a run's first begin apart). */
const timedSnapshot = (perStep: Array<number>, firstBegins: Array<number>) =>
  Layer.effect(
    Snapshot,
    Effect.gen(function*() {
      const inner = yield* Snapshot
      return {
        ...inner,
        steps: () => {
          const recorder = inner.steps()
          let pending: number | undefined
          let first = true
          const timed = <A>(effect: Effect.Effect<A>) =>
            Effect.suspend(() => {
              const began = performance.now()
              return Effect.map(effect, (value) => [value, performance.now() - began] as const)
            })
          return {
            begin: () =>
              Effect.map(timed(recorder.begin()), ([value, took]) => {
                if (first) firstBegins.push(took)
                else if (pending !== undefined) perStep.push(pending + took)
                first = false
                pending = undefined
                return value
              }),
            finish: (start, touch) =>
              Effect.map(timed(recorder.finish(start, touch)), ([value, took]) => {
                pending = took
                return value
              }),
            failed: recorder.failed
          }
        }
      }
    })
  ).pipe(Layer.provide(Snapshot.layer))

type LoopMode = "watched" | "full" | "off"

/** The config of each mode: snapshots with watches, snapshots that state every file after bash, no snapshots. */
const loopConfig: Record<LoopMode, object> = { watched: {}, full: { snapshot_store: { watch: false } }, off: { snapshot: false } }

/** Loop level: a session whose every step rewrites 10 files (with bash, or with 10 write calls), in one mode. */
const loopLevel = (
  root: string,
  project: string,
  run: number,
  mode: LoopMode,
  via: "bash" | "write",
  snapshotTimes: Array<number>,
  firstBegins: Array<number>
) =>
  Effect.gen(function*() {
    const state = path.join(root, `loop-${run}`)
    const stepTimes: Array<number> = []
    let last = 0
    const model = ScriptedModel.make(
      Array.from({ length: STEPS + 1 }, (_, step) => () => {
        const now = performance.now()
        if (last) stepTimes.push(now - last)
        last = now
        if (step === STEPS) return "done"
        const files = Array.from({ length: PER_STEP }, (_, index) => fileName((step * 7919 + index * 997 + run) % FILES))
        if (via === "write") {
          return files.map((file) => ScriptedModel.toolCall("write", { filePath: file, content: `// rewritten at step ${step} of run ${run}\n${"x".repeat(1000)}\n` }))
        }
        return [ScriptedModel.toolCall("bash", { command: files.map((file) => `echo '// step ${step}' >> ${file}`).join(" && "), description: "edit" })]
      })
    )
    const outcome = yield* Effect.gen(function*() {
      const session = yield* (yield* SessionStore).create({ title: "bench" })
      return yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }] })
    }).pipe(
      Effect.provide(
        // Runs with snapshots share one store, as a user's runs in a project do.
        layerFor(state, project, model, loopConfig[mode], mode === "off" ? undefined : timedSnapshot(snapshotTimes, firstBegins), path.join(root, "data"))
      ),
      Effect.scoped
    )
    fs.rmSync(state, { recursive: true, force: true })
    if (outcome.reason !== "completed") throw new Error(`run ended with ${outcome.reason}`)
    // Between model calls: the step's tools, then its snapshot; the first interval (the run's first scan) is left out.
    return stepTimes.slice(1)
  })

const program = Effect.gen(function*() {
  console.log(`machine: ${os.cpus().length} cores, load average ${os.loadavg().map((n) => n.toFixed(1)).join(" ")}`)
  console.log(`repository: ${FILES} files in ${DIRS} directories, ${PER_STEP} files changed per step, ${STEPS} steps\n`)
  const kinds = (process.env.BENCH_KINDS ?? "paths,watched,full").split(",").filter((kind): kind is StoreKind =>
    kind === "paths" || kind === "watched" || kind === "full"
  )
  const labels: Record<StoreKind, string> = {
    paths: "steps whose tools name their files (edit, write, apply_patch): those files are hashed",
    watched: "steps that ran bash / MCP / custom tools, directories watched: the changed paths are looked at",
    full: "steps that ran bash / MCP / custom tools, snapshot_store.watch false: every file is stated (the earlier design)"
  }
  if (kinds.length > 0) {
    const { project, root } = makeRepo()
    for (const kind of kinds) {
      const run = yield* storeLevel(root, project, kind)
      console.log(`store level, ${labels[kind]}:`)
      console.log(`  snapshot time per step (finish + next begin): ${stats(run.times)}   ${TARGET}`)
      console.log(`  CPU per step in the runtime's own process: ${run.ownCpu.toFixed(1)} ms (git's own work not included)`)
      const loose = run.afterSteps.apparent - run.afterInitial.apparent
      console.log(`  first snapshot of the project: ${run.initial.toFixed(0)} ms; store ${kb(run.afterInitial.apparent)} (${kb(run.afterInitial.disk)} on disk)`)
      console.log(`  changed per step: ${kb(run.changedBytes / STEPS)} (${PER_STEP} files, rewritten whole)`)
      console.log(
        `  store growth per step: ${kb(loose / STEPS)} loose (${kb((run.afterSteps.disk - run.afterInitial.disk) / STEPS)} on disk: ` +
          `one object per changed file and changed directory), ${kb(run.packed / STEPS)} packed`
      )
      console.log(`  ratio store growth / changed bytes: ${(loose / run.changedBytes).toFixed(2)} loose, ${(run.packed / run.changedBytes).toFixed(2)} packed\n`)
    }
    fs.rmSync(root, { recursive: true, force: true })
  }
  if (process.env.BENCH_LOOP === "0") return
  for (const via of ["write", "bash"] as const) {
    const { project, root } = makeRepo()
    // Runs without snapshots get a copy of their own: what they change is no part of the others' next first scan.
    const plain = makeRepo()
    // Steps with write calls never scan: the watches change nothing for them.
    const modes: Array<LoopMode> = via === "bash" ? ["watched", "full", "off"] : ["watched", "off"]
    const steps: Record<LoopMode, Array<number>> = { watched: [], full: [], off: [] }
    const inLoop: Record<LoopMode, Array<number>> = { watched: [], full: [], off: [] }
    const perRound: Array<string> = []
    const firstBegins: Record<LoopMode, Array<number>> = { watched: [], full: [], off: [] }
    // A first run makes the project's store (and packs it in the background): not measured.
    yield* loopLevel(root, project, 0, "watched", via, [], [])
    yield* Effect.sleep("5 seconds")
    let run = 1
    // The modes alternate, so that a change in the machine's load hits each of them.
    for (let round = 0; round < ROUNDS; round++) {
      const medians: Partial<Record<LoopMode, number>> = {}
      for (const mode of modes) {
        const times = mode === "off"
          ? yield* loopLevel(plain.root, plain.project, run++, mode, via, [], [])
          : yield* loopLevel(root, project, run++, mode, via, inLoop[mode], firstBegins[mode])
        steps[mode].push(...times)
        medians[mode] = median(times)
      }
      perRound.push(modes.filter((mode) => mode !== "off").map((mode) => `${mode} ${(medians[mode]! - medians.off!).toFixed(1)}`).join(", "))
    }
    fs.rmSync(root, { recursive: true, force: true })
    fs.rmSync(plain.root, { recursive: true, force: true })
    console.log(
      `loop level, every step rewrites 10 files with ${via === "write" ? "10 write calls" : "one bash command"} ` +
        `(scripted model answers at once; ${ROUNDS} rounds, the store made by an earlier run):`
    )
    console.log(`  snapshots off:            whole step ${stats(steps.off)}`)
    for (const mode of modes) {
      if (mode === "off") continue
      const label = mode === "watched" ? "snapshots on, watched:" : "snapshots on, watch off:"
      console.log(`  ${label.padEnd(25)} whole step ${stats(steps[mode])}`)
      console.log(`    added per step (difference of medians): ${(median(steps[mode]) - median(steps.off)).toFixed(1)} ms   ${TARGET}`)
      console.log(`    snapshot calls inside the loop (finish + next begin): ${stats(inLoop[mode])}   ${TARGET}`)
      console.log(`    a run's first begin (the whole project stated${mode === "watched" ? ", directories watched" : ""}): ${stats(firstBegins[mode])}`)
    }
    console.log(`  added per step, round by round (ms): ${perRound.join(" | ")}\n`)
  }
})

Effect.runPromise(program).catch((error) => {
  console.error(error)
  process.exit(1)
})
