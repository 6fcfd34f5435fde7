import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { fileURLToPath } from "node:url"
import { agent, events, project } from "./AgentProcess.js"

const { text, toolCall } = ScriptedModel

/** A small stdio MCP server (core's test fixture) that can misbehave on request. */
const mcpFixture = fileURLToPath(new URL("../../core/test/mcp/fixtures/server.mjs", import.meta.url))

// Before the stdio transport caught what a server writes, both runs ended with exit 1 and a
// stack trace ("ReadBuffer exceeded maximum size").
describe("agent run with a misbehaving MCP server", () => {
  it.scopedLive("11 MB of garbage at a server's start-up: the run finishes, the server is reported failed", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["Fine."])
      const box = yield* project(server.url, {
        mcp: { banner: { type: "local", command: ["node", mcpFixture, "--garbage-mb", "11"] } }
      })
      const result = yield* agent(box, ["run", "--format", "json", "hello"], { env: { AGENT_MCP_GRACE_MS: "15000" } })
      expect(result.code, result.stderr).toBe(0)
      expect(result.stderr).toMatch(
        /level=WARN .*MCP server banner: the server wrote more than 10 MB to stdout without a line break before answering initialize/
      )
      expect(events(result.stdout).at(-1)).toMatchObject({ type: "result", status: "completed", exitCode: 0, text: "Fine." })

      const list = yield* agent(box, ["mcp", "list", "--format", "json"], { env: { AGENT_MCP_GRACE_MS: "15000" } })
      expect(list.code, list.stderr).toBe(0)
      const servers = JSON.parse(list.stdout) as Array<{ name: string; status: string; error?: string }>
      expect(servers).toEqual([
        expect.objectContaining({
          name: "banner",
          status: "failed",
          error: expect.stringContaining("the server wrote more than 10 MB to stdout without a line break")
        })
      ])
    }), 60_000)

  it.scopedLive("an answer over 10 MB is a tool error the model sees; the run goes on to its answer", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [text("Calling."), toolCall("fx_huge", { mb: 11 })],
        "The tool failed."
      ])
      const box = yield* project(server.url, {
        permission: { "fx_*": "allow" },
        mcp: { fx: { type: "local", command: ["node", mcpFixture] } }
      })
      const result = yield* agent(box, ["run", "--format", "json", "call huge"], { env: { AGENT_MCP_GRACE_MS: "15000" } })
      expect(result.code, result.stderr).toBe(0)
      const lines = events(result.stdout)
      const tool = lines.find((line) => line.type === "tool_use")
      expect(tool?.part.state, result.stdout.slice(0, 2_000)).toMatchObject({
        status: "error",
        error: expect.stringContaining("the answer was 11.0 MB on one line, more than the 10 MB one message may take")
      })
      expect(lines.at(-1)).toMatchObject({ type: "result", status: "completed", exitCode: 0, text: "The tool failed." })
      // The model was told about the failure in the next request.
      expect(JSON.stringify(server.requests[1]!.messages)).toContain("more than the 10 MB one message may take")
    }), 60_000)
})
