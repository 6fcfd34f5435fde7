import type { BusEvent, SessionID } from "@agent/domain"
import { TestData, TestDatabase, TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import * as Pg from "pg"
import { Bus } from "../../src/runtime/Bus.js"
import { Instance } from "../../src/runtime/Instance.js"
import * as Database from "../../src/store/Database.js"
import { channelOf, EventLog, type LoggedEvent } from "../../src/store/EventLog.js"
import { sessionOf } from "../../src/store/EventSession.js"
import { SessionStore } from "../../src/store/SessionStore.js"

// The event log on both backends: numbering (a global position without holes, a contiguous
// sequence per session), reads after a position, pruning, and on PostgreSQL the NOTIFY of a commit
// and positions that a reader racing several writers never skips.

const ses = (n: number) => `ses_${String(n).padStart(26, "0")}` as SessionID
const todo = (session: SessionID, content: string): BusEvent => ({
  type: "todo.updated",
  properties: { sessionID: session, todos: [{ content, status: "pending", priority: "low" }] }
})
const mcp = (server: string): BusEvent => ({ type: "mcp.tools.changed", properties: { server } })

/** One connection's log (a process of its own, as far as the database can tell). */
const openLog = (database: string) =>
  Layer.build(EventLog.layer.pipe(Layer.provideMerge(Database.layerTarget(database)))).pipe(
    Effect.map((context) => ({ log: Context.get(context, EventLog), sql: Context.get(context, SqlClient.SqlClient) }))
  )

const all = (log: EventLog["Type"]) => log.after(0, 1_000_000)

const contiguousPerSession = (events: ReadonlyArray<LoggedEvent>) => {
  const bySession = new Map<string, Array<number>>()
  for (const event of events) if (event.sessionID) bySession.set(event.sessionID, [...(bySession.get(event.sessionID) ?? []), event.seq!])
  return [...bySession.values()].every((seqs) => seqs.every((seq, index) => seq === index + 1))
}

describe("sessionOf", () => {
  const session = ses(1)
  it.each<[string, BusEvent, string | undefined]>([
    ["session.created", { type: "session.created", properties: { info: { id: session } } } as unknown as BusEvent, session],
    ["message.updated", { type: "message.updated", properties: { info: TestData.userMessage(session) } }, session],
    ["message.part.updated", { type: "message.part.updated", properties: { part: TestData.textPart({ id: TestData.messageID(), sessionID: session }, "x") } }, session],
    ["message.part.delta", { type: "message.part.delta", properties: { sessionID: session, messageID: "msg_1", partID: "prt_1", field: "text", delta: "x" } } as BusEvent, session],
    ["todo.updated", todo(session, "a"), session],
    ["session.error without a session", { type: "session.error", properties: {} }, undefined],
    ["mcp.tools.changed", mcp("fs"), undefined],
    ["file.edited", { type: "file.edited", properties: { file: "a.ts" } }, undefined]
  ])("%s", (_name, event, expected) => {
    expect(sessionOf(event)).toBe(expected)
  })
})

describe.each(TestDatabase.backends())("event log on %s", (backend) => {
  it.scoped("numbers events: positions follow each other across appends, each session counts its own from 1", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const { log } = yield* openLog(yield* TestDatabase.target(backend, box))
      expect(yield* log.head()).toBe(0)
      const first = yield* log.append([todo(ses(1), "a"), mcp("fs"), todo(ses(2), "b"), todo(ses(1), "c")])
      const second = yield* log.append([todo(ses(2), "d"), todo(ses(1), "e")])
      expect(first.map((event) => [event.pos, event.sessionID, event.seq])).toEqual([
        [1, ses(1), 1],
        [2, undefined, undefined],
        [3, ses(2), 1],
        [4, ses(1), 2]
      ])
      expect(second.map((event) => [event.pos, event.sessionID, event.seq])).toEqual([[5, ses(2), 2], [6, ses(1), 3]])
      expect(yield* log.head()).toBe(6)
      expect(yield* all(log)).toEqual([...first, ...second])
      expect((yield* log.after(2, 2)).map((event) => event.pos)).toEqual([3, 4])
      expect((yield* log.after(2, 100, 4)).map((event) => event.pos)).toEqual([3, 4])
      expect((yield* log.after(6, 100)).length).toBe(0)
      expect((yield* log.after(0, 1))[0]!.properties).toEqual(todo(ses(1), "a").properties)
      expect(yield* log.append([])).toEqual([])
    }))

  it.scoped("two connections appending at once: no position twice, none missing, every session contiguous", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const database = yield* TestDatabase.target(backend, box)
      const a = yield* openLog(database)
      const b = yield* openLog(database)
      const writer = (log: EventLog["Type"], name: string) =>
        Effect.forEach(Array.from({ length: 40 }, (_, n) => n), (n) =>
          log.append([todo(ses(n % 3), `${name}${n}`), todo(ses(3 + (n % 2)), `${name}${n}`), mcp(name)]), { discard: true })
      yield* Effect.all([writer(a.log, "a"), writer(b.log, "b")], { concurrency: 2 })
      const events = yield* all(a.log)
      expect(events.map((event) => event.pos)).toEqual(Array.from({ length: 240 }, (_, n) => n + 1))
      expect(contiguousPerSession(events)).toBe(true)
      expect(yield* b.log.head()).toBe(240)
    }))

  it.scoped("prune deletes old events; positions and live sessions' numbers go on, deleted sessions' are forgotten", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const database = yield* TestDatabase.target(backend, box)
      const { store, log, sql } = yield* Layer.build(
        Layer.mergeAll(SessionStore.layer, EventLog.layer).pipe(
          Layer.provideMerge(Layer.mergeAll(Database.layerTarget(database), Bus.layer)),
          Layer.provideMerge(Layer.succeed(Instance, box.instance))
        )
      ).pipe(Effect.map((context) => ({ store: Context.get(context, SessionStore), log: Context.get(context, EventLog), sql: Context.get(context, SqlClient.SqlClient) })))
      const kept = yield* store.create({ title: "kept" })
      const gone = yield* store.create({ title: "gone" })
      yield* log.append([todo(kept.id, "1"), todo(gone.id, "1"), todo(kept.id, "2")])
      yield* store.remove(gone.id)
      expect(yield* log.prune(Date.now() + 1)).toBe(3)
      expect(yield* all(log)).toEqual([])
      const heads = yield* sql<{ stream: string }>`SELECT stream FROM event_log_head ORDER BY stream`
      expect(heads.map((row) => row.stream)).toEqual(["*", kept.id])
      const later = yield* log.append([todo(kept.id, "3"), todo(gone.id, "again")])
      expect(later.map((event) => [event.pos, event.seq])).toEqual([[4, 3], [5, 1]])
      // nothing is older than the start of the test: nothing goes
      expect(yield* log.prune(Date.now() - 60_000)).toBe(0)
      expect((yield* all(log)).length).toBe(2)
    }))
})

describe.runIf(TestDatabase.postgresRuns())("event log on PostgreSQL", () => {
  it("the channel is named after the schema and fits an identifier", () => {
    expect(channelOf("public")).toBe("agent_events_public")
    const long = channelOf("s".repeat(80))
    expect(long.length).toBeLessThanOrEqual(63)
    expect(long).not.toBe(channelOf(`${"s".repeat(79)}t`))
  })

  it.scopedLive("a commit notifies the schema's channel with its last position", () =>
    Effect.gen(function*() {
      const url = yield* TestDatabase.freshPostgres
      const { log } = yield* openLog(url)
      const listener = new Pg.Client({ connectionString: url })
      yield* Effect.acquireRelease(Effect.promise(() => listener.connect()), () => Effect.promise(() => listener.end()))
      const payloads: Array<string> = []
      listener.on("notification", (message) => {
        if (message.channel === log.channel) payloads.push(message.payload ?? "")
      })
      yield* Effect.promise(() => listener.query(`LISTEN ${Pg.escapeIdentifier(log.channel!)}`))
      yield* log.append([todo(ses(1), "a"), todo(ses(1), "b")])
      yield* log.append([mcp("x")])
      const deadline = Date.now() + 5_000
      while (payloads.length < 2 && Date.now() < deadline) yield* Effect.sleep("20 millis")
      expect(payloads).toEqual(["2", "3"])
    }))

  it.scopedLive("a reader polling after its last position while three connections append sees every event once, in order", () =>
    Effect.gen(function*() {
      const url = yield* TestDatabase.freshPostgres
      const writers = yield* Effect.all([openLog(url), openLog(url), openLog(url)])
      const { log: reader } = yield* openLog(url)
      let done = false
      const seen: Array<LoggedEvent> = []
      const read = Effect.gen(function*() {
        for (;;) {
          const finished = done
          const page = yield* reader.after(seen.at(-1)?.pos ?? 0, 1000)
          seen.push(...page)
          if (finished && page.length === 0) return
        }
      })
      const write = Effect.all(
        writers.map(({ log }, w) =>
          Effect.forEach(Array.from({ length: 60 }, (_, n) => n), (n) => log.append([todo(ses(w), `${n}`), todo(ses(9), `${w}.${n}`)]), { discard: true })
        ),
        { concurrency: "unbounded" }
      ).pipe(Effect.ensuring(Effect.sync(() => (done = true))))
      yield* Effect.all([read, write], { concurrency: 2 })
      expect(seen.map((event) => event.pos)).toEqual(Array.from({ length: 360 }, (_, n) => n + 1))
      expect(contiguousPerSession(seen)).toBe(true)
    }))
})
