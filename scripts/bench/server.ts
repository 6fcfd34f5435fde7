/**
 * Server benchmark: 50 sessions prompted at once through the HTTP API of a real `agent serve`
 * process, each running 20 scripted steps (19 `read` calls and a final answer) from the
 * project's scripted OpenAI-compatible server, watched through one SSE stream. Two runs:
 *
 * 1. The model answers at once: the 50 sessions keep the server busy all the time, so this
 *    gives the throughput, the server's CPU per step and its peak RSS; a step's time here is
 *    mostly waiting for the other 49 sessions' steps.
 * 2. Every model call takes BENCH_MODEL_MS (default 2000 ms, a fast model's tool-calling
 *    step): the per-step overhead is measured at the model boundary, as in compare.ts, from
 *    the end of one model answer to the arrival of the session's next model call (the tool
 *    call, the store, the event stream, the server's handling, and any wait for the other
 *    sessions' work). All 50 sessions start together and every call takes the same time, so
 *    their steps stay in lockstep: 50 steps arrive in the same millisecond, every time.
 * 3. As 2, with each model call taking between half and one and a half BENCH_MODEL_MS (uniform,
 *    from a fixed seed), as model calls do: the sessions drift apart after their first answers
 *    and a step waits only for the work that happens to arrive with it.
 *
 * 4. Soak: one server, BENCH_SOAK_ROUNDS (default 30) rounds of BENCH_SOAK_SESSIONS (20) new
 *    sessions × BENCH_SOAK_STEPS (50) steps, the model answering at once; after each round the
 *    server's RSS (from /proc: anonymous, file-backed, shared) and its JS breakdown (heap,
 *    external, array buffers, from `GET /global/memory`). A server that leaks grows every round.
 *
 * Run after `pnpm build`: `pnpm bench:server`; BENCH_PHASES=soak (or busy,paced,varied in any
 * combination) runs only those phases. Targets (issue 9): p99 ≤ 50 ms per step, peak RSS of the
 * server ≤ 400 MiB; the soak's RSS levels off under 400 MiB.
 */
import { MockOpenAIServer } from "@agent/testing"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { modelProxy } from "./ModelProxy.js"
import { cpuMsOf, runSessions, startServe, statusOf, turn } from "./ServeProcess.js"

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 50)
const STEPS = Number(process.env.BENCH_STEPS ?? 20)
const PHASES = new Set((process.env.BENCH_PHASES ?? "busy,paced,varied,soak").split(",").map((name) => name.trim()))

const percentile = (values: Array<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!
}
const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(0)

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-server-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** One run: a fresh server, SESSIONS sessions prompted at once, each model call held for `delayOf()` ms. */
const phase = (delayOf: () => number) =>
  Effect.scoped(Effect.gen(function*() {
    const dir = yield* tempDir
    const model = yield* MockOpenAIServer.start(Array.from({ length: SESSIONS * (STEPS + 1) + 100 }, () => turn(STEPS)))
    // Tool-calling requests (not the title's), by the session marker in their prompt.
    const proxy = yield* modelProxy(model.url, ({ body }) => {
      const marker = /bench-session-(\d+)/.exec(body)
      return marker && body.includes('"tools":') ? Number(marker[1]) : undefined
    }, delayOf)
    const server = yield* startServe(dir, proxy.url)
    const cpuBefore = cpuMsOf(server.pid)
    const result = yield* Effect.promise(() => runSessions(server.url, { sessions: SESSIONS, steps: STEPS }))
    const serverCpu = cpuMsOf(server.pid) - cpuBefore
    // From the end of one model answer to the session's next model call.
    const overhead: Array<number> = []
    for (let session = 0; session < SESSIONS; session++) {
      const calls = proxy.calls.filter((call) => call.tag === session)
      if (calls.length !== STEPS) throw new Error(`session ${session} made ${calls.length} model calls, expected ${STEPS}`)
      for (let index = 1; index < calls.length; index++) overhead.push(calls[index]!.arrived - calls[index - 1]!.answered)
    }
    const peakRss = statusOf(server.pid).peakRss
    yield* Effect.promise(server.stop)
    return { ...result, serverCpu, overhead, peakRss }
  }))

interface SoakRound {
  readonly wall: number
  /** The server's CPU time (user + system) in the round, ms. */
  readonly cpu: number
  readonly status: ReturnType<typeof statusOf>
  readonly database: { readonly db: number; readonly wal: number }
  readonly js: { rss: number; heapTotal: number; heapUsed: number; external: number; arrayBuffers: number }
}

/**
 * One server through `rounds` rounds of `sessions` new sessions × `steps` steps, printing its
 * memory after each. Each round has a scripted model of its own (the mock keeps every request
 * it answers), reached through one proxy, since the server's config names one URL.
 */
const soak = (rounds: number, sessions: number, steps: number) =>
  Effect.scoped(Effect.gen(function*() {
    const dir = yield* tempDir
    let modelUrl = ""
    const proxy = yield* modelProxy(() => modelUrl, () => undefined)
    // BENCH_SOAK_HEAP_SNAPSHOTS=2,30: the server's heap (what is live: V8 collects first) after those rounds.
    const snapshotRounds = new Set((process.env.BENCH_SOAK_HEAP_SNAPSHOTS ?? "").split(",").filter(Boolean).map(Number))
    const snapshots = snapshotRounds.size > 0 ? fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-heap-")) : undefined
    const server = yield* startServe(dir, proxy.url, {
      nodeArgs: snapshots ? ["--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${snapshots}`] : []
    })
    const results: Array<SoakRound> = []
    const columns = ["round", "wall s", "CPU s", "RSS", "anon", "file", "shmem", "heap used", "heap total", "external", "arrayBuf", "threads", "db", "wal"]
    console.log(`  ${columns.map((name) => name.padStart(11)).join("")}   (MiB)`)
    const row = (label: string, round: SoakRound) =>
      console.log(`  ${[
        label,
        (round.wall / 1000).toFixed(1),
        (round.cpu / 1000).toFixed(1),
        mib(round.status.rss),
        mib(round.status.anon),
        mib(round.status.file),
        mib(round.status.shmem),
        mib(round.js.heapUsed),
        mib(round.js.heapTotal),
        mib(round.js.external),
        mib(round.js.arrayBuffers),
        String(round.status.threads),
        mib(round.database.db),
        mib(round.database.wal)
      ].map((cell) => cell.padStart(11)).join("")}`)
    row("start", { wall: 0, cpu: cpuMsOf(server.pid), status: statusOf(server.pid), database: server.database(), js: yield* Effect.promise(server.memory) })
    for (let round = 0; round < rounds; round++) {
      const cpuBefore = cpuMsOf(server.pid)
      const run = yield* Effect.scoped(Effect.gen(function*() {
        const model = yield* MockOpenAIServer.start(Array.from({ length: sessions * (steps + 1) + 10 }, () => turn(steps)))
        modelUrl = model.url
        return yield* Effect.promise(() => runSessions(server.url, { sessions, steps, first: round * sessions }))
      }))
      const result = { wall: run.wall, cpu: cpuMsOf(server.pid) - cpuBefore, status: statusOf(server.pid), database: server.database(), js: yield* Effect.promise(server.memory) }
      results.push(result)
      row(String(round + 1), result)
      if (snapshots && snapshotRounds.has(round + 1)) console.log(`  heap snapshot: ${yield* Effect.promise(() => server.heapSnapshot(snapshots))}`)
    }
    const peakRss = statusOf(server.pid).peakRss
    yield* Effect.promise(server.stop)
    return { results, peakRss }
  }))

const program = Effect.gen(function*() {
  const steps = SESSIONS * STEPS
  const line = (values: Array<number>) => `p50 ${percentile(values, 50).toFixed(1)} ms, p99 ${percentile(values, 99).toFixed(1)} ms`

  if (PHASES.has("busy")) {
    const busy = yield* phase(() => 0)
    console.log(`${SESSIONS} sessions × ${STEPS} steps through HTTP + SSE, the model answering at once`)
    console.log(`  (${busy.events} events, ${(busy.bytes / 1024 / 1024).toFixed(1)} MB streamed)`)
    console.log(`  wall time:   ${busy.wall.toFixed(0)} ms, throughput ${(steps / (busy.wall / 1000)).toFixed(0)} steps/s`)
    console.log(`  server CPU per step: ${(busy.serverCpu / steps).toFixed(1)} ms (user + system)`)
    console.log(`  a step's time, all sessions interleaved: ${line(busy.perStep)} (mostly waiting for the other ${SESSIONS - 1} sessions)`)
    console.log(`  peak RSS of the server: ${mib(busy.peakRss)} MiB   [target ≤ 400 MiB]`)
  }

  const delayMs = Number(process.env.BENCH_MODEL_MS ?? 2000)
  if (delayMs > 0 && PHASES.has("paced")) {
    const paced = yield* phase(() => delayMs)
    console.log(`${SESSIONS} sessions × ${STEPS} steps, every model call taking ${delayMs} ms (the sessions in lockstep)`)
    console.log(`  wall time:   ${paced.wall.toFixed(0)} ms; server CPU per step ${(paced.serverCpu / steps).toFixed(1)} ms`)
    console.log(`  per-step overhead (model answer → next model call): ${line(paced.overhead)}   [target p99 ≤ 50 ms]`)
    console.log(`  peak RSS of the server: ${mib(paced.peakRss)} MiB`)
  }

  if (delayMs > 0 && PHASES.has("varied")) {
    // mulberry32: the same sequence of model latencies in every run.
    let seed = 0x5eed
    const random = () => {
      seed = (seed + 0x6d2b79f5) | 0
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296
    }
    const varied = yield* phase(() => delayMs * (0.5 + random()))
    console.log(`${SESSIONS} sessions × ${STEPS} steps, each model call taking ${delayMs / 2}–${(delayMs * 3) / 2} ms (uniform, fixed seed)`)
    console.log(`  wall time:   ${varied.wall.toFixed(0)} ms; server CPU per step ${(varied.serverCpu / steps).toFixed(1)} ms`)
    console.log(`  per-step overhead (model answer → next model call): ${line(varied.overhead)}   [target p99 ≤ 50 ms]`)
    console.log(`  peak RSS of the server: ${mib(varied.peakRss)} MiB`)
  }

  if (PHASES.has("soak")) {
    const rounds = Number(process.env.BENCH_SOAK_ROUNDS ?? 30)
    const sessions = Number(process.env.BENCH_SOAK_SESSIONS ?? 20)
    const soakSteps = Number(process.env.BENCH_SOAK_STEPS ?? 50)
    console.log(`soak: one server, ${rounds} rounds of ${sessions} new sessions × ${soakSteps} steps, the model answering at once`)
    const { results, peakRss } = yield* soak(rounds, sessions, soakSteps)
    const rss = results.map((round) => round.status.rss)
    const list = (values: Array<number>) => values.map(mib).join(" ")
    const tail = rss.slice(-Math.min(10, Math.floor(rss.length / 2)))
    console.log(`  RSS per round, first 5: ${list(rss.slice(0, 5))} MiB; last 5: ${list(rss.slice(-5))} MiB`)
    console.log(`  last ${tail.length} rounds: ${mib(Math.min(...tail))}–${mib(Math.max(...tail))} MiB, ${((tail.at(-1)! - tail[0]!) / 1024 / 1024 / Math.max(1, tail.length - 1)).toFixed(1)} MiB per round   [target: level, under 400 MiB]`)
    const cpu = results.reduce((total, round) => total + round.cpu, 0)
    console.log(`  server CPU per step: ${(cpu / (rounds * sessions * soakSteps)).toFixed(2)} ms; peak RSS of the server: ${mib(peakRss)} MiB`)
  }
})

Effect.runPromise(program).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
