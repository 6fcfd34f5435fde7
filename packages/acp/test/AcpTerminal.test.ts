import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import type * as Acp from "@agentclientprotocol/sdk"
import { Effect } from "effect"
import * as fs from "node:fs"
import { editor, type Editor, initialize, project, until } from "./AcpClient.js"

const { toolCall } = ScriptedModel

const newSession = (client: Editor, cwd: string) => Effect.promise(() => client.agent.request("session/new", { cwd, mcpServers: [] }))

const prompt = (client: Editor, sessionId: string, words: string) =>
  Effect.promise(() => client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: words }] }))

type ToolUpdate = Extract<Acp.SessionUpdate, { toolCallId: string }>

const toolUpdates = (client: Editor, sessionId: string) =>
  client.of(sessionId).filter((update): update is ToolUpdate => "toolCallId" in update)

/** What the model was sent as the result of its last tool call. */
const lastToolResult = (server: MockOpenAIServer.MockOpenAIServer) => {
  const messages = server.requests.at(-1)!.messages as Array<{ role: string; content: unknown }>
  const result = messages.filter((message) => message.role === "tool").at(-1)
  return typeof result?.content === "string" ? result.content : JSON.stringify(result?.content)
}

const gone = (pid: number | undefined) => {
  try {
    process.kill(pid!, 0)
    return false
  } catch {
    return true
  }
}

describe("agent acp with the editor's terminals", () => {
  it.scopedLive("a command runs in the editor's terminal: the tool call embeds it, the model gets its output and exit code", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [toolCall("bash", { command: "echo to-stdout; echo to-stderr >&2; echo made > made.txt; exit 3", description: "Prints and fails" })],
        "It failed with 3."
      ])
      const box = yield* project(server.url, { sandbox: { mode: "off" }, permission: { bash: "allow" } })
      const client = yield* editor(box, { terminals: true })
      yield* initialize(client, { terminal: true })
      const { sessionId } = yield* newSession(client, box.instance.directory)
      const response = yield* prompt(client, sessionId, "run it")
      expect(response.stopReason, client.stderr()).toBe("end_turn")

      expect(client.terminals).toHaveLength(1)
      const terminal = client.terminals[0]!
      // The command line itself, for the editor's shell (no argv of ours).
      expect(terminal.request).toMatchObject({ sessionId, cwd: box.instance.directory, command: "echo to-stdout; echo to-stderr >&2; echo made > made.txt; exit 3" })
      expect(terminal.request.args ?? []).toEqual([])
      // The editor really ran it, in the project.
      expect(fs.readFileSync(box.path("project/made.txt"), "utf8")).toBe("made\n")
      expect(terminal.exit).toMatchObject({ exitCode: 3 })
      expect(terminal.released).toBe(true)

      const updates = toolUpdates(client, sessionId)
      expect(updates.find((update) => update.status === "in_progress" && update.content?.length)).toMatchObject({ content: [{ type: "terminal", terminalId: terminal.id }] })
      const done = updates.at(-1)!
      expect(done).toMatchObject({ status: "completed", content: [{ type: "terminal", terminalId: terminal.id }] })
      expect(done.rawOutput).toMatchObject({ metadata: { exit: 3, terminalId: terminal.id, sandbox: "off" } })
      const result = lastToolResult(server)
      expect(result).toContain("to-stdout")
      expect(result).toContain("to-stderr")
    }))

  it.scopedLive("session/cancel kills the command in the terminal and answers cancelled; a timeout kills it and tells the model", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [toolCall("bash", { command: "echo started; sleep 30; echo never", description: "Waits" })],
        [toolCall("bash", { command: "echo begun; sleep 30; echo never", description: "Waits too long", timeout: 500 })],
        "It timed out."
      ])
      const box = yield* project(server.url, { sandbox: { mode: "off" }, permission: { bash: "allow" } })
      const client = yield* editor(box, { terminals: true })
      yield* initialize(client, { terminal: true })
      const { sessionId } = yield* newSession(client, box.instance.directory)

      const pending = client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "wait" }] })
      yield* until(() => client.terminals[0]?.output.includes("started") === true, "the command to start")
      yield* Effect.promise(() => client.agent.notify("session/cancel", { sessionId }))
      const cancelled = yield* Effect.promise(() => pending)
      expect(cancelled.stopReason).toBe("cancelled")
      const first = client.terminals[0]!
      yield* until(() => first.released && first.exit !== undefined, "the terminal to be killed and released")
      expect(first.exit?.signal).toBe("SIGKILL")
      expect(gone(first.process.pid)).toBe(true)
      expect(first.output).not.toContain("never")

      const timed = yield* prompt(client, sessionId, "wait again")
      expect(timed.stopReason, client.stderr()).toBe("end_turn")
      const second = client.terminals[1]!
      expect(second.killed).toBe(true)
      expect(second.released).toBe(true)
      const result = lastToolResult(server)
      // The same words a local command's timeout gives the model, after what it printed.
      expect(result).toContain("begun")
      expect(result).toContain("exceeded the timeout of 500 ms")
      expect(result).not.toContain("never")
    }))

  it.scopedLive("inside the sandbox a command runs locally; one the user lets out of the sandbox runs in the editor's terminal", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [toolCall("bash", { command: "echo inside", description: "Sandboxed" })],
        [toolCall("bash", { command: "echo outside", description: "Escapes", unsandboxed: true })],
        "Done."
      ])
      const box = yield* project(server.url, { sandbox: { mode: "workspace-write" }, permission: { bash: "allow" } })
      const client = yield* editor(box, { terminals: true })
      yield* initialize(client, { terminal: true })
      const { sessionId } = yield* newSession(client, box.instance.directory)
      const response = yield* prompt(client, sessionId, "run both")
      expect(response.stopReason, client.stderr()).toBe("end_turn")
      const calls = toolUpdates(client, sessionId).filter((update) => update.status === "completed")
      // The sandboxed one ran here, in our sandbox: its output as text.
      expect(calls[0]).toMatchObject({ content: [{ type: "content", content: { type: "text", text: "inside\n" } }] })
      expect(calls[0]!.rawOutput).toMatchObject({ metadata: { sandbox: "workspace-write" } })
      // Leaving the sandbox was asked of the editor, then the command ran in its terminal.
      expect(client.asked.map((ask) => ask.toolCall.title)).toEqual([expect.stringMatching(/^sandbox_escape .*outside the sandbox/)])
      expect(client.terminals.map((terminal) => terminal.request.command)).toEqual(["echo outside"])
      expect(calls[1]).toMatchObject({ content: [{ type: "terminal", terminalId: client.terminals[0]!.id }] })
      expect(calls[1]!.rawOutput).toMatchObject({ metadata: { sandbox: "escaped", exit: 0 } })
      expect(lastToolResult(server)).toContain("outside")
    }))

  it.scopedLive("without the capability, or with AGENT_ACP_TERMINAL=off, commands run locally", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [toolCall("bash", { command: "echo local", description: "Local" })],
        "Done.",
        [toolCall("bash", { command: "echo still local", description: "Local" })],
        "Done."
      ])
      const box = yield* project(server.url, { sandbox: { mode: "off" }, permission: { bash: "allow" } })
      const offers = [
        { options: {}, terminal: false, output: "local\n" },
        { options: { env: { AGENT_ACP_TERMINAL: "off" } }, terminal: true, output: "still local\n" }
      ]
      for (const { options, terminal, output } of offers) {
        const client = yield* editor(box, { terminals: true, ...options })
        yield* initialize(client, { terminal })
        const { sessionId } = yield* newSession(client, box.instance.directory)
        yield* prompt(client, sessionId, "run")
        expect(client.terminals).toEqual([])
        expect(toolUpdates(client, sessionId).at(-1)).toMatchObject({ status: "completed", content: [{ type: "content", content: { type: "text", text: output } }] })
      }
    }))

  it.scopedLive("long output from the terminal is cut for the model as a local command's is, the full text saved", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[toolCall("bash", { command: "seq 1 5000", description: "Counts" })], "Counted."])
      const box = yield* project(server.url, { sandbox: { mode: "off" }, permission: { bash: "allow" } })
      const client = yield* editor(box, { terminals: true })
      yield* initialize(client, { terminal: true })
      const { sessionId } = yield* newSession(client, box.instance.directory)
      yield* prompt(client, sessionId, "count")
      expect(client.terminals).toHaveLength(1)
      const result = lastToolResult(server)
      // The end is kept (bash output is cut from the top), the rest is in a file the model is pointed to.
      expect(result).toContain("...output truncated...")
      expect(result).toContain("\n5000")
      expect(result).not.toContain("\n1\n2\n3\n")
      const saved = /Full output saved to: (\S+)/.exec(result)?.[1]
      expect(saved).toBeDefined()
      expect(fs.readFileSync(saved!, "utf8").split("\n").slice(0, 3)).toEqual(["1", "2", "3"])
    }))

  it.scopedLive("an editor that goes away while its terminal runs a command: the agent is not held by it and exits 0", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[toolCall("bash", { command: "echo started; sleep 30", description: "Waits" })]])
      const box = yield* project(server.url, { sandbox: { mode: "off" }, permission: { bash: "allow" } })
      const client = yield* editor(box, { terminals: true })
      yield* initialize(client, { terminal: true })
      const { sessionId } = yield* newSession(client, box.instance.directory)
      void client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "wait" }] }).catch(() => undefined)
      yield* until(() => client.terminals[0]?.output.includes("started") === true, "the command to start")
      const started = Date.now()
      client.child.stdin.end()
      const code = yield* Effect.promise(() => client.exited)
      expect(code, client.stderr()).toBe(0)
      // Not held by requests to an editor that cannot answer (each waits at most 10 s).
      expect(Date.now() - started).toBeLessThan(10_000)
    }))
})
