import { MockOpenAIServer } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { agent, project } from "./AgentProcess.js"

/** The names `agent agent list` shows. */
const agentNames = (stdout: string) => stdout.trim().split("\n").slice(1).map((line) => line.split(/\s+/)[0])

describe("config files that cannot mean what they seem to", () => {
  it.scopedLive("an empty agent.json is named in a warning; the rest of the config still applies", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([])
      const box = yield* project(server.url, {}, { "project/.agent/agent.json": "" })
      const result = yield* agent(box, ["agent", "list"])
      expect(result.code, result.stderr).toBe(0)
      expect(result.stderr).toMatch(/level=WARN .*\.agent\/agent\.json: the file is empty/)
    }))

  it.scopedLive("front matter that is never closed is a configuration error naming the file (exit 2)", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([])
      const box = yield* project(server.url, {}, {
        "project/.agent/agent/reviewer.md": "---\ndescription: Reviews diffs\nmode: subagent\npermission:\n  edit: deny\n\nYou review diffs.\n"
      })
      const result = yield* agent(box, ["agent", "list"])
      expect(result.code).toBe(2)
      expect(result.stderr).toContain(`${box.path("project/.agent/agent/reviewer.md")}:1: the front matter is never closed`)
    }))

  it.scopedLive("a binary file, or one that is not markdown, in an agents folder is named in a warning and skipped", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([])
      const box = yield* project(server.url, {}, {
        "project/.agent/agents/helper.md": "---\ndescription: Helps\nmode: subagent\n---\nYou help.\n",
        "project/.agent/agents/blob.md": "\u0000\u0001\u0002ELF\u0000binary",
        "project/.agent/agents/reviewer.yaml": "description: not an agent file\n"
      })
      const result = yield* agent(box, ["agent", "list"])
      expect(result.code, result.stderr).toBe(0)
      expect(agentNames(result.stdout)).toContain("helper")
      expect(agentNames(result.stdout)).not.toContain("blob")
      expect(result.stderr).toMatch(/level=WARN .*\.agent\/agents\/blob\.md: binary file, not markdown; skipped/)
      expect(result.stderr).toMatch(/level=WARN .*\.agent\/agents\/reviewer\.yaml: not a \.md file; skipped/)
    }))
})
