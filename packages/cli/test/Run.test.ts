import { MockOpenAIServer, ScriptedModel, TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { agent, events, mockConfig, project } from "./AgentProcess.js"

const { text, toolCall } = ScriptedModel

describe("agent run", () => {
  it.scopedLive("runs a tool session and prints OpenCode's JSON events, ending with a result", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[text("Reading."), toolCall("read", { filePath: "notes.txt" })], "The notes say hello."])
      const box = yield* project(server.url, {}, { "project/notes.txt": "hello\n" })
      const result = yield* agent(box, ["run", "--format", "json", "--title", "Notes", "what do the notes say?"])
      expect(result.code, result.stderr).toBe(0)
      const lines = events(result.stdout)
      expect(lines.map((line) => line.type), result.stdout).toEqual([
        "init", "step_start", "text", "tool_use", "step_finish", "step_start", "text", "step_finish", "result"
      ])
      expect(lines[3]!.part.state).toMatchObject({ status: "completed", title: "notes.txt" })
      expect(lines.every((line) => typeof line.timestamp === "number" && line.sessionID.startsWith("ses_"))).toBe(true)
      expect(lines.at(-1)).toMatchObject({ type: "result", status: "completed", exitCode: 0, text: "The notes say hello." })
    }))

  it.scopedLive("prints just the answer when piped, and appends piped stdin to the message", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["Summarized."])
      const box = yield* project(server.url)
      const result = yield* agent(box, ["run", "summarize this"], { stdin: "line one\nline two\n" })
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout).toBe("Summarized.\n")
      const sent = JSON.stringify(server.requests[0]!.messages)
      expect(sent).toContain("summarize this")
      expect(sent).toContain("line one\\nline two")
    }))

  it.scopedLive("an open, empty stdin does not block", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["Hi."])
      const box = yield* project(server.url)
      const result = yield* agent(box, ["run", "hello"], { stdin: "open" })
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout).toBe("Hi.\n")
    }))

  it.scopedLive("piped input that starts late is read to its end; a silent open pipe is given up with a note", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["Late.", "Quiet."])
      const box = yield* project(server.url)
      const late = yield* agent(box, ["run", "review this"], {
        // the first byte within the grace window, the rest well after it
        stdinLater: [{ after: 3_000, text: "first part\n" }, { after: 9_000, text: "second part\n" }]
      })
      expect(late.code, late.stderr).toBe(0)
      expect(late.stderr).not.toMatch(/nothing arrived/)
      const sent = JSON.stringify(server.requests[0]!.messages)
      expect(sent).toContain("first part\\nsecond part")
      const started = Date.now()
      const quiet = yield* agent(box, ["run", "hello"], { stdin: "open" })
      expect(quiet.code, quiet.stderr).toBe(0)
      expect(quiet.stderr).toMatch(/nothing arrived on stdin within 5 s/)
      expect(Date.now() - started).toBeLessThan(15_000)
    }), 30_000)

  it.scopedLive("without a terminal a permission ask is rejected with a clear line and exit code 3", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[toolCall("read", { filePath: "secret.txt" })], "never"])
      const box = yield* project(server.url, { permission: { read: "ask" } }, { "project/secret.txt": "x" })
      const result = yield* agent(box, ["run", "--format", "json", "read the secret"])
      expect(result.code).toBe(3)
      expect(result.stderr).toMatch(/permission asked for read "secret.txt"; rejected \(no terminal to ask; pass --auto-approve to allow\)/)
      expect(events(result.stdout).at(-1)).toMatchObject({ type: "result", status: "rejected", exitCode: 3 })
      expect(server.requests).toHaveLength(1)
    }))

  it.scopedLive("--auto-approve answers asks, but what config denies stays denied", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [toolCall("read", { filePath: "a.txt" }), toolCall("read", { filePath: "b.env" })],
        "Read a, not b."
      ])
      const box = yield* project(server.url, { permission: { read: { "*": "ask", "*.env": "deny" } } }, {
        "project/a.txt": "alpha",
        "project/b.env": "SECRET=1"
      })
      const result = yield* agent(box, ["run", "--auto-approve", "--format", "json", "read both"])
      expect(result.code, result.stderr).toBe(0)
      const tools = events(result.stdout)
        .filter((line) => line.type === "tool_use")
        .sort((a, b) => String(a.part.state.input.filePath).localeCompare(String(b.part.state.input.filePath)))
      expect(tools.map((line) => [line.part.state.input.filePath, line.part.state.status])).toEqual([["a.txt", "completed"], ["b.env", "error"]])
      expect(tools[1]!.part.state.error).toMatch(/Blocked by the user's permission rules/)
      expect(JSON.stringify(server.requests[1]!.messages)).not.toContain("SECRET=1")
    }))

  it.scopedLive("a provider error exits 1 with an error event and a result", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([ScriptedModel.fail({ statusCode: 400, message: "model is on fire" })])
      const box = yield* project(server.url)
      const result = yield* agent(box, ["run", "--format", "json", "hi"])
      expect(result.code).toBe(1)
      const lines = events(result.stdout)
      expect(lines.some((line) => line.type === "error")).toBe(true)
      expect(lines.at(-1)).toMatchObject({ type: "result", status: "error", exitCode: 1 })
      expect(lines.at(-1)!.reason).toMatch(/model is on fire/)
    }))

  it.scopedLive("a retried provider call shows: a retry event per attempt in json, a stderr line in text mode", () =>
    Effect.gen(function*() {
      const turns = () => [
        [ScriptedModel.serverError({ message: "model overloaded" })],
        [ScriptedModel.serverError({ message: "model overloaded" })],
        "Recovered."
      ]
      const server = yield* MockOpenAIServer.start(turns())
      const box = yield* project(server.url, { retry: { delay: 20 } })
      const result = yield* agent(box, ["run", "--format", "json", "hi"])
      expect(result.code, result.stderr).toBe(0)
      const lines = events(result.stdout)
      const retries = lines.filter((line) => line.type === "retry")
      expect(retries, result.stdout).toEqual([
        expect.objectContaining({ attempt: 1, attempts: 10, delay: 20, statusCode: 500, message: expect.stringContaining("model overloaded") }),
        expect.objectContaining({ attempt: 2, attempts: 10, delay: 40, statusCode: 500 })
      ])
      expect(lines.at(-1)).toMatchObject({ type: "result", status: "completed", text: "Recovered." })

      const textServer = yield* MockOpenAIServer.start(turns())
      const textBox = yield* project(textServer.url, { retry: { delay: 20 } })
      const plain = yield* agent(textBox, ["run", "hi"])
      expect(plain.code, plain.stderr).toBe(0)
      expect(plain.stderr).toMatch(/retrying in 0\.0 s: HTTP 500 .*model overloaded.*, attempt 1 of 10/)
      expect(plain.stderr).toMatch(/attempt 2 of 10/)
      expect(plain.stdout).toContain("Recovered.")
    }))

  it.scopedLive("--max-steps stops a run that wants more steps with exit code 4", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[toolCall("read", { filePath: "a.txt" })], [toolCall("read", { filePath: "a.txt" })]])
      const box = yield* project(server.url, {}, { "project/a.txt": "alpha" })
      const result = yield* agent(box, ["run", "--max-steps", "1", "loop forever"])
      expect(result.code).toBe(4)
      expect(result.stderr).toMatch(/run steps: The agent reached its limit of 1 steps/)
    }))

  it.scopedLive("usage errors exit 2: nothing to do, unknown session, bad --fork", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([])
      const box = yield* project(server.url)
      const empty = yield* agent(box, ["run"])
      expect(empty.code).toBe(2)
      expect(empty.stderr).toMatch(/nothing to do/)
      const missing = yield* agent(box, ["run", "-s", "ses_00000000000000000000000000", "hi"])
      expect(missing.code).toBe(2)
      expect(missing.stderr).toMatch(/session not found/)
      const fork = yield* agent(box, ["run", "--fork", "hi"])
      expect(fork.code).toBe(2)
      expect(server.requests).toHaveLength(0)
    }))

  it.scopedLive("Ctrl-C aborts the run cleanly: result event, exit code 130", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[text("Starting a long think."), ScriptedModel.delay(20_000), text("never")]])
      const box = yield* project(server.url)
      const result = yield* agent(box, ["run", "--format", "json", "think hard"], {
        signalAfter: (stdout) => stdout.includes("step_start")
      })
      expect(result.code).toBe(130)
      expect(events(result.stdout).at(-1)).toMatchObject({ type: "result", status: "aborted", exitCode: 130 })
    }))
})

describe("agent run --dir", () => {
  it.scopedLive("runs as if started in that directory: its config, its files, -f relative to it", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[toolCall("read", { filePath: "a.txt" })], "It says alpha."])
      const titles = yield* MockOpenAIServer.start(["A title"])
      const box = yield* TestInstance.sandbox({
        files: {
          "elsewhere/agent.json": mockConfig(server.url, titles.url),
          "elsewhere/a.txt": "alpha\n",
          "elsewhere/brief.md": "the brief\n"
        }
      })
      const result = yield* agent(box, ["run", "--dir", "../elsewhere", "-f", "brief.md", "--format", "json", "what does a.txt say?"])
      expect(result.code, result.stderr).toBe(0)
      const lines = events(result.stdout)
      expect(lines.find((line) => line.type === "tool_use")!.part.state).toMatchObject({ status: "completed", title: "a.txt" })
      expect(JSON.stringify(server.requests[0]!.messages)).toContain("the brief")
      expect(JSON.stringify(server.requests[0]!.messages)).toContain(box.path("elsewhere"))

      const missing = yield* agent(box, ["run", "--dir", "../nowhere", "hi"])
      expect(missing.code).toBe(2)
      expect(missing.stderr).toContain("--dir: no such directory: ../nowhere")
      expect(server.requests).toHaveLength(2)
    }))
})

describe("agent run output", () => {
  it.scopedLive("warnings (a broken MCP server) go to stderr; stdout stays one JSON event per line", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["Fine."])
      const box = yield* project(server.url, { mcp: { broken: { type: "local", command: ["node", "-e", "process.exit(3)"] } } }, {})
      const result = yield* agent(box, ["run", "--format", "json", "hello"])
      expect(result.code, result.stderr).toBe(0)
      expect(result.stderr).toMatch(/level=WARN .*MCP server broken/)
      expect(events(result.stdout).map((line) => line.type)).toEqual(["init", "step_start", "text", "step_finish", "result"])
    }))
})
