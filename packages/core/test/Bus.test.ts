import type { BusEvent, SessionID } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Stream } from "effect"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { Bus } from "../src/runtime/Bus.js"

/** Live heap after a full collection (dropped events are garbage, not growth). */
const heapAfterGc = (): number => {
  v8.setFlagsFromString("--expose-gc")
  ;(vm.runInNewContext("gc") as () => void)()
  return process.memoryUsage().heapUsed
}

const sessionID = "ses_dddddddddddddddddddddddddd" as SessionID
const delta = (index: number, text = "x"): BusEvent => ({
  type: "message.part.delta",
  properties: {
    sessionID,
    messageID: "msg_dddddddddddddddddddddddddd" as never,
    partID: "prt_dddddddddddddddddddddddddd" as never,
    field: "text",
    delta: `${text}${index}`
  }
})

describe("Bus", () => {
  it.scoped("a subscriber created before a burst of 10 000 events sees them all, in order", () =>
    Effect.gen(function*() {
      const bus = yield* Bus
      const events = yield* bus.subscribe()
      for (let index = 0; index < 10_000; index++) yield* bus.publish(delta(index))
      const seen = Chunk.toArray(yield* Stream.runCollect(Stream.take(events, 10_000)))
      expect(seen.map((event) => event.type === "message.part.delta" && event.properties.delta)).toEqual(
        Array.from({ length: 10_000 }, (_, index) => `x${index}`)
      )
      expect(yield* bus.dropped()).toBe(0)
    }).pipe(Effect.provide(Bus.layer)))

  it.scoped("filters by type and stops delivering when the subscriber's scope closes", () =>
    Effect.gen(function*() {
      const bus = yield* Bus
      const todos = yield* bus.subscribe({ types: ["todo.updated"] })
      const consumer = yield* Effect.fork(Stream.runCollect(Stream.take(todos, 1)))
      yield* bus.publish(delta(1))
      yield* bus.publish({ type: "todo.updated", properties: { sessionID, todos: [] } })
      const [only] = Chunk.toArray(yield* Fiber.join(consumer))
      expect(only!.type).toBe("todo.updated")
      // a finished subscription costs nothing
      yield* Effect.scoped(bus.subscribe())
      for (let index = 0; index < 100; index++) yield* bus.publish(delta(index))
      expect(yield* bus.dropped()).toBe(0)
    }).pipe(Effect.provide(Bus.layer)))

  it.scoped("a full subscriber loses its oldest events and keeps the newest", () =>
    Effect.gen(function*() {
      const bus = yield* Bus
      const slow = yield* bus.subscribe({ capacity: 3 })
      for (let index = 0; index < 5; index++) yield* bus.publish(delta(index))
      const kept = yield* Stream.runCollect(Stream.take(slow, 3))
      expect(Chunk.toArray(kept).map((event) => event.type === "message.part.delta" && event.properties.delta)).toEqual(["x2", "x3", "x4"])
      expect(yield* bus.dropped()).toBe(2)
    }).pipe(Effect.provide(Bus.layer)))

  it.scoped("a stalled subscriber neither blocks publishers nor holds more than its capacity", () =>
    Effect.gen(function*() {
      const bus = yield* Bus
      const stalled = yield* bus.subscribe({ capacity: 1000 }) // not read until the end
      const live = yield* bus.subscribe()
      const before = heapAfterGc()
      for (let index = 0; index < 200_000; index++) {
        // 1 KB of its own per event (a shared payload would cost nothing to keep)
        yield* bus.publish(delta(index, Buffer.alloc(1024, 48 + (index % 10)).toString("latin1")))
        if (index % 1000 === 999) yield* Stream.runDrain(Stream.take(live, 1000)) // the healthy reader keeps up
      }
      const grown = heapAfterGc() - before
      expect(yield* bus.dropped()).toBe(199_000)
      // 200 000 events of 1 KB would be over 200 MB if the stalled queue kept them all; 1000 are ~1 MB
      expect(grown).toBeLessThan(20 * 1024 * 1024)
      // what the stalled reader finds when it wakes up: the newest 1000, in order
      const backlog = Chunk.toArray(yield* Stream.runCollect(Stream.take(stalled, 1000)))
      expect(backlog.map((event) => event.type === "message.part.delta" && event.properties.delta.slice(1024))).toEqual(
        Array.from({ length: 1000 }, (_, index) => String(199_000 + index))
      )
    }).pipe(Effect.provide(Bus.layer)), 60_000)
})
