import { Bus, makeEventLog } from "@agent/core"
import type { SessionID } from "@agent/domain"
import { ScriptedModel, TestDatabase } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { serve, sseParser } from "./support.js"

// Two servers on one PostgreSQL database, in this process (each its own runtime, bus and event
// log reader): what one publishes reaches the other's clients in the same order under the same
// ids, a client resumes on either with Last-Event-ID, and a dropped LISTEN connection comes back.
// With real `agent serve` processes and a scripted run: packages/cli/test/Replicas.test.ts.

const ses = (n: number) => `ses_${String(n).padStart(26, "0")}` as SessionID
const todo = (session: SessionID, content: string) => ({
  type: "todo.updated" as const,
  properties: { sessionID: session, todos: [{ content, status: "pending" as const, priority: "low" as const }] }
})

interface WireEvent {
  readonly id?: number
  readonly seq?: number
  readonly type: string
  readonly properties: any
}

/** Opens `/event` (from `lastEventId` when given) and reads until `stop` holds; then closes it. */
const read = (url: string, stop: (events: ReadonlyArray<WireEvent>) => boolean, lastEventId?: number) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/event`, { headers: lastEventId !== undefined ? { "last-event-id": String(lastEventId) } : {} })
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
    const events: Array<WireEvent> = []
    const parse = sseParser()
    const deadline = setTimeout(() => void reader.cancel(), 15_000)
    while (!stop(events)) {
      const { done, value } = await reader.read()
      if (done) break
      events.push(...parse(value))
    }
    clearTimeout(deadline)
    await reader.cancel()
    return events.filter((event) => event.id !== undefined)
  })

/** Opens `/event` and keeps it open until the scope closes; `until` waits for what arrived so far to satisfy `stop`. */
const follow = (url: string) =>
  Effect.gen(function*() {
    const controller = new AbortController()
    const events: Array<WireEvent> = []
    let failure: unknown
    yield* Effect.addFinalizer(() => Effect.sync(() => controller.abort()))
    const response = yield* Effect.promise(() => fetch(`${url}/event`, { signal: controller.signal }))
    void (async () => {
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
      const parse = sseParser()
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return
        events.push(...parse(value))
      }
    })().catch((error) => {
      if (!controller.signal.aborted) failure = error
    })
    const logged = () => events.filter((event) => event.id !== undefined)
    const until = (stop: (events: ReadonlyArray<WireEvent>) => boolean) =>
      Effect.suspend(() => failure !== undefined ? Effect.die(failure) : Effect.succeed(logged())).pipe(
        Effect.filterOrFail(stop),
        Effect.retry(Schedule.spaced("20 millis")),
        Effect.timeoutFail({ duration: "15 seconds", onTimeout: () => new Error(`the stream stopped at ${logged().length} events`) })
      )
    return { until }
  })

const todos = (events: ReadonlyArray<WireEvent>) => events.filter((event) => event.type === "todo.updated")
const contents = (events: ReadonlyArray<WireEvent>) => todos(events).map((event) => event.properties.todos[0].content)
const countTodos = (n: number) => (events: ReadonlyArray<WireEvent>) => todos(events).length >= n

/** Ids follow each other without a hole; each session's seq counts 1, 2, ... from its first event here. */
const contiguous = (events: ReadonlyArray<WireEvent>) => {
  const ids = events.map((event) => event.id!)
  expect(ids).toEqual(ids.map((_, index) => ids[0]! + index))
  const seqs = new Map<string, Array<number>>()
  for (const event of todos(events)) seqs.set(event.properties.sessionID, [...(seqs.get(event.properties.sessionID) ?? []), event.seq!])
  for (const list of seqs.values()) expect(list).toEqual(list.map((_, index) => list[0]! + index))
}

const model = () => ScriptedModel.make(["x"])

/** The backends listening on `channel` (the servers' `agent events` connections), by pid. */
const listenersOf = (channel: string) =>
  TestDatabase.adminQuery<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE application_name = 'agent events' AND query = $1`,
    [`LISTEN "${channel}"`]
  ).pipe(Effect.map((rows) => rows.map((row) => row.pid).sort()))

/** Publishes todos `task <from>` up to `task <to - 1>` on the server's bus, the n-th of session `n % sessions`. */
const publishOn = (server: Effect.Effect.Success<ReturnType<typeof serve>>, sessions = 1) => (from: number, to: number) =>
  server.run(Effect.gen(function*() {
    const bus = yield* Bus
    for (let n = from; n < to; n++) yield* bus.publish(todo(ses(n % sessions), `task ${n}`))
  }))

describe.runIf(TestDatabase.postgresRuns())("the event stream of replicas on PostgreSQL", () => {
  it.scopedLive("a client of B gets what A published, in order, under the ids A's clients see", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase.freshPostgres
      const a = yield* serve({ model: model(), database })
      const b = yield* serve({ model: model(), database })
      const publish = a.run(Effect.gen(function*() {
        const bus = yield* Bus
        for (let n = 0; n < 30; n++) yield* bus.publish(todo(ses(n % 2), `task ${n}`))
      }))
      const [onA, onB] = yield* Effect.all([read(a.url, countTodos(30), 0), read(b.url, countTodos(30), 0), publish], { concurrency: "unbounded" })
      expect(contents(onB)).toEqual(Array.from({ length: 30 }, (_, n) => `task ${n}`))
      expect(onB).toEqual(onA)
      contiguous(onB)
      expect(todos(onB).filter((event) => event.properties.sessionID === ses(1)).map((event) => event.seq)).toEqual(
        Array.from({ length: 15 }, (_, n) => n + 1)
      )
    }))

  it.scopedLive("a client that left A resumes on B with Last-Event-ID, past B's buffer: nothing missed, nothing twice", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase.freshPostgres
      const a = yield* serve({ model: model(), database })
      // B keeps 4 events for replay: the rest of a resume comes from the log.
      const b = yield* serve({ model: model(), database, server: { events: { replay: 4 } } })
      const publish = publishOn(a, 3)
      const [first] = yield* Effect.all([read(a.url, countTodos(10), 0), publish(0, 10)], { concurrency: "unbounded" })
      const last = first.at(-1)!
      yield* publish(10, 40)
      // B has seen them all before the client comes back
      yield* read(b.url, countTodos(40), 0)
      const rest = yield* read(b.url, countTodos(30), last.id)
      expect(contents(rest)).toEqual(Array.from({ length: 30 }, (_, n) => `task ${n + 10}`))
      expect(rest[0]!.id).toBe(last.id! + 1)
      contiguous([...first, ...rest])
    }))

  it.scopedLive("B had no client while A published: a client resuming on B gets it all from the log, then live events once", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase.freshPostgres
      const a = yield* serve({ model: model(), database })
      const b = yield* serve({ model: model(), database })
      const publish = publishOn(a, 2)
      // A's client sees them logged; B has none connected, so it does not read them.
      const [onA] = yield* Effect.all([read(a.url, countTodos(20), 0), publish(0, 20)], { concurrency: "unbounded" })
      const [onB] = yield* Effect.all([read(b.url, countTodos(30), 0), publish(20, 30)], { concurrency: "unbounded" })
      expect(contents(onB)).toEqual(Array.from({ length: 30 }, (_, n) => `task ${n}`))
      expect(onB.slice(0, onA.length)).toEqual(onA)
      contiguous(onB)
      // Everyone left B; a client that left at task 24 comes back after more was published.
      const at24 = onB.find((event) => event.type === "todo.updated" && event.properties.todos[0].content === "task 24")!
      yield* publish(30, 35)
      const [resumed] = yield* Effect.all([read(b.url, countTodos(15), at24.id), publish(35, 40)], { concurrency: "unbounded" })
      expect(contents(resumed)).toEqual(Array.from({ length: 15 }, (_, n) => `task ${n + 25}`))
      contiguous([...onB.filter((event) => event.id! <= at24.id!), ...resumed])
    }))

  it.scopedLive("a LISTEN connection terminated by the server comes back, and what was committed meanwhile arrives", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase.freshPostgres
      const a = yield* serve({ model: model(), database })
      // No polling to fall back on, and B's client stays connected throughout (a client arriving
      // wakes the reader too): only notifications and the catch-up after reconnecting deliver.
      const b = yield* serve({ model: model(), database, server: { events: { poll: "1 hour" } } })
      const channel = (yield* b.run(makeEventLog)).channel!
      const listeners = () => listenersOf(channel)
      const publish = publishOn(a)
      const held = yield* follow(b.url)

      yield* publish(0, 3)
      yield* held.until(countTodos(3))
      // B's (A has no client, so it does not listen); it may still be connecting when the first events arrive.
      const old = yield* listeners().pipe(
        Effect.filterOrFail((pids) => pids.length === 1),
        Effect.retry(Schedule.spaced("50 millis")),
        Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("B did not listen while its client was connected") })
      )
      const terminated = yield* TestDatabase.adminQuery<{ done: boolean }>(`SELECT pg_terminate_backend(pid) AS done FROM unnest($1::int[]) AS pid`, [old])
      expect(terminated.map((row) => row.done)).toEqual([true])
      // Published while B may have no LISTEN connection: its reconnection reads them.
      yield* publish(3, 8)
      yield* held.until(countTodos(8))
      // The connection comes back as a new backend, and the old one is gone (pg_terminate_backend
      // only signals it).
      yield* listeners().pipe(
        Effect.filterOrFail((pids) => pids.length === 1 && !pids.some((pid) => old.includes(pid))),
        Effect.retry(Schedule.spaced("50 millis")),
        Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("a new LISTEN connection did not replace the old one") })
      )
      // and notifications work again
      yield* publish(8, 10)
      const all = yield* held.until(countTodos(10))
      expect(contents(all)).toEqual(Array.from({ length: 10 }, (_, n) => `task ${n}`))
      contiguous(all)
    }))

  it.scopedLive("a replica listens only while it has clients, and a linger after the last one left", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase.freshPostgres
      const a = yield* serve({ model: model(), database })
      const b = yield* serve({ model: model(), database, server: { events: { listenLinger: "1 second" } } })
      const channel = (yield* b.run(makeEventLog)).channel!
      const listeners = () => listenersOf(channel).pipe(Effect.map((pids) => pids.length))
      const until = (count: number, what: string) =>
        listeners().pipe(
          Effect.filterOrFail((n) => n === count),
          Effect.retry(Schedule.spaced("50 millis")),
          Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error(what) })
        )
      const publish = publishOn(a)

      // Events committed with no client anywhere: nobody is woken by them.
      yield* publish(0, 3)
      yield* Effect.sleep("300 millis")
      expect(yield* listeners()).toBe(0)
      // A client on B: B listens, and gets what A publishes as it comes.
      yield* Effect.scoped(Effect.gen(function*() {
        const held = yield* follow(b.url)
        yield* until(1, "B did not listen once a client arrived")
        yield* publish(3, 5)
        expect(contents(yield* held.until(countTodos(2)))).toEqual(["task 3", "task 4"])
      }))
      // The client left: after the linger B stops listening.
      yield* until(0, "B still listens a while after its last client left")
      // and a client arriving later resumes from the log with nothing missed.
      yield* publish(5, 7)
      const resumed = yield* read(b.url, countTodos(7), 0)
      expect(contents(resumed)).toEqual(Array.from({ length: 7 }, (_, n) => `task ${n}`))
      contiguous(resumed)
    }))
})
