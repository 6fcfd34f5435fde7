import { MockOpenAIServer, ScriptedModel, TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { agent, mockConfig } from "./AgentProcess.js"

/** A project whose title model answers nothing but errors (its script is empty: HTTP 400). */
const failingTitles = Effect.gen(function*() {
  // The answer waits a little, so the title call (sent alongside it) has failed before the run ends.
  const answer = [ScriptedModel.delay(1500), ScriptedModel.text("Hi.")]
  const server = yield* MockOpenAIServer.start([answer, answer])
  const titles = yield* MockOpenAIServer.start([])
  const box = yield* TestInstance.sandbox({ files: { "project/agent.json": mockConfig(server.url, titles.url) } })
  return { box, titles }
})

/** A stack frame, on its own line or escaped inside a logfmt value. */
const stackFrame = /(\n|\\n)\s+at \S+/

describe("a failed background call", () => {
  it.scopedLive("the title call failing prints one warning line and no stack; the stack comes at debug level", () =>
    Effect.gen(function*() {
      const { box, titles } = yield* failingTitles
      const result = yield* agent(box, ["run", "hello"])
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout).toBe("Hi.\n")
      expect(titles.requests.length).toBe(1)
      const warnings = result.stderr.split("\n").filter((line) => line.includes("title generation failed"))
      expect(warnings, result.stderr).toHaveLength(1)
      expect(warnings[0]).toMatch(/level=WARN/)
      expect(result.stderr).not.toMatch(stackFrame)

      const debug = yield* agent(box, ["run", "hello"], { env: { AGENT_LOG_LEVEL: "debug" } })
      expect(debug.code, debug.stderr).toBe(0)
      expect(debug.stderr).toMatch(/title generation failed/)
      expect(debug.stderr).toMatch(/level=DEBUG.*title generation failed.*at \S+/)
    }))
})
