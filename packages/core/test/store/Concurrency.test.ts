import { TestDatabase, TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { afterEach } from "vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Bus } from "../../src/runtime/Bus.js"
import * as Database from "../../src/store/Database.js"
import { Instance } from "../../src/runtime/Instance.js"
import { SessionStore } from "../../src/store/SessionStore.js"

// The writer runs the built package (`pnpm test` builds first), as a real second process would.
const writer = fileURLToPath(new URL("./fixtures/writer.mjs", import.meta.url))

interface Child {
  readonly process: ChildProcess
  readonly lines: Array<string>
  readonly exited: Promise<number | null>
  readonly stderr: () => string
}

/** Every writer started, so none outlives its test even when an assertion fails. */
const started = new Set<ChildProcess>()
afterEach(() => {
  for (const child of started) if (child.exitCode === null) child.kill("SIGKILL")
  started.clear()
})

const start = (file: string, ...args: Array<string>): Child => {
  const child = spawn(process.execPath, [writer, file, ...args], { stdio: ["ignore", "pipe", "pipe"] })
  started.add(child)
  const lines: Array<string> = []
  let buffer = ""
  let stderr = ""
  child.stdout!.on("data", (chunk: Buffer) => {
    buffer += chunk.toString()
    const parts = buffer.split("\n")
    buffer = parts.pop()!
    lines.push(...parts)
  })
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  return { process: child, lines, exited, stderr: () => stderr }
}

const waitFor = async (child: Child, predicate: (lines: Array<string>) => boolean, ms = 30_000) => {
  const deadline = Date.now() + ms
  while (!predicate(child.lines)) {
    if (Date.now() > deadline) throw new Error(`child did not get there in time; stderr: ${child.stderr()}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

const openStore = (box: TestInstance.Sandbox, file: string) =>
  SessionStore.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(Database.layerTarget(file), Bus.layer)),
    Layer.provideMerge(Layer.succeed(Instance, box.instance))
  )

/** SQLite's own check of the file; PostgreSQL keeps its files to itself. */
const integrityChecked = (backend: TestDatabase.Backend, sql: SqlClient.SqlClient) =>
  backend === "sqlite"
    ? sql<{ integrity_check: string }>`PRAGMA integrity_check`.pipe(Effect.map(([check]) => expect(check!.integrity_check).toBe("ok")))
    : Effect.void

describe.each(TestDatabase.backends())("several processes on one database (%s)", (backend) => {
  it.scopedLive("10 processes writing 200 parts each, at once, to a new file: nothing fails, nothing is lost", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const file = yield* TestDatabase.target(backend, box, "shared/agent.db")
      const children = Array.from({ length: 10 }, () => start(file, "parts", "200"))
      const codes = yield* Effect.promise(() => Promise.all(children.map((child) => child.exited)))
      expect(codes, children.map((child) => child.stderr()).join("\n")).toEqual(Array(10).fill(0))
      expect(children.every((child) => child.lines.at(-1) === "done")).toBe(true)

      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const perSession = yield* sql<{ session_id: string; n: number }>`SELECT session_id, count(*) AS n FROM part GROUP BY session_id`
        expect(perSession.length).toBe(10)
        expect(perSession.every((row) => row.n === 200)).toBe(true)
        yield* integrityChecked(backend, sql)
      }).pipe(Effect.provide(openStore(box, file)))
    }), 120_000)

  it.scopedLive("a writer killed with SIGKILL 20 times leaves a sound database and no running tool calls", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const file = yield* TestDatabase.target(backend, box, "crash/agent.db")
      const committed = new Set<string>()
      const completed = new Set<string>()
      const runningAtKill = new Set<string>()
      // Fewer rounds on PostgreSQL: the recovery is the same code, and each round starts a process.
      const rounds = backend === "sqlite" ? 20 : 10
      for (let round = 0; round < rounds; round++) {
        const child = start(file, "crash")
        yield* Effect.promise(() => waitFor(child, (lines) => lines.some((line) => line.startsWith("running"))))
        yield* Effect.sleep(`${Math.floor(Math.random() * 150)} millis`)
        child.process.kill("SIGKILL")
        yield* Effect.promise(() => child.exited)
        const states = new Map<string, string>()
        for (const line of child.lines) {
          const [state, id] = line.split(" ")
          if (state === "running" || state === "completed") states.set(id!, state)
        }
        for (const [id, state] of states) {
          committed.add(id)
          if (state === "completed") completed.add(id)
          else runningAtKill.add(id)
        }
        // every reopen checks integrity and recovers what the dead writer left running
        yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* integrityChecked(backend, sql)
          const open = yield* sql<{ n: number }>`SELECT count(*) AS n FROM part WHERE status IN ('pending', 'running')`
          expect(open[0]!.n).toBe(0)
        }).pipe(Effect.provide(openStore(box, file)), Effect.scoped)
      }

      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ id: string; status: string; data: string }>`SELECT id, status, data FROM part`
        const byId = new Map(rows.map((row) => [row.id, row]))
        for (const id of committed) expect(byId.has(id), `part ${id} was committed but is missing`).toBe(true)
        for (const id of completed) expect(byId.get(id)!.status).toBe("completed")
        for (const id of runningAtKill) {
          const row = byId.get(id)!
          // the completing write may have committed just before the kill, unreported
          if (row.status === "completed") continue
          expect(row.status).toBe("error")
          expect(JSON.parse(row.data).state.metadata.interrupted).toBe(true)
        }
        expect(committed.size).toBeGreaterThan(2 * rounds)
      }).pipe(Effect.provide(openStore(box, file)))
    }), 300_000)

  it.scopedLive("a running tool call of a live process is left alone; once that process is killed it is interrupted", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const file = yield* TestDatabase.target(backend, box, "live/agent.db")
      const child = start(file, "hold")
      yield* Effect.promise(() => waitFor(child, (lines) => lines.some((line) => line.startsWith("running"))))
      const partID = child.lines.find((line) => line.startsWith("running"))!.split(" ")[1]!
      const state = (sql: SqlClient.SqlClient) =>
        sql<{ status: string; data: string }>`SELECT status, data FROM part WHERE id = ${partID}`.pipe(
          Effect.map((rows) => ({ status: rows[0]!.status, metadata: JSON.parse(rows[0]!.data).state.metadata })),
          Effect.orDie
        )

      // another process opening the database while the writer still runs must not touch its call
      const whileAlive = yield* Effect.flatMap(SqlClient.SqlClient, state).pipe(Effect.provide(openStore(box, file)), Effect.scoped)
      expect(whileAlive).toEqual({ status: "running", metadata: undefined })

      child.process.kill("SIGKILL")
      yield* Effect.promise(() => child.exited)
      const afterKill = yield* Effect.flatMap(SqlClient.SqlClient, state).pipe(Effect.provide(openStore(box, file)), Effect.scoped)
      expect(afterKill).toEqual({ status: "error", metadata: { interrupted: true } })
    }), 60_000)
})
