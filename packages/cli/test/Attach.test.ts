import { MockOpenAIServer, ScriptedModel, TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { agent, events, forFile, project, type Served, serve, terminal } from "./AgentProcess.js"
import { closedPort } from "./ApprovalSupport.js"

const { text, toolCall } = ScriptedModel

/** One model and one `agent serve` for the file; each test appends the turns it uses. */
interface Shared {
  readonly model: MockOpenAIServer.MockOpenAIServer
  readonly served: Served
  /** The server's machine: its project, config and database. */
  readonly server: TestInstance.Sandbox
  /** The client's machine: no config, no model; only `--attach` can run anything here. */
  readonly client: TestInstance.Sandbox
}

const shared = forFile<Shared, unknown>(
  Effect.gen(function*() {
    const model = yield* MockOpenAIServer.start()
    const server = yield* project(
      model.url,
      { permission: { bash: "ask" }, command: { greet: { template: "Say hello to $ARGUMENTS." } } },
      { "project/notes.txt": "hello\n" }
    )
    const served = yield* serve(server)
    const client = yield* TestInstance.sandbox({ files: { "project/brief.md": "the brief\n" } })
    return { model, served, server, client }
  })
)

describe("agent run --attach", () => {
  it.live("runs a tool session on the server: the answer on stdout, the session in the server's database", () =>
    Effect.gen(function*() {
      const { model, served, server, client } = shared()
      model.push([text("Reading."), toolCall("read", { filePath: "notes.txt" })], "The notes say hello.")
      const result = yield* agent(client, ["run", "--attach", served.url, "--title", "Attached notes", "what do the notes say?"])
      expect(result.code, result.stderr).toBe(0)
      // Piped: just the answer, no terminal control sequences.
      expect(result.stdout).toBe("The notes say hello.\n")
      const listed = yield* agent(server, ["session", "list", "--search", "Attached notes", "--format", "json"])
      const sessions = JSON.parse(listed.stdout) as Array<{ id: string; title: string }>
      expect(sessions.map((session) => session.title)).toEqual(["Attached notes"])
      // The client machine has no database of its own.
      expect(fs.existsSync(client.path("home/.local/share/agent"))).toBe(false)
    }), 60_000)

  it.live("--format json prints the local run's event shapes and a result; -f files are sent along", () =>
    Effect.gen(function*() {
      const { model, served, client } = shared()
      const before = model.requests.length
      model.push([text("Reading."), toolCall("read", { filePath: "notes.txt" })], "The notes say hello.")
      const result = yield* agent(client, ["run", "--attach", served.url, "--format", "json", "-f", "brief.md", "what do the notes say?"])
      expect(result.code, result.stderr).toBe(0)
      const lines = events(result.stdout)
      expect(lines.map((line) => line.type), result.stdout).toEqual([
        "init", "step_start", "text", "tool_use", "step_finish", "step_start", "text", "step_finish", "result"
      ])
      expect(lines[3]!.part.state).toMatchObject({ status: "completed", title: "notes.txt" })
      expect(lines.at(-1)).toMatchObject({ type: "result", status: "completed", exitCode: 0, text: "The notes say hello.", steps: 2 })
      expect(lines.at(-1)!.tokens).toBeDefined()
      expect(JSON.stringify(model.requests[before]!.messages)).toContain("the brief")
    }), 60_000)

  it.live("--command runs the server's command with the message as its arguments", () =>
    Effect.gen(function*() {
      const { model, served, client } = shared()
      const before = model.requests.length
      model.push("Hello, world.")
      const result = yield* agent(client, ["run", "--attach", served.url, "--title", "Greeting", "--command", "greet", "world"])
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout).toBe("Hello, world.\n")
      expect(JSON.stringify(model.requests[before]!.messages)).toContain("Say hello to world.")
    }), 60_000)

  it.live("without a terminal a permission ask is rejected on the server: a stderr line, exit 3", () =>
    Effect.gen(function*() {
      const { model, served, client } = shared()
      const before = model.requests.length
      model.push([toolCall("bash", { command: "make", description: "Build" })])
      const result = yield* agent(client, ["run", "--attach", served.url, "--format", "json", "build it"])
      expect(result.code, result.stderr).toBe(3)
      expect(result.stderr).toMatch(/permission asked for bash "make"; rejected \(no terminal to ask; pass --auto-approve to allow\)/)
      expect(events(result.stdout).at(-1)).toMatchObject({ type: "result", status: "rejected", exitCode: 3 })
      expect(model.requests.length - before).toBe(1)
    }), 60_000)

  it.live("Ctrl-C aborts the run on the server: result event, exit 130", () =>
    Effect.gen(function*() {
      const { model, served, client } = shared()
      model.push([text("Starting a long think."), ScriptedModel.delay(20_000), text("never")])
      const result = yield* agent(client, ["run", "--attach", served.url, "--format", "json", "think hard"], {
        signalAfter: (stdout) => stdout.includes("step_start")
      })
      expect(result.code, result.stderr).toBe(130)
      const last = events(result.stdout).at(-1)!
      expect(last).toMatchObject({ type: "result", status: "aborted", exitCode: 130 })
      const status = (yield* Effect.promise(() => fetch(`${served.url}/session/status`).then((response) => response.json()))) as Record<string, { type: string }>
      expect(status[last.sessionID]?.type ?? "idle").toBe("idle")
    }), 60_000)

  it.live("a server that cannot be reached is an error naming its url (exit 1); usage errors exit 2", () =>
    Effect.gen(function*() {
      const { served, client } = shared()
      const url = `http://127.0.0.1:${yield* closedPort}`
      const result = yield* agent(client, ["run", "--attach", url, "hello"])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain(`cannot reach the agent server at ${url}`)
      const dir = yield* agent(client, ["run", "--attach", served.url, "--dir", "..", "hello"])
      expect(dir.code).toBe(2)
      expect(dir.stderr).toContain("--dir cannot be combined with --attach")
      const missing = yield* agent(client, ["run", "--attach", served.url, "-s", "ses_00000000000000000000000000", "hello"])
      expect(missing.code).toBe(2)
      expect(missing.stderr).toContain("session not found: ses_00000000000000000000000000")
      // Known only to the server: its answer comes back as the same usage error a local run gives.
      const agentless = yield* agent(client, ["run", "--attach", served.url, "--title", "x", "--agent", "nobody", "hello"])
      expect(agentless.code, agentless.stderr).toBe(2)
      expect(agentless.stderr).toMatch(/nobody/)
    }), 60_000)

  it.scopedLive("on a terminal without colors: live text and tool lines, no escape sequences", () =>
    Effect.gen(function*() {
      const { model, served, client } = shared()
      model.push([text("Reading."), toolCall("read", { filePath: "notes.txt" })], "The notes say hello.")
      const user = yield* terminal(client, ["run", "--attach", served.url, "what do the notes say?"], { TERM: "xterm-256color", NO_COLOR: "1" })
      yield* user.waitFor(/Reading\./)
      yield* user.waitFor(/✓ read\s+notes\.txt/)
      yield* user.waitFor(/The notes say hello\.\n/)
      expect(yield* user.exited).toBe(0)
      expect(user.raw()).not.toContain("\x1b")
      // Shown once, as it streamed, not again at the end.
      expect(user.screen().match(/The notes say hello\./g)).toHaveLength(1)
    }), 60_000)
})
