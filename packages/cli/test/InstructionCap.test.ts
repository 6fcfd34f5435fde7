import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { agent, project } from "./AgentProcess.js"

const { toolCall } = ScriptedModel

/** `bytes` of AGENTS.md: a first rule, filler lines, and a last rule. */
const hugeInstructions = (bytes: number) => {
  const head = "FIRST-RULE: always run the tests.\n"
  const tail = "LAST-RULE: never push on Fridays.\n"
  const line = "Some context about the project that goes on and on.\n"
  return head + line.repeat(Math.ceil((bytes - head.length - tail.length) / line.length)) + tail
}

/** The system prompt of a chat completion request. */
const systemOf = (request: { readonly messages: ReadonlyArray<{ readonly role: string }> }) =>
  JSON.stringify(request.messages.filter((message) => message.role === "system"))

describe("instruction files", () => {
  it.scopedLive("a 10 MB AGENTS.md is cut to 64 KB with a note, warned about once, in every request", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[toolCall("read", { filePath: "a.txt" })], "Done."])
      const box = yield* project(server.url, {}, { "project/AGENTS.md": hugeInstructions(10 * 1024 * 1024), "project/a.txt": "alpha" })
      const result = yield* agent(box, ["run", "--format", "json", "read a.txt"])
      expect(result.code, result.stderr).toBe(0)
      expect(server.requests).toHaveLength(2)
      for (const request of server.requests) {
        const system = systemOf(request)
        expect(system).toContain("FIRST-RULE")
        expect(system).not.toContain("LAST-RULE")
        expect(system).toMatch(/Cut here: \S*AGENTS\.md has 1048\d{4} bytes, and only its first 655\d\d bytes are included/)
        expect(JSON.stringify(request).length).toBeLessThan(100_000)
      }
      const warnings = result.stderr.split("\n").filter((line) => line.includes("AGENTS.md"))
      expect(warnings, result.stderr).toHaveLength(1)
      expect(warnings[0]).toMatch(/level=WARN .*AGENTS\.md has 1048\d{4} bytes; only its first 655\d\d are sent \(the cap of 65536 bytes per instruction file/)
    }))

  it.scopedLive("instruction_limits sets the caps: per file, then for all files together", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["Done."])
      const box = yield* project(server.url, { instructions: ["RULES.md"], instruction_limits: { max_bytes: 3000, max_total_bytes: 4000 } }, {
        "project/AGENTS.md": hugeInstructions(5000),
        "project/RULES.md": hugeInstructions(2000).replace("FIRST-RULE", "RULES-START")
      })
      const result = yield* agent(box, ["run", "--format", "json", "hi"])
      expect(result.code, result.stderr).toBe(0)
      const system = systemOf(server.requests[0]!)
      expect(system).toMatch(/AGENTS\.md has 5\d{3} bytes, and only its first 3000 bytes are included \(the cap of 3000 bytes per instruction file/)
      // RULES.md comes second and gets the 1000 bytes left.
      expect(system).toContain("RULES-START")
      expect(system).toMatch(/RULES\.md has 2\d{3} bytes, and only its first 10\d\d bytes are included \(the cap of 4000 bytes for all instruction files together/)
    }))
})
