import { MockOpenAIServer, ScriptedModel, TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { agent, events, mockConfig, shell, terminal } from "./AgentProcess.js"

const { text, toolCall } = ScriptedModel

const README = "# Widget\n\nA small widget library.\n\nTODO: write the docs\n"

/** A project with no model configured and no key anywhere: what a newcomer has. */
const bareProject = TestInstance.sandbox({
  files: { "project/README.md": README, "project/src/widget.ts": "export const widget = 1 // Widget\n" }
})

/** Tool calls of a `--format json` run, as "tool input" strings, in order. */
const toolCalls = (stdout: string) =>
  events(stdout).filter((line) => line.type === "tool_use").map((line) => `${line.part.tool} ${JSON.stringify(line.part.state.input)}`)

describe("agent run --replay demo", () => {
  it.scopedLive("in a terminal, with no key: tool calls, an approval prompt, an edit with its diff, an answer; the project is untouched", () =>
    Effect.gen(function*() {
      const box = yield* bareProject
      const screen = yield* terminal(box, ["run", "--replay", "demo", "what is in this project?"])
      yield* screen.waitFor(/a scripted model \(no API key, no network\)/)
      yield* screen.waitFor(/✓ todowrite/)
      yield* screen.waitFor(/✓ read +project\n/)
      yield* screen.waitFor(/✓ read +README\.md/)
      yield* screen.waitFor(/✓ grep +Widget/)
      yield* screen.waitFor(/\+Explored by the agent demo/)
      yield* screen.waitFor(/Allow edit "README\.md"\?/)
      yield* screen.type("o\r")
      yield* screen.waitFor(/✓ edit +README\.md/)
      yield* screen.waitFor(/Here is what I found in project/)
      expect(yield* screen.exited, screen.screen()).toBe(0)
      expect(screen.screen()).toMatch(/README\.md begins with "# Widget"/)
      expect(fs.readFileSync(box.path("project/README.md"), "utf8")).toBe(README)
    }), 60_000)

  it.scopedLive("piped with --auto-approve it exits 0; the events show the real tools on a copy, which is removed", () =>
    Effect.gen(function*() {
      const box = yield* bareProject
      const result = yield* agent(box, ["run", "--replay", "demo", "--auto-approve", "--format", "json", "what is in this project?"])
      expect(result.code, result.stderr).toBe(0)
      const calls = toolCalls(result.stdout)
      expect(calls.map((call) => call.split(" ")[0])).toEqual(["todowrite", "read", "read", "grep", "edit", "todowrite"])
      const lines = events(result.stdout)
      const edit = lines.find((line) => line.type === "tool_use" && line.part.tool === "edit")!
      expect(edit.part.state.status).toBe("completed")
      expect(JSON.stringify(edit.part.state.metadata)).toContain("+Explored by the agent demo")
      const listing = lines.find((line) => line.type === "tool_use" && line.part.tool === "read")!
      expect(listing.part.state.output).toContain("src/")
      expect(lines.at(-1)).toMatchObject({ type: "result", status: "completed", exitCode: 0 })
      expect(lines.at(-1)!.text).toMatch(/1 directory and 1 file at its top level: README\.md/)
      const copy = /in (\S+agent-demo-\S+?)\)/.exec(result.stderr)?.[1]
      expect(copy, result.stderr).toBeDefined()
      expect(fs.existsSync(copy!)).toBe(false)
      expect(fs.readFileSync(box.path("project/README.md"), "utf8")).toBe(README)
    }), 60_000)
})

/** A scripted session: reads a file, edits it, answers. */
const session = () => [
  [text("Reading."), toolCall("read", { filePath: "notes.txt" })],
  [toolCall("edit", { filePath: "notes.txt", oldString: "hello", newString: "hello, world" })],
  "Edited the notes."
]

const projectFiles = { "project/notes.txt": "hello\n" }

/** Records the session with the mock server as the provider; the server is gone afterwards. */
const recordSession = (cassette: string, message: string) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* MockOpenAIServer.start(session())
    const titles = yield* MockOpenAIServer.start(["Notes"])
    const box = yield* TestInstance.sandbox({ files: { ...projectFiles, "project/agent.json": mockConfig(server.url, titles.url) } })
    const result = yield* agent(box, ["run", "--format", "json", "--record", cassette, message])
    expect(result.code, result.stderr).toBe(0)
    expect(fs.readFileSync(box.path("project/notes.txt"), "utf8")).toBe("hello, world\n")
    return result
  }))

/** A fresh copy of the project, its config still naming the (closed) mock servers. */
const replayProject = (extra: object = {}) =>
  TestInstance.sandbox({
    files: { ...projectFiles, "project/agent.json": mockConfig("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1", extra) }
  })

describe("agent run --record / --replay", () => {
  it.scopedLive("a recorded session replays with the same events, its tools running for real, without the model", () =>
    Effect.gen(function*() {
      const dir = yield* TestInstance.sandbox()
      const cassette = dir.path("session.jsonl")
      const recorded = yield* recordSession(cassette, "fix the notes")
      const box = yield* replayProject()
      const replayed = yield* agent(box, ["run", "--format", "json", "--replay", cassette, "fix the notes"])
      expect(replayed.code, replayed.stderr).toBe(0)
      expect(events(replayed.stdout).map((line) => line.type)).toEqual(events(recorded.stdout).map((line) => line.type))
      expect(toolCalls(replayed.stdout)).toEqual(toolCalls(recorded.stdout))
      expect(toolCalls(replayed.stdout)).toHaveLength(2)
      expect(events(replayed.stdout).at(-1)).toMatchObject({ status: "completed", text: "Edited the notes." })
      expect(fs.readFileSync(box.path("project/notes.txt"), "utf8")).toBe("hello, world\n")
    }), 60_000)

  it.scopedLive("a replay that leaves the recording exits 1 naming the model call and what differed", () =>
    Effect.gen(function*() {
      const dir = yield* TestInstance.sandbox()
      const cassette = dir.path("session.jsonl")
      yield* recordSession(cassette, "fix the notes")

      const otherMessage = yield* agent(yield* replayProject(), ["run", "--replay", cassette, "fix the docs"])
      expect(otherMessage.code).toBe(1)
      expect(otherMessage.stderr).toMatch(
        /agent: run error: mock\/model-a: replay left the recording at step 1 \(model call \d, .*session\.jsonl:\d+\): the recording has the user message "fix the notes" where this run has the user message "fix the docs"/
      )

      // A permission config that takes the edit tool away: the first step offers other tools.
      const noEdits = yield* agent(yield* replayProject({ permission: { edit: "deny" } }), ["run", "--replay", cassette, "fix the notes"])
      expect(noEdits.code).toBe(1)
      expect(noEdits.stderr).toMatch(/replay left the recording at step 1 \(model call \d, .*\): the tools offered differ: this run does not offer edit, write/)

      // One that denies this file only: the third step sees an error where the recording had an output.
      const denied = yield* agent(yield* replayProject({ permission: { edit: { "*": "allow", "notes.txt": "deny" } } }), ["run", "--replay", cassette, "fix the notes"])
      expect(denied.code).toBe(1)
      expect(denied.stderr).toMatch(/replay left the recording at step 3 \(model call \d, .*\): the recording has an output from edit where this run has an error from edit/)
    }), 60_000)

  it.scopedLive("a missing or broken cassette, or --record with --replay, is a usage error naming the problem", () =>
    Effect.gen(function*() {
      const box = yield* replayProject()
      const missing = yield* agent(box, ["run", "--replay", "nothing.jsonl", "hi"])
      expect(missing.code).toBe(2)
      expect(missing.stderr).toContain("--replay: Cassette: no recording at nothing.jsonl")
      box.write("project/broken.jsonl", '{"cassette": 1, "provider": "p", "modelId": "m"}\n{"call": "one"}\n')
      const broken = yield* agent(box, ["run", "--replay", "broken.jsonl", "hi"])
      expect(broken.code).toBe(2)
      expect(broken.stderr).toMatch(/--replay: broken\.jsonl:2: /)
      const both = yield* agent(box, ["run", "--replay", "demo", "--record", "x.jsonl", "hi"])
      expect(both.code).toBe(2)
      expect(both.stderr).toContain("--record and --replay cannot be used together")
    }), 60_000)
})

describe("the working directory", () => {
  it.scopedLive("a command started in another directory acts on that directory", () =>
    Effect.gen(function*() {
      const box = yield* bareProject
      const elsewhere = box.path("elsewhere")
      fs.mkdirSync(path.join(elsewhere, "docs"), { recursive: true })
      fs.writeFileSync(path.join(elsewhere, "GUIDE.md"), "# Guide\n")
      // A git worktree's `.git` is a file pointing at the real repository: the scratch copy leaves it out.
      fs.writeFileSync(path.join(elsewhere, ".git"), `gitdir: ${box.path("project/.git")}\n`)
      const result = yield* agent(box, ["run", "--replay", "demo", "--auto-approve", "--format", "json", "hi"], { cwd: elsewhere })
      expect(result.code, result.stderr).toBe(0)
      expect(result.stderr).toContain(`a copy of ${elsewhere} `)
      expect(toolCalls(result.stdout)).toContain('read {"filePath":"GUIDE.md"}')
      const listing = events(result.stdout).find((line) => line.type === "tool_use" && line.part.tool === "read")!
      expect(listing.part.state.output).toContain("GUIDE.md")
      expect(listing.part.state.output).not.toContain(".git")
      expect(events(result.stdout).at(-1)!.text).toMatch(/Here is what I found in elsewhere/)
    }), 60_000)

  it.scopedLive("`pnpm agent` in the checkout acts on the directory it was typed in (pnpm's INIT_CWD), not the checkout", () =>
    Effect.gen(function*() {
      const box = yield* bareProject
      const checkout = fileURLToPath(new URL("../../../", import.meta.url))
      const project = box.path("project")
      // What pnpm does: the script runs in the workspace root, with INIT_CWD naming where the user was.
      const result = yield* shell(box, `cd '${checkout}' && INIT_CWD='${project}' node scripts/agent.cjs run --replay demo --auto-approve --format json hi`)
      expect(result.code, result.stderr).toBe(0)
      expect(result.stderr).toContain(`a copy of ${project} `)
      expect(toolCalls(result.stdout)).toContain('read {"filePath":"README.md"}')
    }), 60_000)
})
