import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import type * as Acp from "@agentclientprotocol/sdk"
import { Effect } from "effect"
import * as fs from "node:fs"
import { choose, editor, type Editor, initialize, project, textOf } from "./AcpClient.js"

const { text, toolCall } = ScriptedModel

const newSession = (client: Editor, cwd: string) =>
  Effect.promise(() => client.agent.request("session/new", { cwd, mcpServers: [] }))

const prompt = (client: Editor, sessionId: string, words: string) =>
  Effect.promise(() => client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: words }] }))

const texts = textOf

const toolUpdates = (client: Editor, sessionId: string) =>
  client.of(sessionId).filter((update): update is Extract<Acp.SessionUpdate, { toolCallId: string }> => "toolCallId" in update)

describe("agent acp", () => {
  it.scopedLive("initializes, opens a session in the editor's cwd and streams an answer, its thoughts and usage", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[{ reasoning: "Thinking it over." }, text("Hello from the agent.")]])
      const box = yield* project(server.url)
      const client = yield* editor(box)
      const init = yield* initialize(client)
      expect(init.protocolVersion).toBe(1)
      expect(init.agentCapabilities).toMatchObject({
        loadSession: true,
        promptCapabilities: { image: true, embeddedContext: true },
        mcpCapabilities: { http: true },
        sessionCapabilities: { list: {} }
      })
      expect(init.agentInfo?.name).toBe("agent")
      expect(init.authMethods?.map((method) => method.id)).toEqual(expect.arrayContaining(["mock", "anthropic"]))
      const session = yield* newSession(client, box.instance.directory)
      expect(session.modes?.currentModeId).toBe("build")
      expect(session.modes?.availableModes.map((mode) => mode.id)).toEqual(expect.arrayContaining(["build", "plan"]))
      expect(session.configOptions?.[0]).toMatchObject({ id: "model", category: "model", currentValue: "mock/model-a" })
      const response = yield* prompt(client, session.sessionId, "hi")
      expect(response.stopReason, client.stderr()).toBe("end_turn")
      expect(texts(client.of(session.sessionId, "agent_message_chunk"))).toBe("Hello from the agent.")
      expect(texts(client.of(session.sessionId, "agent_thought_chunk"))).toBe("Thinking it over.")
      expect(client.of(session.sessionId, "usage_update")[0]).toMatchObject({ size: 64000 })
      // The commands come after the session is known to the editor.
      expect(client.of(session.sessionId, "available_commands_update")[0]).toMatchObject({ availableCommands: expect.arrayContaining([expect.objectContaining({ name: "init" })]) })
    }))

  it.scopedLive("a tool call asks the editor: allow once edits (shown as a diff), reject once stops, reject with feedback goes on", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [text("Editing."), toolCall("edit", { filePath: "a.txt", oldString: "alpha", newString: "beta" })],
        "Edited.",
        [toolCall("edit", { filePath: "a.txt", oldString: "beta", newString: "gamma" })],
        [toolCall("edit", { filePath: "a.txt", oldString: "beta", newString: "delta" })],
        "Understood, I will leave it."
      ])
      const box = yield* project(server.url, { permission: { edit: "ask" } }, { "project/a.txt": "alpha\n" })
      const client = yield* editor(box)
      yield* initialize(client)
      const { sessionId } = yield* newSession(client, box.instance.directory)

      const first = yield* prompt(client, sessionId, "change alpha to beta")
      expect(first.stopReason, client.stderr()).toBe("end_turn")
      expect(fs.readFileSync(box.path("project/a.txt"), "utf8")).toBe("beta\n")
      expect(client.asked).toHaveLength(1)
      expect(client.asked[0]!.options.map((option) => option.kind)).toEqual(["allow_once", "allow_always", "reject_once", "reject_always"])
      const calls = toolUpdates(client, sessionId)
      expect(calls[0]).toMatchObject({ sessionUpdate: "tool_call", kind: "edit" })
      expect(calls.find((update) => update.status === "in_progress")).toMatchObject({ locations: [{ path: box.path("project/a.txt") }] })
      expect(client.asked[0]!.toolCall.toolCallId).toBe(calls[0]!.toolCallId)
      expect(calls.at(-1)).toMatchObject({
        sessionUpdate: "tool_call_update",
        status: "completed",
        content: [{ type: "diff", path: box.path("project/a.txt"), oldText: "alpha", newText: "beta" }]
      })

      client.answer = choose("reject")
      const second = yield* prompt(client, sessionId, "now gamma")
      expect(second.stopReason).toBe("end_turn")
      expect(fs.readFileSync(box.path("project/a.txt"), "utf8")).toBe("beta\n")
      expect(toolUpdates(client, sessionId).at(-1)).toMatchObject({ status: "failed" })
      expect(server.requests).toHaveLength(3)

      client.answer = () => ({ outcome: { outcome: "selected", optionId: "reject" }, _meta: { feedback: "keep beta, it is right" } })
      const third = yield* prompt(client, sessionId, "now delta")
      expect(third.stopReason).toBe("end_turn")
      expect(fs.readFileSync(box.path("project/a.txt"), "utf8")).toBe("beta\n")
      // The model read the feedback and answered.
      expect(JSON.stringify(server.requests.at(-1)!.messages)).toContain("keep beta, it is right")
      expect(texts(client.of(sessionId, "agent_message_chunk"))).toContain("Understood, I will leave it.")
    }))

  it.scopedLive("allow always stores the project rule (not asked again); reject always stores a deny", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [toolCall("bash", { command: "echo one", description: "first" })],
        "One.",
        [toolCall("bash", { command: "echo two", description: "second" })],
        "Two.",
        [toolCall("webfetch", { url: "https://example.invalid/x" })],
        [toolCall("webfetch", { url: "https://example.invalid/x" })],
        "Still not."
      ])
      const box = yield* project(server.url, { permission: { bash: "ask", webfetch: "ask" } })
      const client = yield* editor(box)
      yield* initialize(client)
      const { sessionId } = yield* newSession(client, box.instance.directory)
      client.answer = choose("always")
      yield* prompt(client, sessionId, "run one")
      yield* prompt(client, sessionId, "run two")
      expect(client.asked.map((ask) => ask.toolCall.kind)).toEqual(["execute"])
      const bashCalls = toolUpdates(client, sessionId).filter((update) => update.status === "completed")
      expect(bashCalls.map((update) => update.rawOutput && (update.rawOutput as { output: string }).output)).toEqual(["one\n", "two\n"])

      client.answer = choose("reject-always")
      const rejected = yield* prompt(client, sessionId, "fetch x")
      expect(rejected.stopReason).toBe("end_turn")
      const again = yield* prompt(client, sessionId, "fetch x again")
      expect(again.stopReason).toBe("end_turn")
      // Asked once; the same fetch again was denied by the stored rule, and the model was told so.
      expect(client.asked).toHaveLength(2)
      const last = toolUpdates(client, sessionId).at(-1)!
      expect(last).toMatchObject({ status: "failed", rawInput: { url: "https://example.invalid/x" } })
      expect(texts(last.content?.map((item) => (item.type === "content" ? { sessionUpdate: "agent_message_chunk", content: item.content } : { sessionUpdate: "plan", entries: [] })) as Array<Acp.SessionUpdate>)).toMatch(/webfetch is denied/)
      expect(texts(client.of(sessionId, "agent_message_chunk"))).toContain("Still not.")
    }))

  it.scopedLive("a todo list is an ACP plan; plan mode denies edits", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [toolCall("todowrite", { todos: [{ content: "Read the code", status: "completed", priority: "high" }, { content: "Fix the bug", status: "in_progress", priority: "medium" }] })],
        "Planned.",
        [toolCall("write", { filePath: "new.txt", content: "x" })],
        "Could not write."
      ])
      const box = yield* project(server.url)
      const client = yield* editor(box)
      yield* initialize(client)
      const { sessionId } = yield* newSession(client, box.instance.directory)
      yield* prompt(client, sessionId, "plan it")
      expect(client.of(sessionId, "plan").at(-1)).toEqual({
        sessionUpdate: "plan",
        entries: [
          { content: "Read the code", status: "completed", priority: "high" },
          { content: "Fix the bug", status: "in_progress", priority: "medium" }
        ]
      })
      yield* Effect.promise(() => client.agent.request("session/set_mode", { sessionId, modeId: "plan" }))
      expect(client.of(sessionId, "current_mode_update").at(-1)).toMatchObject({ currentModeId: "plan" })
      const response = yield* prompt(client, sessionId, "write new.txt")
      expect(response.stopReason).toBe("end_turn")
      expect(fs.existsSync(box.path("project/new.txt"))).toBe(false)
      expect(client.asked).toHaveLength(0)
      // Plan mode does not even offer the write tool: the model's call fails.
      expect(toolUpdates(client, sessionId).at(-1)).toMatchObject({ status: "failed" })
      expect(JSON.stringify(toolUpdates(client, sessionId).at(-1)!.content)).toMatch(/edit is denied for \\"new.txt\\"/)
    }))
})
