/**
 * SessionStore benchmark: how fast a part is appended, how fast a long session loads, how
 * many bytes a tool call costs on disk, and whether appending slows down as a session grows.
 * Run after `pnpm build`: `pnpm bench:store`. Targets (issue 3): append ≤ 200 µs median,
 * load of 1000 messages / 3000 parts ≤ 30 ms, last 100 appends no slower than the first 100.
 *
 * A load is timed in a store opened just for it (new connection, nothing decoded yet), in a
 * process that has loaded before (as a server or a running loop does); the first load of the
 * process and a load the store has already decoded are printed too. CPU time is printed next to
 * wall time: on a shared machine the wall time also counts waiting for a core.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Bus, ConfigService, Database, Identifier, Instance, SessionStore } from "@agent/core"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-"))
const file = path.join(dir, "agent.db")
// AGENT_DATABASE_URL=postgres://... measures the same against PostgreSQL (into an empty database or schema).
const databaseUrl = process.env.AGENT_DATABASE_URL
const instance = Instance.layerWith({
  directory: dir,
  env: { HOME: dir, XDG_DATA_HOME: dir, AGENT_DB: file, ...(databaseUrl ? { AGENT_DATABASE_URL: databaseUrl } : {}) }
})
const layer = SessionStore.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(Database.layer, Bus.layer)),
  Layer.provideMerge(ConfigService.layer),
  Layer.provideMerge(instance)
)

const median = (values: Array<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const micros = (ns: bigint) => Number(ns) / 1000

const assistant = (sessionID: string, index: number) => ({
  id: Identifier.ascending("message"),
  sessionID,
  role: "assistant" as const,
  time: { created: Date.now(), completed: Date.now() },
  parentID: Identifier.ascending("message"),
  providerID: "openai",
  modelID: "gpt-5",
  agent: "build",
  mode: "build",
  path: { cwd: dir, root: dir },
  cost: 0.001,
  tokens: { input: 1200 + index, output: 300, reasoning: 0, cache: { read: 800, write: 0 } },
  finish: "tool-calls" as const
})

/** A realistic tool call: a bash command with a couple of KB of output. */
const toolCall = (sessionID: string, messageID: string, index: number) => ({
  id: Identifier.ascending("part"),
  sessionID,
  messageID,
  type: "tool" as const,
  callID: `call_${index}`,
  tool: "bash",
  state: {
    status: "completed" as const,
    input: { command: `grep -rn "TODO" src/module${index}`, description: "Find TODOs" },
    output: `src/module${index}/file.ts:12: // TODO: handle the empty case\n`.repeat(30),
    title: "Find TODOs",
    metadata: { exit: 0 },
    time: { start: Date.now(), end: Date.now() }
  }
})

const program = Effect.gen(function*() {
  const store = yield* SessionStore

  const sql = yield* SqlClient.SqlClient
  // 1. append latency, and drift over 10 000 appends to one growing session
  const growing = yield* store.create({ title: "append" })
  const message = assistant(growing.id, 0)
  yield* store.upsertMessage(message as never)
  // warm the JIT on another session first, so the first-vs-last comparison measures growth
  const warm = yield* store.create({ title: "warm-up" })
  const warmMessage = assistant(warm.id, 0)
  yield* store.upsertMessage(warmMessage as never)
  for (let index = 0; index < 500; index++) yield* store.upsertPart(toolCall(warm.id, warmMessage.id, index) as never)
  // bytes per tool call: what the file grows by over the 10 000 appends, after checkpoints
  // (PostgreSQL: the part table with its indexes and TOAST)
  const fileSize = sql.onDialectOrElse({
    pg: () => Effect.map(sql<{ size: number }>`SELECT pg_total_relation_size('part') AS size`, ([row]) => row!.size),
    orElse: () => Effect.zipRight(sql`PRAGMA wal_checkpoint(TRUNCATE)`, Effect.sync(() => fs.statSync(file).size))
  })
  const sizeBefore = yield* fileSize
  const appendTimes: Array<number> = []
  for (let index = 0; index < 10_000; index++) {
    const part = toolCall(growing.id, message.id, index)
    const start = process.hrtime.bigint()
    yield* store.upsertPart(part as never)
    appendTimes.push(micros(process.hrtime.bigint() - start))
  }
  const sizeAfter = yield* fileSize
  const partBytes = Buffer.byteLength(JSON.stringify(toolCall(growing.id, message.id, 5000)))

  // 2. load of a session with 1000 messages and 3000 parts, shaped like a real one: 500 user
  //    turns (one text part) and 500 replies (step-start, text, two tool calls, step-finish),
  //    tool outputs between 200 B and 3 KB
  const long = yield* store.create({ title: "load" })
  const partBase = (messageID: string) => ({ id: Identifier.ascending("part"), sessionID: long.id, messageID })
  for (let index = 0; index < 500; index++) {
    const base = assistant(long.id, index)
    const user = { ...base, role: "user" as const, time: { created: base.time.created }, model: { providerID: "openai", modelID: "gpt-5" } }
    const { parentID: _p, providerID: _r, modelID: _m, mode: _o, path: _a, cost: _c, tokens: _t, finish: _f, ...userInfo } = user
    yield* store.upsertMessage(userInfo as never)
    yield* store.upsertPart({ ...partBase(user.id), type: "text", text: `Please look at module ${index} and fix the failing test.` } as never)
    const reply = assistant(long.id, index)
    yield* store.upsertMessage(reply as never)
    yield* store.upsertPart({ ...partBase(reply.id), type: "step-start" } as never)
    yield* store.upsertPart({ ...partBase(reply.id), type: "text", text: "Let me check the test output first.", time: { start: 1, end: 2 } } as never)
    for (let call = 0; call < 2; call++) {
      const part = toolCall(long.id, reply.id, index * 2 + call)
      const size = 200 + ((index * 7919 + call * 104729) % 2800)
      yield* store.upsertPart({ ...part, state: { ...part.state, output: "x".repeat(size) } } as never)
    }
    yield* store.upsertPart({ ...partBase(reply.id), type: "step-finish", reason: "tool-calls", cost: 0.001, tokens: reply.tokens } as never)
  }
  const load = (target: SessionStore["Type"]) =>
    Effect.gen(function*() {
      const cpu = process.cpuUsage()
      const start = process.hrtime.bigint()
      const loaded = yield* target.messages(long.id)
      const wall = micros(process.hrtime.bigint() - start) / 1000
      const used = process.cpuUsage(cpu)
      if (loaded.length !== 1000 || loaded.reduce((n, m) => n + m.parts.length, 0) !== 3000) throw new Error("wrong session size")
      return { wall, cpu: (used.user + used.system) / 1000 }
    })
  const firstLoad = yield* load(store)
  const cachedTimes: Array<number> = []
  for (let run = 0; run < 10; run++) cachedTimes.push((yield* load(store)).wall)
  // each in a store of its own, as a new connection with nothing decoded yet
  const fresh = Effect.flatMap(SessionStore, load).pipe(Effect.provide(layer), Effect.scoped)
  for (let run = 0; run < 3; run++) yield* fresh // the decoding code is compiled by now in a long-running process
  const uncached: Array<{ wall: number; cpu: number }> = []
  for (let run = 0; run < 12; run++) uncached.push(yield* fresh)

  // the heavy variant: the 10 000-call session, every part a tool call with 2.1 KB of output
  const heavyTimes: Array<number> = []
  for (let run = 0; run < 5; run++) {
    const start = process.hrtime.bigint()
    yield* store.messages(growing.id)
    heavyTimes.push(micros(process.hrtime.bigint() - start) / 1000)
  }

  const first = median(appendTimes.slice(0, 100))
  const last = median(appendTimes.slice(-100))
  const walls = uncached.map((run) => run.wall)
  const bytesPerCall = (sizeAfter - sizeBefore) / 10_000
  console.log(`backend: ${databaseUrl ? `PostgreSQL (${Database.PostgresUrl.label(databaseUrl)})` : "SQLite"}`)
  console.log(`load average ${os.loadavg().map((n) => n.toFixed(1)).join(" ")} on ${os.availableParallelism()} cores`)
  console.log(`append one part (median of 10 000): ${median(appendTimes).toFixed(1)} µs   [target ≤ 200 µs]`)
  console.log(`  first 100 appends: ${first.toFixed(1)} µs median, last 100: ${last.toFixed(1)} µs median (ratio ${(last / first).toFixed(2)})`)
  console.log(
    `load 1000 messages / 3000 parts, nothing cached (12 fresh stores): median ${median(walls).toFixed(1)} ms, ` +
      `min ${Math.min(...walls).toFixed(1)} ms; CPU median ${median(uncached.map((run) => run.cpu)).toFixed(1)} ms   [target ≤ 30 ms]`
  )
  console.log(`  first load of this process: ${firstLoad.wall.toFixed(1)} ms (CPU ${firstLoad.cpu.toFixed(1)} ms); already decoded by the store: median ${median(cachedTimes).toFixed(1)} ms`)
  console.log(`  heavy: 10 000 tool calls with 2.1 KB output each, median of 5: ${median(heavyTimes).toFixed(1)} ms`)
  console.log(
    `database bytes per tool call: ${Math.round(bytesPerCall)} B (growth over the 10 000 appends; the part's JSON is ${partBytes} B, ` +
      `whole file ${(sizeAfter / 1024 / 1024).toFixed(1)} MB then)`
  )
})

Effect.runPromise(program.pipe(Effect.provide(layer), Effect.scoped)).finally(() => fs.rmSync(dir, { recursive: true, force: true }))
