import { Bus } from "@agent/core"
import type { SessionID } from "@agent/domain"
import { TestData } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { RunningTools } from "../src/cluster/RunningTools.js"

// What a stopping replica's handover waits for: the tool calls of a session still pending or running here.
const layer = RunningTools.layer.pipe(Layer.provideMerge(Bus.layer))

/** Lets the tracker's subscription take what the bus holds. */
const settle = Effect.sleep("20 millis")

describe("RunningTools", () => {
  it.scopedLive("follows each session's calls from pending to done, one session apart from another", () =>
    Effect.gen(function*() {
      const bus = yield* Bus
      const tools = yield* RunningTools
      const a = TestData.userMessage("ses_a" as SessionID)
      const b = TestData.userMessage("ses_b" as SessionID)
      const first = TestData.toolPart(a, "pending")
      const second = TestData.toolPart(b, "running")
      const publish = (part: ReturnType<typeof TestData.toolPart>) => bus.publish({ type: "message.part.updated", properties: { part } })

      yield* publish(first)
      yield* publish(second)
      yield* publish(TestData.textPart(a, "not a tool call") as never)
      yield* settle
      expect([...tools.of("ses_a")]).toEqual([first.id])
      expect([...tools.of("ses_b")]).toEqual([second.id])

      yield* publish({ ...first, state: { status: "running", input: {}, time: { start: 1 } } })
      yield* settle
      expect([...tools.of("ses_a")]).toEqual([first.id])

      yield* publish({ ...first, state: { status: "completed", input: {}, output: "ok", title: "bash", metadata: {}, time: { start: 1, end: 2 } } })
      yield* publish({ ...second, state: { status: "error", input: {}, error: "Tool execution was interrupted", time: { start: 1, end: 2 } } })
      yield* settle
      expect(tools.of("ses_a").size).toBe(0)
      expect(tools.of("ses_b").size).toBe(0)
      expect(tools.of("ses_unknown").size).toBe(0)
    }).pipe(Effect.provide(layer)), { timeout: 10_000 })
})
