import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Tool from "../../src/tool/Tool.js"
import { eventually, fixtureCommand, makeContext, runTool, startMcp, toolById } from "./helpers.js"

// Servers that write what a stdio MCP client must not take on trust. Before the transport
// guarded its stdout handler, the first two took the whole process down.
describe("servers that write too much or write garbage", () => {
  it.scopedLive("11 MB without a line break at start-up: that server fails, naming the problem; the others work", () =>
    Effect.gen(function*() {
      const harness = yield* startMcp({
        mcp: {
          banner: { type: "local", command: fixtureCommand("--garbage-mb", "11") },
          fixture: { type: "local", command: fixtureCommand() }
        }
      })
      const { mcp } = harness
      yield* eventually(
        "banner failed and fixture connected",
        Effect.map(mcp.status(), (status) => status.banner?.status === "failed" && status.fixture?.status === "connected"),
        "30 seconds"
      )
      expect((yield* mcp.status()).banner!.error).toBe(
        "the server wrote more than 10 MB to stdout without a line break before answering initialize " +
          "(stdout must carry only JSON-RPC messages, one per line)"
      )
      expect((yield* mcp.tools()).some((tool) => tool.id.startsWith("banner_"))).toBe(false)
      const { context } = makeContext()
      expect((yield* runTool(yield* toolById(mcp, "fixture_ok"), { text: "still here" }, context)).output).toBe(
        "ok: still here"
      )
    }), 60_000)

  it.scopedLive("an answer over 10 MB is a tool error for that call; the connection goes on", () =>
    Effect.gen(function*() {
      const { mcp } = yield* startMcp({ mcp: { fx: { type: "local", command: fixtureCommand() } } })
      yield* mcp.ready("20 seconds")
      const huge = yield* toolById(mcp, "fx_huge")
      const { context } = makeContext()

      const error = yield* Effect.flip(runTool(huge, { mb: 11 }, context))
      expect(error).toBeInstanceOf(Tool.ToolExecutionError)
      expect(error.message).toMatch(
        /^The MCP tool huge \(server fx\) failed: MCP error -32603: the answer was 11\.0 MB on one line, more than the 10 MB one message may take; it was dropped$/
      )
      // The same connection answers the next calls, a large answer under the limit included.
      expect((yield* runTool(yield* toolById(mcp, "fx_ok"), { text: "after" }, context)).output).toBe("ok: after")
      expect((yield* mcp.status()).fx).toEqual({ status: "connected" })
      const big = yield* runTool(huge, { mb: 2 }, context)
      expect(big.output).toContain("yyyy")
    }), 60_000)

  it.scopedLive("a notification over 10 MB is skipped; the call it came with answers", () =>
    Effect.gen(function*() {
      const { mcp } = yield* startMcp({ mcp: { fx: { type: "local", command: fixtureCommand() } } })
      yield* mcp.ready("20 seconds")
      const { context, updates } = makeContext()
      expect((yield* runTool(yield* toolById(mcp, "fx_shout"), { mb: 11 }, context)).output).toBe("shouted")
      expect(updates).toEqual([])
      expect((yield* runTool(yield* toolById(mcp, "fx_ok"), { text: "after" }, context)).output).toBe("ok: after")
    }), 60_000)

  it.scopedLive("lines that are not JSON-RPC, and answers to nothing, are skipped", () =>
    Effect.gen(function*() {
      const { mcp } = yield* startMcp({ mcp: { noisy: { type: "local", command: fixtureCommand("--noise") } } })
      yield* mcp.ready("20 seconds")
      expect((yield* mcp.status()).noisy).toEqual({ status: "connected" })
      const { context } = makeContext()
      expect((yield* runTool(yield* toolById(mcp, "noisy_ok"), { text: "a" }, context)).output).toBe("ok: a")
      expect((yield* runTool(yield* toolById(mcp, "noisy_ok"), { text: "b" }, context)).output).toBe("ok: b")
    }), 60_000)
})
