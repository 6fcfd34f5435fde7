import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import * as Acp from "@agentclientprotocol/sdk"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { bin, editor, type Editor, failure, initialize, project, textOf, until } from "./AcpClient.js"

const { text, toolCall } = ScriptedModel

/** A small stdio MCP server (core's test fixture, on @modelcontextprotocol/sdk). */
const mcpFixture = fileURLToPath(new URL("../../core/test/mcp/fixtures/server.mjs", import.meta.url))

const newSession = (client: Editor, cwd: string, mcpServers: Array<Acp.McpServer> = []) =>
  Effect.promise(() => client.agent.request("session/new", { cwd, mcpServers }))

const chunks = (client: Editor, sessionId: string, kind: Acp.SessionUpdate["sessionUpdate"]) => textOf(client.of(sessionId, kind))

/** The CLI itself, run in the project (`agent session list`, `agent session show`). */
const cli = (cwd: string, env: Record<string, string | undefined>, args: ReadonlyArray<string>) =>
  execFileSync(process.execPath, [bin, ...args], { cwd, env: env as NodeJS.ProcessEnv, encoding: "utf8" })

describe("agent acp sessions", () => {
  it.scopedLive("cancel mid-stream answers the prompt cancelled at once; load replays the whole conversation; list names it", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [text("Reading first."), toolCall("read", { filePath: "a.txt" })],
        "It says alpha.",
        [text("Starting the long answer."), { delay: 20_000 }, text("never said")]
      ])
      const box = yield* project(server.url, {}, { "project/a.txt": "alpha\n" })
      const client = yield* editor(box)
      yield* initialize(client)
      const { sessionId } = yield* newSession(client, box.instance.directory)
      yield* Effect.promise(() => client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "what does a.txt say?" }] }))

      const pending = client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "tell me more" }] })
      yield* until(() => chunks(client, sessionId, "agent_message_chunk").includes("Starting the long answer."), "the first words")
      // A second prompt while the first runs is refused, clearly.
      const busy = yield* failure(() => client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "again" }] }))
      expect(busy?.message).toMatch(/already answering a prompt/)
      const started = Date.now()
      yield* Effect.promise(() => client.agent.notify("session/cancel", { sessionId }))
      const cancelled = yield* Effect.promise(() => pending)
      const took = Date.now() - started
      expect(cancelled.stopReason).toBe("cancelled")
      // Answered without waiting for the model's 20 s pause (the figure is printed for the record).
      expect(took).toBeLessThan(20_000)
      console.log(`session/cancel answered in ${took} ms`)

      // Another editor process loads it: every message comes back, in order, before the answer.
      const other = yield* editor(box)
      yield* initialize(other)
      const loaded = yield* Effect.promise(() => other.agent.request("session/load", { sessionId, cwd: box.instance.directory, mcpServers: [] }))
      expect(loaded.modes?.currentModeId).toBe("build")
      const replayed = other.of(sessionId).map((update) => update.sessionUpdate)
      expect(replayed.slice(0, 5)).toEqual(["user_message_chunk", "agent_message_chunk", "tool_call", "agent_message_chunk", "user_message_chunk"])
      expect(chunks(other, sessionId, "user_message_chunk")).toBe("what does a.txt say?tell me more")
      expect(chunks(other, sessionId, "agent_message_chunk")).toBe("Reading first.It says alpha.Starting the long answer.")
      expect(other.of(sessionId, "tool_call")[0]).toMatchObject({ kind: "read", status: "completed" })

      const listed = yield* Effect.promise(() => other.agent.request("session/list", { cwd: box.instance.directory }))
      expect(listed.sessions.map((session) => session.sessionId)).toContain(sessionId)
      expect(listed.sessions.find((session) => session.sessionId === sessionId)?.cwd).toBe(box.instance.directory)
      // The same store as `agent run`: the CLI lists the editor's session.
      const list = JSON.parse(cli(box.instance.directory, box.instance.env, ["session", "list", "--format", "json"])) as Array<{ id: string }>
      expect(list.map((session) => session.id)).toContain(sessionId)
    }))

  it.scopedLive("a client that disconnects mid-turn: the run is aborted and stored, the process exits 0", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[text("Working on it."), { delay: 20_000 }, text("never said")]])
      const box = yield* project(server.url)
      const client = yield* editor(box)
      yield* initialize(client)
      const { sessionId } = yield* newSession(client, box.instance.directory)
      void client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "work" }] }).catch(() => undefined)
      yield* until(() => chunks(client, sessionId, "agent_message_chunk").includes("Working on it."), "the first words")
      client.child.stdin.end()
      const code = yield* Effect.promise(() => client.exited)
      expect(code, client.stderr()).toBe(0)
      const shown = cli(box.instance.directory, box.instance.env, ["session", "show", sessionId, "--format", "json"])
      expect(shown).toContain("Working on it.")
      expect(shown).toMatch(/MessageAbortedError/)
    }))

  it.scopedLive("the client's MCP server is connected for its session and its tool is used", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[toolCall("fixture_ok", { text: "from the editor" })], "The server said ok."])
      const box = yield* project(server.url, { permission: { "fixture_*": "allow" } })
      const client = yield* editor(box)
      yield* initialize(client)
      const { sessionId } = yield* newSession(client, box.instance.directory, [
        { name: "fixture", command: process.execPath, args: [mcpFixture], env: [] }
      ])
      const response = yield* Effect.promise(() => client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "call it" }] }))
      expect(response.stopReason, client.stderr()).toBe("end_turn")
      expect(server.requests[0]!.tools?.map((tool) => tool.function.name)).toContain("fixture_ok")
      const done = client.of(sessionId, "tool_call_update").at(-1)
      expect(done).toMatchObject({ status: "completed", content: [{ type: "content", content: { type: "text", text: "ok: from the editor" } }] })
    }))

  it.scopedLive("bad input gets clear JSON-RPC errors, and the agent keeps serving", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["Still here."])
      const box = yield* project(server.url)
      const client = yield* editor(box)
      yield* initialize(client)
      const unknown = yield* failure(() => client.agent.request("session/prompt", { sessionId: "ses_nope", prompt: [{ type: "text", text: "hi" }] }))
      expect(unknown).toMatchObject({ code: -32002 })
      expect(unknown?.message).toMatch(/ses_nope|not found/i)
      const relative = yield* failure(() => client.agent.request("session/new", { cwd: "relative/dir", mcpServers: [] }))
      expect(relative).toMatchObject({ code: -32602 })
      expect(relative?.message).toMatch(/cwd must be an absolute path/)
      const malformed = yield* failure(() => client.agent.request("session/new", { cwd: 42 } as never))
      expect(malformed).toMatchObject({ code: -32602 })
      const { sessionId } = yield* newSession(client, box.instance.directory)
      const mode = yield* failure(() => client.agent.request("session/set_mode", { sessionId, modeId: "nosuch" }))
      expect(mode?.message).toMatch(/no such mode: nosuch \(modes: .*build/)
      const model = yield* failure(() => client.agent.request("session/set_config_option", { sessionId, configId: "model", value: "mock/nosuch" }))
      expect(model?.message).toMatch(/not a configured, usable model: mock\/nosuch/)
      const chosen = yield* Effect.promise(() => client.agent.request("session/set_config_option", { sessionId, configId: "model", value: "mock/model-b" }))
      expect(chosen.configOptions[0]).toMatchObject({ currentValue: "mock/model-b" })
      const response = yield* Effect.promise(() => client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hi" }] }))
      expect(response.stopReason).toBe("end_turn")
      expect(server.requests[0]!.model).toBe("model-b")
    }))

  it.scopedLive("without a usable model, session/new says what to set", () =>
    Effect.gen(function*() {
      const box = yield* project("http://127.0.0.1:1/v1", { model: "anthropic/claude-sonnet-4-5" })
      const client = yield* editor(box, { env: { ANTHROPIC_API_KEY: "" } })
      yield* initialize(client)
      const error = yield* failure(() => client.agent.request("session/new", { cwd: box.instance.directory, mcpServers: [] }))
      expect(error).toMatchObject({ code: -32000 })
      expect(error?.message).toMatch(/ANTHROPIC_API_KEY/)
    }))

  it.scopedLive("session/resume reopens a stored session without replaying it, and the next prompt has its history; session/close lets it go", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["The first answer.", "The second answer.", [{ delay: 20_000 }, text("never said")]])
      const box = yield* project(server.url)
      const first = yield* editor(box)
      yield* initialize(first)
      const { sessionId } = yield* newSession(first, box.instance.directory)
      yield* Effect.promise(() => first.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "remember the word heron" }] }))

      const other = yield* editor(box)
      const init = yield* initialize(other)
      expect(init.agentCapabilities?.sessionCapabilities).toMatchObject({ resume: {}, close: {} })
      const resumed = yield* Effect.promise(() => other.agent.request("session/resume", { sessionId, cwd: box.instance.directory, mcpServers: [] }))
      expect(resumed.modes?.currentModeId).toBe("build")
      // Unlike load, nothing of the conversation is sent again.
      expect(other.of(sessionId).filter((update) => update.sessionUpdate !== "available_commands_update")).toEqual([])
      const answer = yield* Effect.promise(() => other.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "which word?" }] }))
      expect(answer.stopReason, other.stderr()).toBe("end_turn")
      expect(chunks(other, sessionId, "agent_message_chunk")).toBe("The second answer.")
      const history = JSON.stringify(server.requests.at(-1)!.messages)
      expect(history).toContain("remember the word heron")
      expect(history).toContain("The first answer.")

      // A session answering a prompt is not closed under it.
      const pending = other.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "take your time" }] })
      yield* until(() => server.requests.length === 3, "the third model call")
      const busy = yield* failure(() => other.agent.request("session/close", { sessionId }))
      expect(busy?.message).toMatch(/answering a prompt; cancel it first/)
      yield* Effect.promise(() => other.agent.notify("session/cancel", { sessionId }))
      expect((yield* Effect.promise(() => pending)).stopReason).toBe("cancelled")

      yield* Effect.promise(() => other.agent.request("session/close", { sessionId }))
      const closed = yield* failure(() => other.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "still there?" }] }))
      expect(closed).toMatchObject({ code: -32002 })
      // Closed in this connection, still stored: it can be opened again.
      const again = yield* Effect.promise(() => other.agent.request("session/load", { sessionId, cwd: box.instance.directory, mcpServers: [] }))
      expect(again.modes?.currentModeId).toBe("build")
      expect(chunks(other, sessionId, "user_message_chunk")).toContain("remember the word heron")
    }))

  it.scopedLive("a subagent's permission ask reaches the editor as session/request_permission of the editor's session", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [toolCall("task", { description: "Edit a file", prompt: "change alpha to beta in a.txt", subagent_type: "general" })],
        // The subagent's turns.
        [toolCall("edit", { filePath: "a.txt", oldString: "alpha", newString: "beta" })],
        "Child done.",
        "The subagent edited it."
      ])
      const box = yield* project(server.url, { permission: { edit: "ask" } }, { "project/a.txt": "alpha\n" })
      const client = yield* editor(box)
      yield* initialize(client)
      const { sessionId } = yield* newSession(client, box.instance.directory)
      const response = yield* Effect.promise(() => client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "delegate it" }] }))
      expect(response.stopReason, client.stderr()).toBe("end_turn")
      expect(client.asked).toHaveLength(1)
      expect(client.asked[0]).toMatchObject({ sessionId, toolCall: { kind: "edit", title: expect.stringContaining("a.txt") } })
      expect(readFileSync(box.path("project/a.txt"), "utf8")).toBe("beta\n")
      expect(chunks(client, sessionId, "agent_message_chunk")).toContain("The subagent edited it.")
      // The editor saw the task call, not the child session's own calls.
      expect(client.of(sessionId, "tool_call").map((update) => "kind" in update && update.kind)).toEqual(["think"])
    }))
})
