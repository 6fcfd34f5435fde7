/**
 * Replica benchmark (docs/cluster.md): BENCH_SESSIONS (50) sessions × BENCH_STEPS (20) scripted steps
 * (19 `read` calls and an answer, the model answering at once) on
 *
 * 1. one `agent serve` on SQLite (the baseline),
 * 2. one `agent serve` on PostgreSQL, not a replica (what the store's move to PostgreSQL costs),
 * 3. one `agent serve --replica` on PostgreSQL (a cluster of one: what the cluster adds),
 * 4. three replicas on PostgreSQL, the prompts spread over them,
 *
 * reporting throughput (steps/s), the servers' CPU per step (all replicas together), the step
 * overhead p50/p99 at the model boundary (from one model answer to the session's next model call)
 * and each process's peak RSS. Then 5. failover: three replicas, sessions whose model calls take
 * 500 ms, one replica killed (SIGKILL) mid-run: the longest any session waited for its next model
 * call after the kill, and whether every session still finished.
 *
 * Also (docs/performance.md, "Why a replica spent twice the CPU"): BENCH_CLUSTER_CASES picks the runs
 * (sqlite,postgres,1,3 by default; 3p adds three plain processes on one database, no cluster), BENCH_FAILOVER=0
 * skips the failover, BENCH_IDLE_SECONDS measures each server idle first, BENCH_SERVER_NODE_ARGS and
 * BENCH_SERVER_BIN reach every server (profiles: `--cpu-prof --cpu-prof-dir=/tmp/prof`). The PostgreSQL server's
 * own CPU per step is printed when the bench started the server. BENCH_WARMUP=N has each server run N sessions
 * before the measured ones (their steps then cost what a long-running server's do: every process compiles its
 * hot code once, and a cold start charges that to the first sessions); BENCH_THREADS=1 splits the CPU into the
 * JavaScript thread and the others (V8's compiler and GC helpers, libuv's pool), and into user and kernel time,
 * with the threads' context switches per step (voluntary, and preempted).
 *
 * Needs PostgreSQL: AGENT_TEST_DATABASE_URL, else one is started (scripts/test/postgres.mjs).
 * Run after `pnpm build`: `pnpm bench:cluster`. Target (issue 28): ≤ 25 % more CPU per step than one process on SQLite.
 */
import { MockOpenAIServer, TestDatabase } from "@agent/testing"
import { Effect, type Scope } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { modelProxy } from "./ModelProxy.js"
import { cpuMsOf, startServe, statusOf, turn } from "./ServeProcess.js"

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 50)
/** BENCH_IDLE_SECONDS: how long each run first measures its servers idle (CPU per second per process); 0 skips it. */
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 0)
const STEPS = Number(process.env.BENCH_STEPS ?? 20)
/** BENCH_WARMUP: sessions each server runs before the measured ones (0: the servers start cold). */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 0)
// BENCH_SERVER_BIN=packages/cli/dist/bin.js runs the unbundled build, whose profile names each library's files.
const bin = process.env.BENCH_SERVER_BIN ?? fileURLToPath(new URL("../../packages/cli/dist/bundle/bin.js", import.meta.url))

const percentile = (values: Array<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!
}
const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(0)

/** CPU (ms) of a process and its children, the ended ones included (utime, stime, cutime, cstime; Linux). */
const treeCpuMs = (pid: number) => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10
}

/**
 * The PostgreSQL server's CPU so far (ms): its postmaster, the backends that ended (counted in the
 * postmaster's children's time) and those still running. Undefined when the bench did not start it.
 */
const postgresCpuMs = (dataDir: string | undefined): number | undefined => {
  if (dataDir === undefined) return undefined
  const postmaster = Number(fs.readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0])
  let total = treeCpuMs(postmaster)
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const fields = fs.readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]!.split(" ")
      if (Number(fields[1]) === postmaster) total += treeCpuMs(Number(entry))
    } catch {
      // The process ended meanwhile: its time is now the postmaster's.
    }
  }
  return total
}

/** Set by main when the bench starts its own PostgreSQL server. */
const bench = { postgresDir: undefined as string | undefined }

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-cluster-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

interface Replica {
  readonly url: string
  readonly pid: number
  readonly kill: () => void
  /** SIGTERM, then waits (up to 20 s) for the replica to hand its sessions over and exit (a profile is written then). */
  readonly stop: () => Promise<void>
}

/** `agent serve --replica` in the shared project `dir/project`, on the database at `databaseUrl`. */
const startReplica = (dir: string, databaseUrl: string): Effect.Effect<Replica, never, Scope.Scope> =>
  Effect.gen(function*() {
    const runnerPort = yield* Effect.promise(freePort)
    // BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles each replica (as ServeProcess.ts does a single server).
    const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter(Boolean)
    const child = spawn(process.execPath, [...nodeArgs, bin, "serve", "--port", "0", "--replica", "--runner-port", String(runnerPort)], {
      cwd: path.join(dir, "project"),
      env: {
        ...process.env,
        HOME: dir,
        XDG_DATA_HOME: path.join(dir, "data"),
        XDG_CONFIG_HOME: path.join(dir, "config"),
        AGENT_MANAGED_DIR: path.join(dir, "managed"),
        AGENT_DATABASE_URL: databaseUrl
      },
      stdio: ["ignore", "pipe", "ignore"]
    })
    yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
    const url = yield* Effect.promise(() =>
      new Promise<string>((resolve, reject) => {
        let out = ""
        child.stdout!.on("data", (chunk: Buffer) => {
          out += chunk.toString()
          const match = /listening on (http:\/\/\S+)/.exec(out)
          if (match) resolve(match[1]!)
        })
        child.on("exit", (code) => reject(new Error(`agent serve --replica exited with ${code}`)))
      })
    )
    const stop = () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve()
        const timer = setTimeout(resolve, 20_000)
        child.once("exit", () => {
          clearTimeout(timer)
          resolve()
        })
        child.kill("SIGTERM")
      })
    return { url, pid: child.pid!, kill: () => child.kill("SIGKILL"), stop }
  })

const project = (dir: string, modelUrl: string) => {
  const project = path.join(dir, "project")
  fs.mkdirSync(project, { recursive: true })
  fs.writeFileSync(path.join(project, "notes.txt"), "hello\n".repeat(20))
  fs.writeFileSync(
    path.join(project, "agent.json"),
    JSON.stringify({
      model: "mock/model",
      provider: { mock: { npm: "@ai-sdk/openai-compatible", options: { baseURL: modelUrl }, models: { model: {} } } },
      cluster: { shards: 32, lock_expiration_seconds: 10 }
    })
  )
}

const post = (url: string, route: string, body: unknown) =>
  fetch(`${url}${route}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

/** Creates and prompts the sessions, the i-th through `urls[i % n]`; resolves once every session made `steps` model calls and got the last answer. */
const drive = async (urls: ReadonlyArray<string>, calls: Array<{ tag: number; answered: number }>, steps: number, sessions = SESSIONS, firstTag = 0) => {
  const started = performance.now()
  await Promise.all(Array.from({ length: sessions }, async (_, offset) => {
    const index = firstTag + offset
    const url = urls[offset % urls.length]!
    const session = await post(url, "/session", { title: `bench ${index}` }).then((response) => response.json() as Promise<{ id: string }>)
    await post(url, `/session/${session.id}/prompt_async`, { parts: [{ type: "text", text: `bench-session-${index}: read the notes` }] })
  }))
  for (;;) {
    const done = Array.from({ length: sessions }, (_, offset) => calls.filter((call) => call.tag === firstTag + offset && call.answered > 0).length >= steps)
    if (done.every(Boolean)) break
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return performance.now() - started
}

const tagOf = ({ body }: { readonly body: string }) => {
  const marker = /bench-session-(\d+)/.exec(body)
  return marker && body.includes('"tools":') ? Number(marker[1]) : undefined
}

interface Result {
  readonly name: string
  readonly wall: number
  readonly cpu: number
  /** CPU (ms) by kind of thread, all processes together. */
  readonly threads: Record<string, number>
  /** Each process's CPU per second (ms) while idle, before the sessions start (BENCH_IDLE_SECONDS). */
  readonly idle: Array<number> | undefined
  /** The PostgreSQL server's CPU over the run (ms), when the bench started the server. */
  readonly pgCpu: number | undefined
  readonly overhead: Array<number>
  readonly peakRss: Array<number>
  /** Model calls (with tools) the measured sessions made: more than SESSIONS × STEPS means steps ran twice. */
  readonly modelCalls: number
}

const run = (name: string, replicas: number | "sqlite" | "postgres" | "3p") =>
  Effect.scoped(Effect.gen(function*() {
    const dir = yield* tempDir
    const model = yield* MockOpenAIServer.start(Array.from({ length: (SESSIONS + 3 * WARMUP) * (STEPS + 2) + 100 }, () => turn(STEPS)))
    const proxy = yield* modelProxy(model.url, tagOf)
    let pids: Array<number>
    let urls: Array<string>
    let stops: Array<() => Promise<void>>
    if (replicas === "sqlite" || replicas === "postgres") {
      const env: Record<string, string> = replicas === "postgres" ? { AGENT_DATABASE_URL: yield* TestDatabase.freshPostgres } : {}
      const server = yield* startServe(dir, proxy.url, { env })
      pids = [server.pid]
      urls = [server.url]
      stops = [server.stop]
    } else if (replicas === "3p") {
      // Three plain processes on one database (no cluster), each with its own project: what running
      // several processes costs apart from the cluster (each reads the whole event log, as replicas do).
      const databaseUrl = yield* TestDatabase.freshPostgres
      const servers = yield* Effect.forEach([0, 1, 2], (index) =>
        Effect.flatMap(Effect.sync(() => {
          const home = path.join(dir, `p${index}`)
          fs.mkdirSync(home)
          return home
        }), (home) => startServe(home, proxy.url, { env: { AGENT_DATABASE_URL: databaseUrl } })), { concurrency: "unbounded" })
      pids = servers.map((server) => server.pid)
      urls = servers.map((server) => server.url)
      stops = servers.map((server) => server.stop)
    } else {
      project(dir, proxy.url)
      const databaseUrl = yield* TestDatabase.freshPostgres
      const started = yield* Effect.forEach(Array.from({ length: replicas }), () => startReplica(dir, databaseUrl), { concurrency: "unbounded" })
      pids = started.map((replica) => replica.pid)
      urls = started.map((replica) => replica.url)
      stops = started.map((replica) => replica.stop)
      // The runners find each other and share the shards out.
      yield* Effect.sleep("4 seconds")
    }
    let idle: Array<number> | undefined
    if (IDLE_SECONDS > 0) {
      const before = pids.map(cpuMsOf)
      yield* Effect.sleep(`${IDLE_SECONDS} seconds`)
      idle = pids.map((pid, index) => (cpuMsOf(pid) - before[index]!) / IDLE_SECONDS)
    }
    // BENCH_WARMUP: sessions each server runs first, unmeasured (what a long-running server's steps cost once its code is warm).
    if (WARMUP > 0) yield* Effect.promise(() => drive(urls, proxy.calls, STEPS, WARMUP * urls.length, SESSIONS))
    const threadsBefore = pids.map(threadCpuOf)
    const cpuBefore = pids.map(cpuMsOf)
    const pgBefore = postgresCpuMs(bench.postgresDir)
    const wall = yield* Effect.promise(() => drive(urls, proxy.calls, STEPS))
    const cpu = pids.reduce((sum, pid, index) => sum + cpuMsOf(pid) - cpuBefore[index]!, 0)
    const threads: Record<string, number> = {}
    pids.forEach((pid, index) => {
      for (const [kind, ms] of Object.entries(threadCpuOf(pid))) threads[kind] = (threads[kind] ?? 0) + ms - (threadsBefore[index]![kind] ?? 0)
    })
    const pgAfter = postgresCpuMs(bench.postgresDir)
    const pgCpu = pgBefore !== undefined && pgAfter !== undefined ? pgAfter - pgBefore : undefined
    const overhead: Array<number> = []
    for (let session = 0; session < SESSIONS; session++) {
      const calls = proxy.calls.filter((call) => call.tag === session)
      for (let index = 1; index < calls.length; index++) overhead.push(calls[index]!.arrived - calls[index - 1]!.answered)
    }
    const peakRss = pids.map((pid) => statusOf(pid).peakRss)
    // A graceful stop when profiling: node writes the profile on exit.
    if (process.env.BENCH_SERVER_NODE_ARGS?.includes("--cpu-prof")) yield* Effect.promise(() => Promise.all(stops.map((stop) => stop())))
    const modelCalls = proxy.calls.filter((call) => call.tag < SESSIONS).length
    return { name, wall, cpu, threads, idle, pgCpu, overhead, peakRss, modelCalls } satisfies Result
  }))

/** Three replicas, model calls of 500 ms, one replica killed once every session is under way. */
const failover = Effect.scoped(Effect.gen(function*() {
  const dir = yield* tempDir
  const steps = 10
  const model = yield* MockOpenAIServer.start(Array.from({ length: SESSIONS * (steps + 4) + 100 }, () => turn(steps)))
  const proxy = yield* modelProxy(model.url, tagOf, () => 500)
  project(dir, proxy.url)
  const databaseUrl = yield* TestDatabase.freshPostgres
  const replicas = yield* Effect.forEach([0, 1, 2], () => startReplica(dir, databaseUrl), { concurrency: "unbounded" })
  yield* Effect.sleep("4 seconds")
  const done = Effect.promise(() => drive(replicas.slice(1).map((replica) => replica.url), proxy.calls, steps))
  const killer = Effect.gen(function*() {
    while (new Set(proxy.calls.map((call) => call.tag)).size < SESSIONS) yield* Effect.sleep("50 millis")
    yield* Effect.sleep("1500 millis")
    const at = performance.now()
    replicas[0]!.kill()
    return at
  })
  const [wall, killedAt] = yield* Effect.all([done, killer], { concurrency: "unbounded" })
  // The longest wait, from the kill, for a session's next model call: the sessions of the dead replica waited for the failover.
  let longest = 0
  for (let session = 0; session < SESSIONS; session++) {
    const next = proxy.calls.find((call) => call.tag === session && call.arrived > killedAt)
    if (next) longest = Math.max(longest, next.arrived - killedAt)
  }
  return { wall, longest }
}))

/**
 * CPU (ms) of a process's threads grouped by kind (BENCH_THREADS=1): the JavaScript thread, V8's workers
 * (optimizing compiler, concurrent GC), libuv's pool and the rest, from /proc/<pid>/task (Linux).
 */
const threadCpuOf = (pid: number) => {
  const kinds: Record<string, number> = {}
  const add = (kind: string, value: number) => (kinds[kind] = (kinds[kind] ?? 0) + value)
  for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${task}/stat`, "utf8")
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"))
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      const kind = Number(task) === pid ? "js" : name.startsWith("V8") ? "v8" : name.startsWith("libuv") ? "libuv" : "other"
      add(kind, (Number(fields[11]) + Number(fields[12])) * 10)
      // Also across kinds: user and kernel time, and how often the threads were switched out
      // (waiting of their own accord, or preempted), per step.
      add("user", Number(fields[11]) * 10)
      add("kernel", Number(fields[12]) * 10)
      const status = fs.readFileSync(`/proc/${pid}/task/${task}/status`, "utf8")
      add("switches", Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0))
      add("preempted", Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0))
    } catch {
      // The thread ended meanwhile.
    }
  }
  return kinds
}

const main = Effect.gen(function*() {
  if (!TestDatabase.serverUrl()) {
    const pg = yield* Effect.promise(() => import("../test/postgres.mjs" as string) as Promise<{ start: () => Promise<{ url: string; dir: string }>; stop: (dir: string) => void }>)
    const started = yield* Effect.acquireRelease(Effect.promise(pg.start), (server) => Effect.sync(() => pg.stop(server.dir)))
    process.env.AGENT_TEST_DATABASE_URL = started.url
    bench.postgresDir = path.join(started.dir, "data")
  }
  console.log(`bench:cluster: ${SESSIONS} sessions × ${STEPS} steps, model answering at once; ${os.cpus().length} cores, load ${os.loadavg()[0]!.toFixed(2)}`)
  const results: Array<Result> = []
  // BENCH_CLUSTER_CASES=sqlite,postgres,1,3 (the default) picks the runs (3p: three plain processes on one
  // database, no cluster); BENCH_FAILOVER=0 skips the failover.
  const picked = (process.env.BENCH_CLUSTER_CASES ?? "sqlite,postgres,1,3").split(",")
  const cases = ([["1 process, SQLite", "sqlite"], ["1 process, PostgreSQL", "postgres"], ["1 replica, PostgreSQL", 1], ["3 processes, PostgreSQL", "3p"], ["3 replicas, PostgreSQL", 3]] as const)
    .filter(([, replicas]) => picked.includes(String(replicas)))
  for (const [name, replicas] of cases) {
    const result = yield* run(name, replicas)
    results.push(result)
    const steps = SESSIONS * STEPS
    console.log(
      `${name.padEnd(24)} ${(steps / (result.wall / 1000)).toFixed(0).padStart(5)} steps/s  CPU ${(result.cpu / steps).toFixed(2)} ms/step  ` +
        `overhead p50 ${percentile(result.overhead, 50).toFixed(1)} ms p99 ${percentile(result.overhead, 99).toFixed(1)} ms  ` +
        `peak RSS ${result.peakRss.map(mib).join(" / ")} MiB` +
        (result.idle ? `  idle CPU ${result.idle.map((ms) => ms.toFixed(1)).join(" / ")} ms/s` : "") +
        (result.pgCpu !== undefined && replicas !== "sqlite" ? `  (PostgreSQL server CPU ${(result.pgCpu / steps).toFixed(2)} ms/step)` : "")
    )
    if (result.modelCalls !== steps) console.log(`  ${result.modelCalls} model calls for ${steps} steps: some ran more than once`)
    if (process.env.BENCH_THREADS === "1") {
      const counts = new Set(["switches", "preempted"])
      const per = (keys: ReadonlyArray<string>) => keys.map((kind) => `${kind} ${((result.threads[kind] ?? 0) / steps).toFixed(2)}`).join(", ")
      console.log(`  by thread: ${per(Object.keys(result.threads).filter((kind) => !counts.has(kind) && kind !== "user" && kind !== "kernel"))} ms/step; ${per(["user", "kernel"])} ms/step; context ${per(["switches", "preempted"])} per step`)
    }
  }
  const sqlite = results.find((result) => result.name === "1 process, SQLite")
  const pg = results.find((result) => result.name === "1 process, PostgreSQL")
  for (const result of results) {
    if (sqlite && result !== sqlite) console.log(`${result.name}: ${(((result.cpu - sqlite.cpu) / sqlite.cpu) * 100).toFixed(0)} % CPU per step over SQLite`)
  }
  for (const result of results) {
    if (pg && result !== pg && result !== sqlite) console.log(`${result.name}: ${(((result.cpu - pg.cpu) / pg.cpu) * 100).toFixed(0)} % CPU per step over one process on PostgreSQL`)
  }
  if (process.env.BENCH_FAILOVER === "0") return
  const over = yield* failover
  console.log(`failover (3 replicas, 500 ms model calls, kill -9 of one, lock expiry 10 s): longest wait for a session's next model call ${(over.longest / 1000).toFixed(1)} s; all sessions finished in ${(over.wall / 1000).toFixed(1)} s`)
})

Effect.runPromise(Effect.scoped(main)).catch((error) => {
  console.error(error)
  process.exit(1)
})
