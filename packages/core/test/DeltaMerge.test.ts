import { makeTimedDeltaMerge } from "@agent/core"
import type { BusEvent, BusEventOf, MessageID, PartID, SessionID } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"

const delta = (partID: string, text: string): BusEvent => ({
  type: "message.part.delta",
  properties: { sessionID: "ses_1" as SessionID, messageID: "msg_1" as MessageID, partID: partID as PartID, field: "text", delta: text }
})
const status: BusEvent = { type: "session.status", properties: { sessionID: "ses_1" as SessionID, status: { type: "busy" } } }

/** The sleeps the test clock has pending: a timer the process would wake for. */
const pendingSleeps = Effect.map(TestClock.sleeps(), (sleeps) => [...sleeps])

describe("makeTimedDeltaMerge", () => {
  it.scoped("hands held text on a window after the first delta, and sets no timer while nothing is held", () =>
    Effect.gen(function*() {
      const out: Array<BusEventOf<"message.part.delta">> = []
      const merge = yield* makeTimedDeltaMerge("50 millis", (event) => out.push(event))
      yield* Effect.yieldNow()
      // Idle: no timer at all (an idle server does not wake for the merge).
      expect(yield* pendingSleeps).toHaveLength(0)
      expect(merge.pass(delta("prt_a", "Hel"))).toBe(true)
      expect(merge.pass(delta("prt_a", "lo"))).toBe(true)
      yield* Effect.yieldNow()
      expect(yield* pendingSleeps).toHaveLength(1)
      yield* TestClock.adjust("49 millis")
      expect(out).toHaveLength(0)
      yield* TestClock.adjust("1 millis")
      expect(out.map((event) => event.properties.delta)).toEqual(["Hello"])
      yield* Effect.yieldNow()
      expect(yield* pendingSleeps).toHaveLength(0)
    }))

  it.scoped("flushes held text before any other event, in the order the parts first streamed", () =>
    Effect.gen(function*() {
      const out: Array<string> = []
      const merge = yield* makeTimedDeltaMerge("50 millis", (event) => out.push(`${event.properties.partID}:${event.properties.delta}`))
      merge.pass(delta("prt_b", "one "))
      merge.pass(delta("prt_a", "two"))
      merge.pass(delta("prt_b", "three"))
      expect(merge.pass(status)).toBe(false)
      expect(out).toEqual(["prt_b:one three", "prt_a:two"])
      // The timer the first delta set finds nothing left, and emits nothing twice.
      yield* TestClock.adjust("60 millis")
      expect(out).toHaveLength(2)
    }))
})
