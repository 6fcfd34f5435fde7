import type { EventLogShape, LoggedEvent } from "@agent/core"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { followLog } from "../src/EventLogFeed.js"
import type { ServerEvent } from "../src/EventFanout.js"

// The log's reader by itself, over a log in memory: it reads only while its fan-out has clients,
// and then from where the fan-out is, in order.

/** A log in memory holding events 1..`size`, counting the reads. */
const memoryLog = (size: number) => {
  const reads = { count: 0 }
  const events: Array<LoggedEvent> = Array.from({ length: size }, (_, n) => ({
    pos: n + 1,
    sessionID: undefined,
    seq: undefined,
    type: "todo.updated",
    properties: { n: n + 1 }
  }))
  const log: EventLogShape = {
    append: () => Effect.die("not appended to here"),
    after: (pos, limit) =>
      Effect.sync(() => {
        reads.count++
        return events.filter((event) => event.pos > pos).slice(0, limit)
      }),
    head: () => Effect.succeed(events.length),
    prune: () => Effect.succeed(0),
    channel: undefined // no LISTEN: only polls and wakes
  }
  return { log, reads }
}

describe("event log reader", () => {
  it.scopedLive("reads nothing while no client is connected; woken with one, reads on from the fan-out's position", () =>
    Effect.gen(function*() {
      const { log, reads } = memoryLog(2500)
      const delivered: Array<number> = []
      const state = { wanted: false, position: 0 }
      const reader = {
        wanted: () => state.wanted,
        position: () => state.position,
        deliver: (event: ServerEvent) => {
          delivered.push(event.id!)
          state.position = event.id!
        }
      }
      const wake = yield* Queue.sliding<void>(1)
      // The SqlClient is only for LISTEN, which a log without a channel does not use.
      yield* followLog(log, reader, wake, { poll: "10 millis" }).pipe(Effect.provideService(SqlClient.SqlClient, {} as SqlClient.SqlClient))
      yield* Effect.sleep("100 millis")
      expect([reads.count, delivered.length]).toEqual([0, 0])

      // A client arrives; the fan-out has jumped to the head as it was then (2000).
      state.position = 2000
      state.wanted = true
      wake.unsafeOffer(undefined)
      yield* Effect.sleep("100 millis")
      expect(delivered).toEqual(Array.from({ length: 500 }, (_, n) => 2001 + n))

      // It left: the polls go on, the reads stop.
      state.wanted = false
      yield* Effect.sleep("30 millis")
      const before = reads.count
      yield* Effect.sleep("100 millis")
      expect(reads.count).toBe(before)
    }))
})
