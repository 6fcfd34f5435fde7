import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { agent, events, project } from "./AgentProcess.js"

const { toolCall } = ScriptedModel

/** A bash call that writes when it started and ended (ns) into `times/<n>`. */
const timedCall = (n: number, sleep: string) =>
  toolCall("bash", {
    command: `mkdir -p times; s=$(date +%s%N); sleep ${sleep}; echo "$s $(date +%s%N)" > times/${n}`,
    description: `Timed call ${n}`
  })

/** Each call's [start, end], by call number. */
const intervals = (dir: string): Map<number, readonly [bigint, bigint]> =>
  new Map(fs.readdirSync(dir).map((name) => {
    const [start, end] = fs.readFileSync(path.join(dir, name), "utf8").trim().split(" ").map(BigInt)
    return [Number(name), [start!, end!] as const]
  }))

/** The most calls that were running at the same moment. */
const maxOverlap = (spans: Iterable<readonly [bigint, bigint]>) => {
  // Ends sort before starts at the same instant: a slot handed on is not an overlap.
  const edges = [...spans].flatMap(([start, end]) => [[start, 1], [end, -1]] as const)
    .sort((a, b) => (a[0] === b[0] ? a[1] - b[1] : a[0] < b[0] ? -1 : 1))
  let running = 0
  let most = 0
  for (const [, delta] of edges) most = Math.max(most, (running += delta))
  return most
}

describe("tool calls of one step", () => {
  it.scopedLive("run at most 10 at once by default; all 40 run and are stored", () =>
    Effect.gen(function*() {
      const calls = Array.from({ length: 40 }, (_, n) => timedCall(n, "1"))
      const server = yield* MockOpenAIServer.start([calls, "All done."])
      const box = yield* project(server.url)
      const result = yield* agent(box, ["run", "--auto-approve", "--format", "json", "time them"])
      expect(result.code, result.stderr).toBe(0)
      const tools = events(result.stdout).filter((line) => line.type === "tool_use")
      expect(tools.map((line) => line.part.state.status), JSON.stringify(tools.filter((line) => line.part.state.status !== "completed"))).toEqual(Array(40).fill("completed"))
      const spans = intervals(box.path("project/times"))
      expect(spans.size).toBe(40)
      const most = maxOverlap(spans.values())
      expect(most).toBeLessThanOrEqual(10)
      // Still in parallel.
      expect(most).toBeGreaterThan(1)
      // Every result went back to the model.
      expect(JSON.stringify(server.requests[1]!.messages).match(/"role":"tool"/g)).toHaveLength(40)
    }), 60_000)

  it.scopedLive("`tool_concurrency` sets the cap; the calls waiting start in the order the model made them", () =>
    Effect.gen(function*() {
      const calls = Array.from({ length: 6 }, (_, n) => timedCall(n, "0.1"))
      const server = yield* MockOpenAIServer.start([calls, "All done."])
      const box = yield* project(server.url, { tool_concurrency: 1 })
      const result = yield* agent(box, ["run", "--auto-approve", "--format", "json", "time them"])
      expect(result.code, result.stderr).toBe(0)
      const spans = intervals(box.path("project/times"))
      expect(maxOverlap(spans.values())).toBe(1)
      const order = [...spans.entries()].sort((a, b) => (a[1][0] < b[1][0] ? -1 : 1)).map(([n]) => n)
      expect(order).toEqual([0, 1, 2, 3, 4, 5])
    }), 60_000)
})
