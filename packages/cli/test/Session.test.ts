import { Bus, ConfigService, Database, Instance, SessionStore } from "@agent/core"
import { emptyTokenUsage, type SessionID } from "@agent/domain"
import { MockOpenAIServer, ScriptedModel, type TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import { agent, events, project, shell } from "./AgentProcess.js"

const { finish, text, toolCall } = ScriptedModel

/** The sandbox's own database, opened by the test the way the CLI opens it. */
const store = <A, E>(box: TestInstance.Sandbox, use: Effect.Effect<A, E, SessionStore>) =>
  use.pipe(
    Effect.provide(
      SessionStore.layer.pipe(
        Layer.provideMerge(Layer.mergeAll(Database.layer, Bus.layer)),
        Layer.provideMerge(ConfigService.layer),
        Layer.provide(Layer.succeed(Instance, box.instance))
      )
    )
  )

/** Runs a prompt through the CLI and returns the new session's id. */
const runPrompt = (box: TestInstance.Sandbox, title: string, message: string) =>
  Effect.gen(function*() {
    const result = yield* agent(box, ["run", "--format", "json", "--title", title, message])
    expect(result.code, result.stderr).toBe(0)
    return events(result.stdout).at(-1)!.sessionID as SessionID
  })

describe("agent session", () => {
  it.scopedLive("list: root sessions newest first, --limit, --search, --format json", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["First answer.", "Second answer.", "Third answer."])
      const box = yield* project(server.url)
      const empty = yield* agent(box, ["session", "list"])
      expect(empty.code).toBe(0)
      expect(empty.stdout).toBe("")
      expect(empty.stderr).toContain("no sessions in this project yet")

      const notes = yield* runPrompt(box, "Read the notes", "one")
      const deploy = yield* runPrompt(box, "Deploy plan", "two")
      const release = yield* runPrompt(box, "Release notes", "three")
      // A subagent session is not a root: it is not listed.
      yield* store(box, Effect.flatMap(SessionStore, (sessions) => sessions.create({ parentID: release, title: "Child work" })))

      const all = yield* agent(box, ["session", "list"])
      expect(all.code, all.stderr).toBe(0)
      const lines = all.stdout.trim().split("\n")
      expect(lines[0]).toMatch(/^ID\s+CREATED\s+UPDATED\s+TITLE$/)
      expect(lines.slice(1).map((line) => line.split(/\s{2,}/)[0])).toEqual([release, deploy, notes])
      expect(lines[1]).toMatch(/\d{4}-\d\d-\d\d \d\d:\d\d\s+\d{4}-\d\d-\d\d \d\d:\d\d\s+Release notes$/)

      const limited = yield* agent(box, ["session", "list", "--limit", "2"])
      expect(limited.stdout.trim().split("\n").slice(1).map((line) => line.split(/\s+/)[0])).toEqual([release, deploy])
      expect(limited.stderr).toContain("more sessions than --limit 2")

      const searched = yield* agent(box, ["session", "list", "--search", "NOTES", "--format", "json"])
      expect(searched.code, searched.stderr).toBe(0)
      const found = JSON.parse(searched.stdout) as Array<{ id: string; title: string; time: { created: number } }>
      expect(found.map((session) => [session.id, session.title])).toEqual([[release, "Release notes"], [notes, "Read the notes"]])
      expect(typeof found[0]!.time.created).toBe("number")

      const bad = yield* agent(box, ["session", "list", "--limit", "0"])
      expect(bad.code).toBe(2)
      expect(bad.stderr).toContain("--limit must be at least 1")
    }), 60_000)

  it.scopedLive("show: title, agent, model, totals with subagent sessions, and the conversation", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [text("Let me look."), toolCall("read", { filePath: "notes.txt" }), finish("tool-calls", { input: 1200, output: 30 })],
        [text("The notes say hello."), finish("stop", { input: 1300, output: 8 })]
      ])
      const box = yield* project(server.url, {}, { "project/notes.txt": "hello\n" })
      const parent = yield* runPrompt(box, "Notes", "what do the notes say?")
      // A subagent session under it whose usage is added the way the loop adds it.
      const child = yield* store(box, Effect.gen(function*() {
        const sessions = yield* SessionStore
        const created = yield* sessions.create({ parentID: parent, title: "Look deeper" })
        yield* sessions.addUsage(created.id, { cost: 0.5, tokens: { ...emptyTokenUsage, input: 4000, output: 100 } })
        return created.id
      }))

      const shown = yield* agent(box, ["session", "show", parent])
      expect(shown.code, shown.stderr).toBe(0)
      const out = shown.stdout
      expect(out.split("\n")[0]).toBe("Notes")
      expect(out).toMatch(/^agent\s+build$/m)
      expect(out).toMatch(/^model\s+mock\/model-a$/m)
      expect(out).toMatch(/^tokens\s+6,500 in, 138 out, 0 reasoning, 0 cache read, 0 cache write$/m)
      expect(out).toMatch(/^cost\s+\$0\.5000\s+\(tokens and cost include subagent sessions\)$/m)
      expect(out).toMatch(new RegExp(`^subagents ${child}  Look deeper$`, "m"))
      expect(out).toMatch(/── user · \d\d:\d\d:\d\d\nwhat do the notes say\?/)
      expect(out).toMatch(/── assistant \(build, mock\/model-a\) · \d\d:\d\d:\d\d\nLet me look\.\n {2}✓ read notes\.txt/)
      expect(out).toContain("The notes say hello.")

      const json = yield* agent(box, ["session", "show", parent, "--format", "json"])
      expect(json.code, json.stderr).toBe(0)
      const data = JSON.parse(json.stdout)
      expect(data).toMatchObject({ agent: "build", model: "mock/model-a", session: { id: parent, title: "Notes", cost: 0.5 } })
      expect(data.session.tokens).toMatchObject({ input: 6500, output: 138 })
      expect(data.children.map((info: { id: string }) => info.id)).toEqual([child])
      expect(data.messages.map((message: { info: { role: string } }) => message.info.role)).toEqual(["user", "assistant", "assistant"])

      const missing = yield* agent(box, ["session", "show", "ses_nope"])
      expect(missing.code).toBe(2)
      expect(missing.stderr).toBe("agent: Session not found: ses_nope\n")
    }))

  it.scopedLive("export piped into import works; a reader that closes early ends the export quietly", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["Piped answer."])
      const box = yield* project(server.url)
      const id = yield* runPrompt(box, "Piped", "remember this")
      const other = box.path("other-data")
      const piped = yield* shell(box, `$AGENT session export ${id} | XDG_DATA_HOME=${other} $AGENT session import -`)
      expect(piped.stderr).toBe("")
      expect(piped.code).toBe(0)
      expect(piped.stdout).toBe(`imported ${id} "Piped" (2 messages)\n`)
      const closed = yield* shell(box, `$AGENT session export ${id} | true`)
      expect(closed.stderr).toBe("")
      expect(closed.code).toBe(0)
    }), 60_000)

  it.scopedLive("export, delete (with subagent sessions) and import round-trip; bad imports exit 2", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["Exported answer."])
      const box = yield* project(server.url)
      const parent = yield* runPrompt(box, "Keep me", "remember this")
      const child = yield* store(box, Effect.map(
        Effect.flatMap(SessionStore, (sessions) => sessions.create({ parentID: parent, title: "Sub work" })),
        (created) => created.id
      ))

      const toStdout = yield* agent(box, ["session", "export", parent])
      expect(toStdout.code, toStdout.stderr).toBe(0)
      const exported = JSON.parse(toStdout.stdout)
      expect(exported.info).toMatchObject({ id: parent, title: "Keep me" })
      expect(exported.children.map((node: { info: { id: string } }) => node.info.id)).toEqual([child])
      expect(JSON.stringify(exported.messages)).toContain("Exported answer.")

      const file = box.path("keep.json")
      const toFile = yield* agent(box, ["session", "export", parent, file])
      expect(toFile.code, toFile.stderr).toBe(0)
      expect(toFile.stdout).toBe("")
      expect(fs.readFileSync(file, "utf8")).toBe(toStdout.stdout)

      const deleted = yield* agent(box, ["session", "delete", parent])
      expect(deleted.code, deleted.stderr).toBe(0)
      expect(deleted.stdout).toBe(`deleted ${parent} "Keep me" and 1 subagent session\n`)
      for (const id of [parent, child]) {
        const gone = yield* agent(box, ["session", "show", id])
        expect(gone.code).toBe(2)
        expect(gone.stderr).toContain(`Session not found: ${id}`)
      }
      expect((yield* agent(box, ["session", "delete", parent])).code).toBe(2)
      expect((yield* agent(box, ["session", "export", parent])).code).toBe(2)

      const imported = yield* agent(box, ["session", "import", file])
      expect(imported.code, imported.stderr).toBe(0)
      expect(imported.stdout).toBe(`imported ${parent} "Keep me" (2 messages, 1 subagent sessions)\n`)
      const again = yield* agent(box, ["session", "export", parent])
      expect(JSON.parse(again.stdout)).toEqual(exported)
      const listed = yield* agent(box, ["session", "list"])
      expect(listed.stdout).toContain(parent)

      // From stdin, a second time: the ids exist already.
      const twice = yield* agent(box, ["session", "import", "-"], { stdin: toStdout.stdout })
      expect(twice.code).toBe(2)
      expect(twice.stderr).toContain(`Cannot import session: session ${parent} already exists`)

      box.write("broken.json", '{"info": {"id": ')
      const broken = yield* agent(box, ["session", "import", box.path("broken.json")])
      expect(broken.code).toBe(2)
      expect(broken.stderr).toMatch(/broken\.json is not a session export: not JSON/)

      box.write("other.json", { hello: "world" })
      const other = yield* agent(box, ["session", "import", box.path("other.json")])
      expect(other.code).toBe(2)
      expect(other.stderr).toMatch(/^agent: Cannot import session: not a session export: info: is missing/)
      expect(other.stderr.length).toBeLessThan(300)

      const absent = yield* agent(box, ["session", "import", box.path("absent.json")])
      expect(absent.code).toBe(2)
      expect(absent.stderr).toContain("no such file")
    }), 120_000)
})
