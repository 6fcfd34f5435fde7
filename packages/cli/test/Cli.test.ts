import { TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { agent } from "./AgentProcess.js"

describe("agent debug", () => {
  it.scopedLive("explains a permission decision with the file that set the rule", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({
        files: { "project/opencode.json": JSON.stringify({ permission: { bash: { "*": "ask", "git push *": "deny" } } }, null, 2) }
      })
      const result = yield* agent(box, ["debug", "permission", "bash", "git push origin main"])
      expect(result.code).toBe(0)
      expect(result.stdout).toMatch(/^deny {2}\(agent build\)/)
      expect(result.stdout).toContain(`config: ${box.path("project/opencode.json")} (permission.bash.git push *)`)
    }))

  it.scopedLive("lists user agents from markdown files", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({
        files: { "project/.opencode/agent/review.md": "---\ndescription: Reviews diffs\nmode: subagent\n---\nReview the diff.\n" }
      })
      const result = yield* agent(box, ["debug", "agent"])
      expect(result.code).toBe(0)
      expect(result.stdout).toMatch(/^review\s+subagent$/m)
      expect(result.stdout.split("\n")[0]).toMatch(/^build\s+primary$/)
    }))

  it.scopedLive("a broken config exits 2 with the file, line and problem", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({
        files: { "project/agent.json": '{\n  "model": "openai/gpt-5",\n  "agent": {\n    "plan": { "steps": "ten" }\n  }\n}\n' }
      })
      const result = yield* agent(box, ["debug", "config"])
      expect(result.code).toBe(2)
      expect(result.stderr).toContain(`${box.path("project/agent.json")}:4`)
      expect(result.stderr).toContain("agent.plan.steps")
      expect(result.stdout).toBe("")
    }))

  it.scopedLive("an unknown default agent is a usage error", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({ files: { "project/agent.json": { default_agent: "ghost" } } })
      const result = yield* agent(box, ["debug", "permission", "bash", "ls"])
      expect(result.code).toBe(2)
      expect(result.stderr).toContain('default agent "ghost" not found')
    }))

  it.scopedLive("a bad flag exits 2", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      expect((yield* agent(box, ["debug", "agent", "--no-such-flag"])).code).toBe(2)
    }))
})
