import type { BusEvent } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as Tool from "../../src/tool/Tool.js"
import {
  eventually,
  everythingBin,
  fixtureCommand,
  isAlive,
  makeContext,
  runTool,
  startMcp,
  toolById
} from "./helpers.js"

const statusEvents = (events: ReadonlyArray<BusEvent>, server: string) =>
  events.flatMap((event) =>
    event.type === "mcp.status" && event.properties.server === server ? [event.properties.status.status] : []
  )

describe("servers that fail", () => {
  it.scopedLive("a missing command, a silent server and one that dies at start never hold up the others", () =>
    Effect.gen(function*() {
      const harness = yield* startMcp(
        {
          mcp: {
            everything: { type: "local", command: [everythingBin] },
            missing: { type: "local", command: ["agent-no-such-mcp-server", "--flag"] },
            silent: { type: "local", command: fixtureCommand("--hang") },
            broken: { type: "local", command: fixtureCommand("--exit", "2") },
            fixture: { type: "local", command: fixtureCommand() }
          }
        },
        { AGENT_MCP_GRACE_MS: "4000" }
      )
      const { mcp } = harness
      // Building the layer waits for no server (the silent one would hold it up for the whole grace period).
      expect(harness.buildMs).toBeLessThan(3_900)
      const started = Date.now()
      yield* mcp.ready()
      const waited = Date.now() - started
      // The silent server never settles, so ready waits the grace period from the env, then returns
      // with that server still connecting.
      expect(waited).toBeGreaterThanOrEqual(3_950)
      expect((yield* mcp.status()).silent).toEqual({ status: "connecting" })

      // The others are not held up (on a loaded machine a server may need longer than the grace to start).
      yield* eventually(
        "the working servers connected",
        Effect.map(mcp.status(), (status) => status.everything?.status === "connected" && status.fixture?.status === "connected"),
        "30 seconds"
      )
      const status = yield* mcp.status()
      // Broken servers are retried in the background, so they may be between attempts.
      expect(["failed", "connecting"]).toContain(status.missing!.status)
      expect(status.missing!.error).toBe("command not found: agent-no-such-mcp-server")
      expect(["failed", "connecting"]).toContain(status.broken!.status)
      expect(status.broken!.error).toBe(
        "the server stopped during initialize: the server process exited with code 2: fatal: the fixture was told to exit"
      )
      expect(statusEvents(harness.events, "missing").slice(0, 2)).toEqual(["connecting", "failed"])

      const ids = (yield* mcp.tools()).map((tool) => tool.id)
      expect(ids).toContain("everything_echo")
      expect(ids).toContain("fixture_ok")
      expect(ids.filter((id) => /^(missing|silent|broken)_/.test(id))).toEqual([])
      const { context } = makeContext()
      expect((yield* runTool(yield* toolById(mcp, "everything_echo"), { message: "hi" }, context)).output).toBe("Echo: hi")
    }), 60_000)

  it.scopedLive("the connect timeout is honoured, and ready returns as soon as every server has settled", () =>
    Effect.gen(function*() {
      const { mcp } = yield* startMcp({
        mcp: {
          silent: { type: "local", command: fixtureCommand("--hang"), timeout: 800 },
          fixture: { type: "local", command: fixtureCommand() }
        }
      })
      const started = Date.now()
      yield* mcp.ready("10 seconds")
      const waited = Date.now() - started
      // Settled by the 800 ms connect timeout, long before the 10 s grace.
      expect(waited).toBeGreaterThanOrEqual(750)
      expect(waited).toBeLessThan(9_000)
      expect((yield* mcp.status()).silent).toEqual({
        status: "failed",
        error: "the server did not answer initialize within 800 ms"
      })
    }), 60_000)

  it.scopedLive("a crash in the middle of a call fails that call clearly; the server comes back, the others keep working", () =>
    Effect.gen(function*() {
      const harness = yield* startMcp({
        mcp: {
          crashy: { type: "local", command: fixtureCommand() },
          everything: { type: "local", command: [everythingBin] }
        }
      })
      const { mcp } = harness
      yield* mcp.ready("20 seconds")
      const crash = yield* toolById(mcp, "crashy_crash")
      const ok = yield* toolById(mcp, "crashy_ok")
      const { context } = makeContext()

      const error = yield* Effect.flip(runTool(crash, {}, context))
      expect(error).toBeInstanceOf(Tool.ToolExecutionError)
      expect(error.message).toBe(
        "The MCP server crashy closed the connection during the call to crash: the server process exited with code 3: fatal: boom in the middle of a call."
      )

      yield* eventually("crashy failed", Effect.map(mcp.status(), (status) => status.crashy!.status === "failed"))
      expect((yield* mcp.status()).crashy!.error).toBe(
        "the connection closed: the server process exited with code 3: fatal: boom in the middle of a call"
      )
      expect((yield* mcp.tools()).some((tool) => tool.id.startsWith("crashy_"))).toBe(false)
      const offline = yield* Effect.flip(runTool(ok, { text: "x" }, context))
      expect(offline.message).toMatch(/^The MCP server crashy is not connected \((failed|connecting): the connection closed: .*\), so ok cannot be called right now\.$/)
      expect((yield* runTool(yield* toolById(mcp, "everything_echo"), { message: "fine" }, context)).output).toBe("Echo: fine")

      // Reconnected after the first backoff step (1 s); the tool object from before still works.
      yield* eventually("crashy reconnected", Effect.map(mcp.status(), (status) => status.crashy!.status === "connected"))
      expect((yield* runTool(ok, { text: "again" }, context)).output).toBe("ok: again")
      expect(statusEvents(harness.events, "crashy")).toEqual(["connecting", "connected", "failed", "connecting", "connected"])
    }), 60_000)

  it.scopedLive("closing the layer stops every server process, including children and ones that ignore stdin", () =>
    Effect.gen(function*() {
      const harness = yield* startMcp({
        mcp: {
          parent: {
            type: "local",
            command: fixtureCommand("--pid-file", "parent.pid", "--grandchild", "grandchild.pid")
          },
          stubborn: { type: "local", command: fixtureCommand("--hang", "--pid-file", "stubborn.pid") }
        }
      })
      const { mcp, box } = harness
      // The stubborn server never settles, so wait for the parent rather than for ready's grace period.
      yield* eventually(
        "parent connected",
        Effect.map(mcp.status(), (status) => status.parent?.status === "connected"),
        "20 seconds"
      )
      // Relative to the server's working directory, which defaults to the project directory.
      const pid = (name: string) => Number(fs.readFileSync(box.path(`project/${name}`), "utf8"))
      yield* eventually(
        "grandchild and stubborn pids written",
        Effect.sync(() => ["grandchild.pid", "stubborn.pid"].every((name) => fs.existsSync(box.path(`project/${name}`))))
      )
      const pids = { parent: pid("parent.pid"), grandchild: pid("grandchild.pid"), stubborn: pid("stubborn.pid") }
      expect(Object.values(pids).map(isAlive)).toEqual([true, true, true])

      // Closing must not hang on the server that ignores stdin (it is killed, not waited for).
      yield* harness.close.pipe(
        Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("closing the MCP layer hung") })
      )
      expect(isAlive(pids.parent)).toBe(false)
      expect(isAlive(pids.stubborn)).toBe(false)
      // The orphaned grandchild is reaped by init, which can take a moment after it was killed.
      yield* eventually("grandchild gone", Effect.sync(() => !isAlive(pids.grandchild)), "2 seconds")
    }), 60_000)

  it.scopedLive("tools/list_changed refreshes the tools and publishes mcp.tools.changed", () =>
    Effect.gen(function*() {
      const harness = yield* startMcp({ mcp: { "my server": { type: "local", command: fixtureCommand() } } })
      const { mcp } = harness
      yield* mcp.ready("20 seconds")
      expect((yield* mcp.tools()).map((tool) => tool.id)).not.toContain("my_server_later_one")
      const { context } = makeContext()
      yield* runTool(yield* toolById(mcp, "my_server_add_tool"), { name: "later.one" }, context)
      yield* eventually(
        "mcp.tools.changed",
        Effect.sync(() => harness.events.some((event) => event.type === "mcp.tools.changed" && event.properties.server === "my server"))
      )
      const later = yield* toolById(mcp, "my_server_later_one")
      expect((yield* runTool(later, {}, context)).output).toBe("called later.one")
    }), 60_000)

  it.scopedLive("disabled servers are not started", () =>
    Effect.gen(function*() {
      const { mcp, box } = yield* startMcp({
        mcp: {
          off: { type: "local", command: fixtureCommand("--pid-file", "off.pid"), enabled: false },
          legacy: { enabled: false },
          remote: { type: "remote", url: "http://127.0.0.1:9/mcp", enabled: false }
        }
      })
      const started = Date.now()
      yield* mcp.ready("5 seconds")
      // At once, not after the 5 s grace.
      expect(Date.now() - started).toBeLessThan(4_000)
      expect(yield* mcp.status()).toEqual({
        off: { status: "disabled" },
        legacy: { status: "disabled" },
        remote: { status: "disabled" }
      })
      yield* Effect.sleep("500 millis")
      expect(fs.existsSync(box.path("project/off.pid"))).toBe(false)
      expect(yield* mcp.tools()).toEqual([])
    }), 30_000)

  it.scopedLive("aborting the run cancels a call in flight", () =>
    Effect.gen(function*() {
      const { mcp } = yield* startMcp({ mcp: { fx: { type: "local", command: fixtureCommand() } } })
      yield* mcp.ready("20 seconds")
      const controller = new AbortController()
      const { context } = makeContext({ abort: controller.signal })
      setTimeout(() => controller.abort(), 300)
      const started = Date.now()
      const error = yield* Effect.flip(runTool(yield* toolById(mcp, "fx_slow"), { ms: 20_000 }, context))
      expect(error.message).toBe("The call to slow was aborted.")
      // Well before the call's own 20 s.
      expect(Date.now() - started).toBeLessThan(15_000)
      // The connection survives a cancelled call.
      const again = makeContext()
      expect((yield* runTool(yield* toolById(mcp, "fx_ok"), { text: "y" }, again.context)).output).toBe("ok: y")
    }), 60_000)

  it.scopedLive("a per-server timeout is also the call timeout", () =>
    Effect.gen(function*() {
      const { mcp } = yield* startMcp({
        mcp: { fx: { type: "local", command: fixtureCommand(), timeout: 5_000 } },
        experimental: { mcp_timeout: 200 }
      })
      yield* mcp.ready("20 seconds")
      const { context } = makeContext()
      // 1 s is beyond mcp_timeout but within the server's own timeout, which wins.
      expect((yield* runTool(yield* toolById(mcp, "fx_slow"), { ms: 1_000 }, context)).output).toBe("slept 1000 ms")
    }), 60_000)

  it.scopedLive("a server that reports progress keeps its call alive", () =>
    Effect.gen(function*() {
      const { mcp } = yield* startMcp({ mcp: { fx: { type: "local", command: fixtureCommand(), timeout: 2_000 } } })
      yield* mcp.ready("20 seconds")
      const { context, updates } = makeContext()
      const started = Date.now()
      const result = yield* runTool(yield* toolById(mcp, "fx_progress"), { steps: 8, interval_ms: 500 }, context)
      expect(result.output).toBe("done after 8 steps")
      expect(Date.now() - started).toBeGreaterThan(3_900)
      expect(updates).toHaveLength(8)
      const silent = yield* Effect.flip(runTool(yield* toolById(mcp, "fx_slow"), { ms: 4_000 }, context))
      expect(silent.message).toMatch(/did not answer within 2000 ms/)
    }), 60_000)
})
