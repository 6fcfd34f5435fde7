import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Stream } from "effect"
import { makeFanout, type ServerEvent } from "../src/EventFanout.js"

// The fan-out of the event stream by itself: which events a client gets on subscribing with or
// without Last-Event-ID, from the buffer, from the log, or none twice when it is ahead.

const event = (id: number): ServerEvent => ({ id, type: "todo.updated", properties: { n: id } })
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, n) => from + n)

/** A log holding events 1..`upTo`: what a replay past the buffer reads. */
const older = (after: number, upTo: number) => Stream.fromIterable(range(after + 1, upTo).map(event))

/** The log behind a replica's fan-out, its head at `head` (what a client arriving after none were connected starts from). */
const logAt = (head: number, resume: () => void = () => {}) => ({ older, head: () => Effect.succeed(head), resume })

/** The ids a subscription yields, taking `count` of them (heartbeats aside). */
const ids = (events: Stream.Stream<ServerEvent>, count: number) =>
  events.pipe(Stream.filter((e) => e.id !== undefined), Stream.take(count), Stream.runCollect, Effect.map((all) => Chunk.toArray(all).map((e) => e.id!)))

describe("event fan-out", () => {
  it.scopedLive("with the log: a resume past the buffer reads the log, then live events follow", () =>
    Effect.gen(function*() {
      const fanout = yield* makeFanout({ replay: 3, batch: "0 millis" }, logAt(10))
      // Another client keeps the log read while 11..20 arrive.
      yield* fanout.subscribe()
      for (const id of range(11, 20)) fanout.deliver(event(id))
      const subscription = yield* fanout.subscribe(4)
      const taken = yield* Effect.fork(ids(subscription.events, 18))
      yield* Effect.sleep("20 millis")
      for (const id of range(21, 22)) fanout.deliver(event(id))
      expect(yield* Fiber.join(taken)).toEqual(range(5, 22))
    }))

  it.scopedLive("with the log: a client ahead of this replica gets nothing twice", () =>
    Effect.gen(function*() {
      const fanout = yield* makeFanout({ batch: "0 millis" }, logAt(10))
      // It read up to 14 on a replica that was further on; this one has delivered up to 10.
      const subscription = yield* fanout.subscribe(14)
      const taken = yield* Effect.fork(ids(subscription.events, 3))
      for (const id of range(11, 17)) fanout.deliver(event(id))
      expect(yield* Fiber.join(taken)).toEqual([15, 16, 17])
    }))

  it.scopedLive("with the log: a client without Last-Event-ID gets live events only", () =>
    Effect.gen(function*() {
      const fanout = yield* makeFanout({ batch: "0 millis" }, logAt(10))
      const subscription = yield* fanout.subscribe()
      const taken = yield* Effect.fork(ids(subscription.events, 2))
      for (const id of range(11, 12)) fanout.deliver(event(id))
      expect(yield* Fiber.join(taken)).toEqual([11, 12])
    }))

  it.scopedLive("with the log: read only while a client is connected; the first one to arrive moves the reader to the head", () =>
    Effect.gen(function*() {
      let resumed = 0
      const fanout = yield* makeFanout({ batch: "0 millis" }, logAt(30, () => resumed++))
      expect(fanout.wanted()).toBe(false)
      const first = yield* Effect.scoped(Effect.gen(function*() {
        const subscription = yield* fanout.subscribe()
        expect([fanout.wanted(), fanout.position(), resumed]).toEqual([true, 30, 1])
        // A second client while one is connected does not move anything.
        yield* fanout.subscribe()
        expect(resumed).toBe(1)
        const taken = yield* Effect.fork(ids(subscription.events, 2))
        // A page read before the jump (up to 30) is not passed on again.
        for (const id of range(28, 32)) fanout.deliver(event(id))
        return yield* Fiber.join(taken)
      }))
      expect(first).toEqual([31, 32])
      expect(fanout.wanted()).toBe(false)
    }))

  it.scopedLive("with the log: a client resuming after everyone left gets what was committed meanwhile from the log, nothing twice", () =>
    Effect.gen(function*() {
      let head = 10
      const fanout = yield* makeFanout({ batch: "0 millis" }, { older, head: () => Effect.sync(() => head), resume: () => {} })
      yield* Effect.scoped(Effect.gen(function*() {
        yield* fanout.subscribe()
        for (const id of range(11, 15)) fanout.deliver(event(id))
      }))
      // Nobody connected: 16..25 are committed but not read here; a page in flight delivers 16..17.
      head = 25
      for (const id of range(16, 17)) fanout.deliver(event(id))
      const subscription = yield* fanout.subscribe(15)
      const taken = yield* Effect.fork(ids(subscription.events, 12))
      // The reader goes on from the head, and the rest of that page (up to 27) comes in too.
      expect(fanout.position()).toBe(25)
      for (const id of range(18, 27)) fanout.deliver(event(id))
      expect(yield* Fiber.join(taken)).toEqual(range(16, 27))
    }))

  it.scopedLive("on its own (SQLite): a client with a higher id than this server's (it restarted) gets its events from 1", () =>
    Effect.gen(function*() {
      const fanout = yield* makeFanout({ batch: "0 millis" })
      const subscription = yield* fanout.subscribe(500)
      const taken = yield* Effect.fork(ids(subscription.events, 3))
      for (const id of range(1, 3)) fanout.deliver(event(id))
      expect(yield* Fiber.join(taken)).toEqual([1, 2, 3])
    }))

  it.scopedLive("on its own: a resume within the buffer replays from it", () =>
    Effect.gen(function*() {
      const fanout = yield* makeFanout({ replay: 5, batch: "0 millis" })
      for (const id of range(1, 8)) fanout.deliver(event(id))
      const subscription = yield* fanout.subscribe(5)
      expect(yield* ids(subscription.events, 3)).toEqual([6, 7, 8])
    }))
})
