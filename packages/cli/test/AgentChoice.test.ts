import { MockOpenAIServer } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { agent, events, project } from "./AgentProcess.js"

describe("agent choice", () => {
  it.scopedLive("a default_agent naming nothing exits 2, naming the config file and the primary agents", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["never"])
      const box = yield* project(server.url, { default_agent: "ghost" })
      const result = yield* agent(box, ["run", "hello"])
      expect(result.code, result.stderr).toBe(2)
      expect(result.stderr).toContain(`${box.path("project/agent.json")}:`)
      expect(result.stderr).toContain('default agent "ghost" not found')
      expect(result.stderr).toMatch(/primary agents: build, plan/)
      expect(server.requests).toHaveLength(0)
    }))

  it.scopedLive("--agent <subagent> runs the default agent instead, saying so on stderr", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["Done."])
      const box = yield* project(server.url, { default_agent: "plan" })
      const result = yield* agent(box, ["run", "--agent", "general", "--format", "json", "hello"])
      expect(result.code, result.stderr).toBe(0)
      expect(result.stderr).toContain('agent: agent "general" is a subagent, not a primary agent; running the default agent "plan" instead')
      const sessionID = events(result.stdout).at(-1)!.sessionID as string
      const shown = yield* agent(box, ["session", "show", sessionID])
      expect(shown.stdout).toMatch(/agent\s*:?\s*plan/i)
      expect(shown.stdout).not.toMatch(/agent\s*:?\s*general/i)
    }))

  it.scopedLive("--agent <unknown> exits 2 listing the agents that can run", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["never"])
      const box = yield* project(server.url)
      const result = yield* agent(box, ["run", "--agent", "ghost", "hello"])
      expect(result.code, result.stderr).toBe(2)
      expect(result.stderr).toContain('Agent "ghost" not found. Available agents: build, plan')
      expect(server.requests).toHaveLength(0)
    }))
})
