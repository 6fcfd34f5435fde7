import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import * as ToolSlots from "../src/tool/ToolSlots.js"

describe("ToolSlots", () => {
  it.effect("runs at most `size` at once; the waiting ones start in the order they asked", () =>
    Effect.gen(function*() {
      const slots = yield* ToolSlots.make(2)
      const started: Array<number> = []
      let running = 0
      let most = 0
      const gates = Array.from({ length: 6 }, () => Deferred.unsafeMake<void>(undefined as never))
      const fibers = yield* Effect.forEach(gates, (gate, n) =>
        Effect.fork(slots.run(Effect.gen(function*() {
          started.push(n)
          most = Math.max(most, ++running)
          yield* Deferred.await(gate)
          running--
        }))))
      yield* Effect.yieldNow()
      expect(started).toEqual([0, 1])
      // Finishing out of order still hands the slots to the waiters in order.
      for (const n of [1, 0, 3, 2, 5, 4]) {
        yield* Deferred.succeed(gates[n]!, undefined)
        yield* Effect.yieldNow()
      }
      yield* Fiber.joinAll(fibers)
      expect(started).toEqual([0, 1, 2, 3, 4, 5])
      expect(most).toBe(2)
    }))

  it.effect("a waiter interrupted in line leaves it; one interrupted while running frees its slot", () =>
    Effect.gen(function*() {
      const slots = yield* ToolSlots.make(1)
      const started: Array<string> = []
      const hold = (name: string) => slots.run(Effect.sync(() => started.push(name)).pipe(Effect.zipRight(Effect.never)))
      const first = yield* Effect.fork(hold("first"))
      const second = yield* Effect.fork(hold("second"))
      const third = yield* Effect.fork(hold("third"))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(second)
      yield* Fiber.interrupt(first)
      yield* Effect.yieldNow()
      expect(started).toEqual(["first", "third"])
      yield* Fiber.interrupt(third)
      const last = yield* slots.run(Effect.succeed("free again"))
      expect(last).toBe("free again")
    }))

  it.effect("thousands of waiters are served without waking each other", () =>
    Effect.gen(function*() {
      const slots = yield* ToolSlots.make(4)
      const order: Array<number> = []
      yield* Effect.forEach(Array.from({ length: 5000 }, (_, n) => n), (n) =>
        slots.run(Effect.sync(() => order.push(n)).pipe(Effect.zipRight(Effect.yieldNow()))), { concurrency: "unbounded", discard: true })
      expect(order).toEqual(Array.from({ length: 5000 }, (_, n) => n))
    }))
})
