import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { agent, project, terminal } from "./AgentProcess.js"

const { text, toolCall } = ScriptedModel

describe("agent run in a terminal", () => {
  it.scopedLive("asks for permissions: always, then reject with a message the model reads; -i keeps the session going", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [toolCall("read", { filePath: "notes.txt" })],
        [text("Rewriting it."), toolCall("write", { filePath: "notes.txt", content: "goodbye\n" })],
        "Understood, I left notes.txt alone.",
        [toolCall("read", { filePath: "notes.txt" })],
        "It still says hello."
      ])
      const box = yield* project(server.url, { permission: { read: "ask", edit: "ask" } }, { "project/notes.txt": "hello\n" })
      const user = yield* terminal(box, ["run", "-i", "tidy the notes"])

      yield* user.waitFor(/Allow read "notes\.txt"\?[\s\S]*?\[o\]nce, \[a\]lways, \[r\]eject, \[m\]essage \(press a key\): /)
      yield* user.type("a")
      yield* user.waitFor(/read\s+notes\.txt/)
      // The write shows its diff before the question.
      const diff = yield* user.waitFor(/-hello\n\+goodbye[\s\S]*?Allow edit "notes\.txt"\?[\s\S]*?\[m\]essage \(press a key\): /)
      expect(diff).toContain("-hello")
      yield* user.type("m")
      yield* user.waitFor(/Tell the agent what to do instead: /)
      yield* user.type("keep the original file\r")
      yield* user.waitFor(/Understood, I left notes\.txt alone\.\n/)

      // Same session, next prompt: the read is allowed for good now, so nobody is asked.
      yield* user.waitFor(/> /)
      yield* user.type("read it again\r")
      yield* user.waitFor(/It still says hello\.\n/)
      yield* user.waitFor(/> /)
      yield* user.type("/exit\r")
      expect(yield* user.exited).toBe(0)

      const screen = user.screen()
      expect(screen.match(/Allow read/g)).toHaveLength(1)
      expect(fs.readFileSync(box.path("project/notes.txt"), "utf8")).toBe("hello\n")
      expect(server.requests).toHaveLength(5)
      // The model was told why the write did not happen, and went on.
      expect(JSON.stringify(server.requests[2]!.messages)).toContain("keep the original file")
      // One session: the last request carries the whole conversation.
      const last = JSON.stringify(server.requests[4]!.messages)
      expect(last).toContain("tidy the notes")
      expect(last).toContain("read it again")
    }), 120_000)

  it.scopedLive("the model's questions are answered at the terminal: an option number, several numbers, or typed text", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [
          toolCall("question", {
            questions: [
              {
                question: "Which database?",
                header: "Database",
                options: [{ label: "SQLite", description: "one file" }, { label: "Postgres", description: "a server" }]
              },
              {
                question: "Which extras?",
                header: "Extras",
                multiple: true,
                options: [{ label: "Metrics", description: "Prometheus" }, { label: "Tracing", description: "OTLP" }]
              },
              { question: "Service name?", header: "Name", options: [{ label: "api", description: "the default" }] }
            ]
          })
        ],
        "Setting up billing on Postgres."
      ])
      const box = yield* project(server.url)
      const user = yield* terminal(box, ["run", "set up the service"])
      yield* user.waitFor(/Which database\?\n\s*1\. SQLite - one file\n\s*2\. Postgres - a server\n> /)
      yield* user.type("2\r")
      yield* user.waitFor(/Which extras\?[\s\S]*?> /)
      yield* user.type("1, 2\r")
      yield* user.waitFor(/Service name\?[\s\S]*?> /)
      yield* user.type("billing\r")
      yield* user.waitFor(/Setting up billing on Postgres\./)
      expect(yield* user.exited).toBe(0)
      expect(JSON.stringify(server.requests[1]!.messages)).toContain(
        'User has answered your questions: \\"Which database?\\"=\\"Postgres\\", \\"Which extras?\\"=\\"Metrics, Tracing\\", \\"Service name?\\"=\\"billing\\"'
      )
    }), 60_000)

  it.scopedLive("a plain reject stops the run with exit code 3; Ctrl-D at the prompt ends the session", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[toolCall("bash", { command: "rm -rf build", description: "Clean" })], "never"])
      const box = yield* project(server.url, { permission: { bash: "ask" } })
      const user = yield* terminal(box, ["run", "-i", "clean up"])
      yield* user.waitFor(/Allow bash "rm -rf build"\?[\s\S]*?\(press a key\): /)
      // Enter alone is no answer; a key that means nothing asks again.
      yield* user.type("\r")
      yield* user.type("x")
      yield* user.waitFor(/Please answer o, a, r or m: /)
      yield* user.type("r")
      yield* user.waitFor(/agent: run rejected/)
      yield* user.waitFor(/> /)
      yield* user.type("\x04")
      expect(yield* user.exited).toBe(3)
      expect(server.requests).toHaveLength(1)
    }), 60_000)

  it.scopedLive("Ctrl-C while a permission question is open aborts the run: exit 130", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[toolCall("bash", { command: "make", description: "Build" })], "never"])
      const box = yield* project(server.url, { permission: { bash: "ask" } })
      const user = yield* terminal(box, ["run", "build it"])
      yield* user.waitFor(/Allow bash "make"\?[\s\S]*?\(press a key\): /)
      yield* user.type("\x03")
      yield* user.waitFor(/agent: run aborted/)
      expect(yield* user.exited).toBe(130)
      expect(server.requests).toHaveLength(1)
    }), 60_000)

  it.scopedLive("live progress: a status line while waiting, text as it streams, tool lines with titles", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [text("Reading the notes."), toolCall("read", { filePath: "notes.txt" })],
        [text("They say hello"), ScriptedModel.delay(30_000), text(" and goodbye.")]
      ])
      const box = yield* project(server.url, {}, { "project/notes.txt": "hello\n" })
      const user = yield* terminal(box, ["run", "what do the notes say?"], { TERM: "xterm-256color" })
      yield* user.waitFor(/waiting for the model/)
      yield* user.waitFor(/Reading the notes\./)
      yield* user.waitFor(/✓ read\s+notes\.txt/)
      // The message is not finished (the model is still on it): this text came as it streamed.
      yield* user.waitFor(/They say hello/)
      yield* user.type("\x03")
      yield* user.waitFor(/agent: run aborted/)
      expect(yield* user.exited).toBe(130)
      // Colors and line erasing on a terminal that takes them.
      expect(user.raw()).toContain("\x1b[2K")
      expect(user.screen()).not.toContain("and goodbye")
    }), 60_000)

  it.scopedLive("--interactive without a terminal is a usage error", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([])
      const box = yield* project(server.url)
      const result = yield* agent(box, ["run", "-i", "hello"])
      expect(result.code).toBe(2)
      expect(result.stderr).toContain("--interactive needs a terminal")
    }))
})

describe("the approval prompt", () => {
  it.scopedLive("shows the exact rule \"always\" stores and where, before the answer; one key answers", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [toolCall("bash", { command: "echo hi > f.txt", description: "Write f.txt" })],
        "Wrote it.",
        [toolCall("bash", { command: "echo again > g.txt", description: "Write g.txt" })],
        "Wrote that too."
      ])
      const box = yield* project(server.url, { permission: { bash: "ask" } })
      const database = box.path("home/.local/share/agent/agent.db")
      const user = yield* terminal(box, ["run", "write f.txt"])
      const prompt = yield* user.waitFor(/Allow bash "echo hi > f\.txt"\?[\s\S]*?\(press a key\): /)
      expect(prompt).toContain(`[a]lways allows from now on, in this project: bash "echo *"`)
      expect(prompt.replace(/\s+/g, " ")).toContain(`(kept in ${database})`)
      // A single key, no Enter.
      yield* user.type("a")
      yield* user.waitFor(/always\n/)
      yield* user.waitFor(/Wrote it\./)
      expect(yield* user.exited).toBe(0)
      expect(fs.readFileSync(box.path("project/f.txt"), "utf8")).toBe("hi\n")

      // What was shown is what was stored: another echo is not asked about.
      const again = yield* agent(box, ["run", "write g.txt"])
      expect(again.code, again.stderr).toBe(0)
      expect(again.stderr).not.toMatch(/permission asked/)
      expect(fs.readFileSync(box.path("project/g.txt"), "utf8")).toBe("again\n")
    }), 60_000)
})
