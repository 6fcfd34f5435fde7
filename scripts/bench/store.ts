/**
 * SessionStore benchmark: how fast a part is appended, how fast a long session loads, how
 * many bytes a tool call costs on disk, and whether appending slows down as a session grows.
 * Run after `pnpm build`: `pnpm bench:store`. Targets (issue 3): append ≤ 200 µs median,
 * load of 1000 messages / 3000 parts ≤ 30 ms, last 100 appends no slower than the first 100.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Bus, Database, Identifier, Instance, SessionStore } from "@agent/core"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-"))
const file = path.join(dir, "agent.db")
const instance = Instance.layerWith({ directory: dir, env: { HOME: dir, XDG_DATA_HOME: dir, AGENT_DB: file } })
const layer = SessionStore.layer.pipe(Layer.provideMerge(Layer.mergeAll(Database.layer, Bus.layer)), Layer.provideMerge(instance))

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
  const appendTimes: Array<number> = []
  for (let index = 0; index < 10_000; index++) {
    const part = toolCall(growing.id, message.id, index)
    const start = process.hrtime.bigint()
    yield* store.upsertPart(part as never)
    appendTimes.push(micros(process.hrtime.bigint() - start))
  }

  // 2. load of a session with 1000 messages and 3000 parts, shaped like a real one: 500 user
  //    turns (one text part) and 500 replies (step-start, text, two tool calls, step-finish),
  //    tool outputs between 200 B and 3 KB
  const long = yield* store.create({ title: "load" })
  const partBase = (messageID: string) => ({ id: Identifier.ascending("part"), sessionID: long.id, messageID })
  for (let index = 0; index < 500; index++) {
    const user = { ...assistant(long.id, index), role: "user" as const, model: { providerID: "openai", modelID: "gpt-5" } }
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
  const loadTimes: Array<number> = []
  for (let run = 0; run < 16; run++) {
    const start = process.hrtime.bigint()
    const loaded = yield* store.messages(long.id)
    loadTimes.push(micros(process.hrtime.bigint() - start) / 1000)
    if (loaded.length !== 1000 || loaded.reduce((n, m) => n + m.parts.length, 0) !== 3000) throw new Error("wrong session size")
  }
  // the heavy variant: the 10 000-call session, every part a tool call with 2.1 KB of output
  const heavyTimes: Array<number> = []
  for (let run = 0; run < 5; run++) {
    const start = process.hrtime.bigint()
    yield* store.messages(growing.id)
    heavyTimes.push(micros(process.hrtime.bigint() - start) / 1000)
  }

  // 3. bytes on disk per tool call, after a checkpoint
  yield* sql`PRAGMA wal_checkpoint(TRUNCATE)`
  const sizeBytes = fs.statSync(file).size
  const toolCalls = 10_000 + 1000

  const first = median(appendTimes.slice(0, 100))
  const last = median(appendTimes.slice(-100))
  console.log(`append one part (median of 10 000): ${median(appendTimes).toFixed(1)} µs   [target ≤ 200 µs]`)
  console.log(`  first 100 appends: ${first.toFixed(1)} µs median, last 100: ${last.toFixed(1)} µs median (ratio ${(last / first).toFixed(2)})`)
  console.log(`load 1000 messages / 3000 parts: first ${loadTimes[0]!.toFixed(1)} ms (cold), then median ${median(loadTimes.slice(1)).toFixed(1)} ms   [target ≤ 30 ms]`)
  console.log(`  heavy: 10 000 tool calls with 2.1 KB output each, median of 5: ${median(heavyTimes).toFixed(1)} ms`)
  console.log(`database bytes per tool call: ${Math.round(sizeBytes / toolCalls)} B (${(sizeBytes / 1024 / 1024).toFixed(1)} MB for ${toolCalls} calls, 1.6 KB of output on average)`)
})

Effect.runPromise(program.pipe(Effect.provide(layer), Effect.scoped)).finally(() => fs.rmSync(dir, { recursive: true, force: true }))
