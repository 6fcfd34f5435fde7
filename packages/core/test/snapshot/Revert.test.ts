import type { MessageWithParts, Part } from "@agent/domain"
import { ScriptedModel, TestDatabase, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Chunk, Effect, Fiber, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Bus } from "../../src/runtime/Bus.js"
import { SessionChanges, unifiedDiff } from "../../src/snapshot/SessionChanges.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import { Snapshot } from "../../src/snapshot/Snapshot.js"
import * as SnapshotTree from "../../src/snapshot/Tree.js"
import { sleeper } from "../loop/tools.js"
import { hasObject, makeUserRepo, readState, repoFingerprint, storeGit } from "./helpers.js"

const { text, toolCall } = ScriptedModel

const patchesOf = (message: MessageWithParts | undefined) =>
  (message?.parts ?? []).filter((part): part is Extract<Part, { type: "patch" }> => part.type === "patch")

const INITIAL = {
  "src/a.ts": "export const a1 = 1\n",
  "src/b.ts": "export const b = 2\n",
  "src/c.ts": "export const c1 = 3\n",
  "src/d.ts": "export const d = 4 // never touched\n",
  "src/old.ts": "export const old = true\n",
  "notes.md": "# notes\n",
  ".gitignore": "build/\n*.log\n"
}

/** Every file the session or the user touches, for byte-for-byte comparisons. */
const WATCHED = [
  "src/a.ts", "src/b.ts", "src/c.ts", "src/d.ts", "src/old.ts", "src/new.ts", "notes.md",
  "gen/out.txt", "run.sh", "bin.dat", "deep/er/file.txt"
]

describe("snapshots, patches and revert on a real repository", () => {
  it.scopedLive("patches list exactly the changed files; revert restores them byte for byte, reports the user's edit; unrevert puts them back; the user's repository is untouched", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        // first prompt
        [
          toolCall("write", { filePath: "src/new.ts", content: "export const v = 1\n" }),
          toolCall("edit", { filePath: "src/a.ts", oldString: "a1", newString: "A1" })
        ],
        [toolCall("bash", {
          command: "mkdir -p gen build && printf 'generated\\n' > gen/out.txt && rm src/old.ts && printf 'more\\n' >> src/b.ts" +
            " && printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod +x run.sh && head -c 256 /dev/urandom > bin.dat" +
            " && echo ignored > build/x.txt && echo log > debug.log",
          description: "make files"
        })],
        "first done",
        // second prompt
        [
          toolCall("edit", { filePath: "src/c.ts", oldString: "c1", newString: "C1" }),
          toolCall("write", { filePath: "src/new.ts", content: "export const v = 2\n" })
        ],
        [toolCall("bash", {
          command: "rm src/a.ts && printf 'tail\\n' >> run.sh && chmod -x run.sh && printf '\\000\\001changed' > bin.dat" +
            " && mkdir -p deep/er && echo nested > deep/er/file.txt",
          description: "more changes"
        })],
        "second done",
        // third prompt, after a revert
        "third done"
      ])
      const runtime = yield* TestRuntime.make({ model, files: { "project/agent.json": { permission: { "*": "allow" } } } })
      const project = runtime.box.path("project")
      const home = runtime.box.instance.home
      const marker = runtime.box.path("hooks-ran")
      makeUserRepo(project, home, INITIAL, marker)
      const fingerprint = repoFingerprint(project, home)
      const abs = (file: string) => path.join(project, file)

      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const changes = yield* SessionChanges
        const session = yield* store.create()
        const say = (text: string) => loop.prompt({ sessionID: session.id, parts: [{ type: "text", text }] })

        expect((yield* say("first")).reason).toBe("completed")
        const afterFirst = readState(project, WATCHED)
        expect((yield* say("second")).reason).toBe("completed")
        const afterSecond = readState(project, WATCHED)

        // --- patch parts list exactly the files each step changed (ignored files left out)
        const messages = yield* store.messages(session.id)
        expect(messages.map((message) => message.info.role)).toEqual([
          "user", "assistant", "assistant", "assistant", "user", "assistant", "assistant", "assistant"
        ])
        const [, step1, step2, step3, secondUser, step4, step5, step6] = messages
        expect(patchesOf(step1).map((patch) => patch.files)).toEqual([[abs("src/a.ts"), abs("src/new.ts")]])
        expect(patchesOf(step2).map((patch) => patch.files)).toEqual([
          [abs("bin.dat"), abs("gen/out.txt"), abs("run.sh"), abs("src/b.ts"), abs("src/old.ts")]
        ])
        expect(patchesOf(step3)).toEqual([])
        expect(patchesOf(step4).map((patch) => patch.files)).toEqual([[abs("src/c.ts"), abs("src/new.ts")]])
        expect(patchesOf(step5).map((patch) => patch.files)).toEqual([
          [abs("bin.dat"), abs("deep/er/file.txt"), abs("run.sh"), abs("src/a.ts")]
        ])
        expect(patchesOf(step6)).toEqual([])
        // every step starts and finishes with a snapshot; a patch names the snapshot it started from
        for (const step of [step1, step2, step3, step4, step5, step6]) {
          const start = step!.parts.find((part) => part.type === "step-start")
          const finish = step!.parts.find((part) => part.type === "step-finish")
          expect(start?.type === "step-start" && start.snapshot).toMatch(/^[0-9a-f]{40}$/)
          expect(finish?.type === "step-finish" && finish.snapshot).toMatch(/^[0-9a-f]{40}$/)
          for (const patch of patchesOf(step)) expect(patch.hash).toBe(start?.type === "step-start" && start.snapshot)
        }

        // --- the session's diff: net changes, kept on the session
        const summarized = yield* store.get(session.id)
        expect(summarized.summary?.files).toBe(9)
        const diff = yield* changes.diff(session.id)
        expect(diff.map((file) => [file.file, file.status])).toEqual([
          ["bin.dat", "added"],
          ["deep/er/file.txt", "added"],
          ["gen/out.txt", "added"],
          ["run.sh", "added"],
          ["src/a.ts", "deleted"],
          ["src/b.ts", "modified"],
          ["src/c.ts", "modified"],
          ["src/new.ts", "added"],
          ["src/old.ts", "deleted"]
        ])
        expect(diff.find((file) => file.file === "bin.dat")?.binary).toBe(true)
        expect(diff.find((file) => file.file === "src/c.ts")).toMatchObject({
          before: INITIAL["src/c.ts"],
          after: "export const C1 = 3\n",
          additions: 1,
          deletions: 1
        })
        expect(summarized.summary).toMatchObject({
          additions: diff.reduce((sum, file) => sum + file.additions, 0),
          deletions: diff.reduce((sum, file) => sum + file.deletions, 0)
        })
        expect(unifiedDiff(diff.find((file) => file.file === "src/c.ts")!)).toContain("+export const C1 = 3")

        // --- the user edits a file the session changed, and one it never touched
        fs.writeFileSync(abs("src/c.ts"), "export const c = 'the user was here'\n")
        fs.writeFileSync(abs("notes.md"), "# notes\nthe user's own edit\n")
        const userState = readState(project, ["src/c.ts", "notes.md", "src/d.ts"])

        // --- revert to the second prompt
        const reverted = yield* changes.revert({ sessionID: session.id, messageID: secondUser!.info.id })
        expect(reverted.conflicts).toEqual([abs("src/c.ts")])
        expect([...reverted.restored].sort()).toEqual(
          [abs("bin.dat"), abs("deep/er/file.txt"), abs("run.sh"), abs("src/a.ts"), abs("src/new.ts")]
        )
        const nowReverted = readState(project, WATCHED)
        for (const file of ["bin.dat", "run.sh", "src/a.ts", "src/new.ts", "src/b.ts", "gen/out.txt", "src/old.ts", "deep/er/file.txt"]) {
          expect({ file, state: nowReverted[file] }).toEqual({ file, state: afterFirst[file] })
        }
        expect(fs.existsSync(abs("deep"))).toBe(false) // the directory the undone step made is gone too
        expect(readState(project, ["src/c.ts", "notes.md", "src/d.ts"])).toEqual(userState)
        expect(reverted.session.revert).toMatchObject({ messageID: secondUser!.info.id, conflicts: [abs("src/c.ts")] })
        expect(reverted.session.revert?.diff).toContain("-export const v = 2")
        // later messages are hidden, not gone
        expect((yield* changes.visibleMessages(session.id)).map((message) => message.info.id)).toEqual(
          messages.slice(0, 4).map((message) => message.info.id)
        )
        expect(yield* store.messages(session.id)).toHaveLength(8)
        // the diff now covers what is still shown
        expect((yield* changes.diff(session.id)).map((file) => file.file)).toEqual([
          "bin.dat", "gen/out.txt", "run.sh", "src/a.ts", "src/b.ts", "src/new.ts", "src/old.ts"
        ])

        // --- unrevert puts the reverted files back; the user's edits stay
        const unreverted = yield* changes.unrevert(session.id)
        expect(unreverted.conflicts).toEqual([])
        expect(unreverted.session.revert).toBeUndefined()
        const back = readState(project, WATCHED)
        for (const file of ["bin.dat", "run.sh", "src/a.ts", "src/new.ts", "deep/er/file.txt", "src/b.ts"]) {
          expect({ file, state: back[file] }).toEqual({ file, state: afterSecond[file] })
        }
        expect(readState(project, ["src/c.ts", "notes.md", "src/d.ts"])).toEqual(userState)
        expect(yield* changes.visibleMessages(session.id)).toHaveLength(8)

        // --- revert again, then a new prompt removes the hidden messages for good
        yield* changes.revert({ sessionID: session.id, messageID: secondUser!.info.id })
        expect((yield* say("third")).reason).toBe("completed")
        const final = yield* store.messages(session.id)
        expect(final.map((message) => message.info.role)).toEqual(["user", "assistant", "assistant", "assistant", "user", "assistant"])
        expect(final.some((message) => message.info.id === secondUser!.info.id || message.info.id === step5!.info.id)).toBe(false)
        expect((yield* store.get(session.id)).revert).toBeUndefined()
        expect(readState(project, ["src/new.ts", "src/a.ts"])).toEqual({ "src/new.ts": afterFirst["src/new.ts"], "src/a.ts": afterFirst["src/a.ts"] })
      }).pipe(Effect.provide(runtime.layer))

      // --- the user's repository: index, stash, refs, objects and hooks untouched
      expect(repoFingerprint(project, home)).toBe(fingerprint)
      expect(fs.existsSync(marker)).toBe(false)
      // --- and the snapshot store is a sound git store, outside the project
      const store = path.join(runtime.box.instance.paths.data, "snapshot", runtime.box.instance.projectID)
      expect(store.startsWith(project)).toBe(false)
      storeGit(store, "fsck", "--strict", "--no-dangling")
    }))

  // On both backends: the session diff and the collection's queries are SQL of their own.
  for (const backend of TestDatabase.backends()) {
    it.scopedLive(`reverting to a part undoes that step and everything after it, keeping the parts before (${backend})`, () =>
      Effect.gen(function*() {
        const model = ScriptedModel.make([
          [toolCall("write", { filePath: "one.txt", content: "one\n" })],
          [text("now two"), toolCall("write", { filePath: "two.txt", content: "two\n" })],
          "done"
        ])
        const runtime = yield* TestRuntime.make({ model, backend })
        const project = runtime.box.path("project")
        yield* Effect.gen(function*() {
          const store = yield* SessionStore
          const changes = yield* SessionChanges
          const session = yield* store.create()
          yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }] })
          const [, , second] = yield* store.messages(session.id)
          const tool = second!.parts.find((part) => part.type === "tool")!
          const result = yield* changes.revert({ sessionID: session.id, messageID: second!.info.id, partID: tool.id })
          expect(result.restored).toEqual([path.join(project, "two.txt")])
          expect(fs.existsSync(path.join(project, "two.txt"))).toBe(false)
          expect(fs.readFileSync(path.join(project, "one.txt"), "utf8")).toBe("one\n")
          const shown = yield* changes.visibleMessages(session.id)
          expect(shown).toHaveLength(3)
          expect(shown[2]!.parts.map((part) => part.type)).toEqual(["step-start", "text"])
        }).pipe(Effect.provide(runtime.layer))
      }))
  }

  it.scopedLive("revert while the session runs is refused, and an unknown point is a clear error", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make(["hello", [toolCall("sleeper", { seconds: 30 })], "woke up"])
      const runtime = yield* TestRuntime.make({ model, tools: [sleeper] })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const changes = yield* SessionChanges
        const session = yield* store.create()
        yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "hi" }] })
        const missing = yield* Effect.flip(changes.revert({ sessionID: session.id, messageID: "msg_00000000000000aaaaaaaaaaaa" as never }))
        expect(missing).toMatchObject({ _tag: "RevertError", reason: "point_not_found" })
        expect(missing.message).toContain("msg_00000000000000aaaaaaaaaaaa")
        const notReverted = yield* Effect.flip(changes.unrevert(session.id))
        expect(notReverted).toMatchObject({ reason: "not_reverted" })

        const [first] = yield* store.messages(session.id)
        const run = yield* Effect.fork(loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "sleep" }] }))
        // wait until the sleeper runs
        for (;;) {
          const messages = yield* store.messages(session.id)
          if (messages.some((message) => message.parts.some((part) => part.type === "tool" && part.state.status === "running"))) break
          yield* Effect.sleep("20 millis")
        }
        const busy = yield* Effect.flip(changes.revert({ sessionID: session.id, messageID: first!.info.id }))
        expect(busy).toMatchObject({ reason: "busy" })
        expect(busy.message).toContain("is running")
        yield* loop.abort(session.id)
        yield* Fiber.join(run)
        expect((yield* store.get(session.id)).revert).toBeUndefined()
      }).pipe(Effect.provide(runtime.layer))
    }))

  it.scopedLive("an aborted step still records what it changed, so it can be undone", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[toolCall("bash", { command: "echo half > made.txt && sleep 30", description: "slow" })], "never"])
      const runtime = yield* TestRuntime.make({ model })
      const project = runtime.box.path("project")
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const session = yield* store.create()
        const run = yield* Effect.fork(loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }] }))
        while (!fs.existsSync(path.join(project, "made.txt"))) yield* Effect.sleep("20 millis")
        yield* loop.abort(session.id)
        expect((yield* Fiber.join(run)).reason).toBe("aborted")
        const [user, step] = yield* store.messages(session.id)
        expect(patchesOf(step).map((patch) => patch.files)).toEqual([[path.join(project, "made.txt")]])
        expect(step!.parts.some((part) => part.type === "snapshot")).toBe(true)
        const result = yield* (yield* SessionChanges).revert({ sessionID: session.id, messageID: user!.info.id })
        expect(result.restored).toEqual([path.join(project, "made.txt")])
        expect(fs.existsSync(path.join(project, "made.txt"))).toBe(false)
      }).pipe(Effect.provide(runtime.layer))
    }))

  it.scopedLive("a subagent's changes count in the parent's diff and are undone with the parent's revert", () =>
    Effect.gen(function*() {
      const router = (options: Parameters<typeof ScriptedModel.lastUserText>[0]) => {
        const user = ScriptedModel.lastUserText(options)
        const results = options.prompt.filter((entry) => entry.role === "tool").length
        if (user.includes("write the child file")) {
          return results === 0 ? [toolCall("write", { filePath: "child.txt", content: "from the child\n" })] : [text("child done")]
        }
        return results === 0
          ? [toolCall("task", { description: "Write a file", prompt: "write the child file", subagent_type: "general" })]
          : [text("parent done")]
      }
      const runtime = yield* TestRuntime.make({ model: ScriptedModel.make(Array.from({ length: 10 }, () => router)) })
      const project = runtime.box.path("project")
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const changes = yield* SessionChanges
        const session = yield* store.create()
        yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "delegate" }] })
        expect(fs.readFileSync(path.join(project, "child.txt"), "utf8")).toBe("from the child\n")
        expect((yield* changes.diff(session.id)).map((file) => [file.file, file.status])).toEqual([["child.txt", "added"]])
        expect((yield* store.get(session.id)).summary).toMatchObject({ files: 1, additions: 1, deletions: 0 })
        const [user] = yield* store.messages(session.id)
        const result = yield* changes.revert({ sessionID: session.id, messageID: user!.info.id })
        expect(result.restored).toEqual([path.join(project, "child.txt")])
        expect(fs.existsSync(path.join(project, "child.txt"))).toBe(false)
      }).pipe(Effect.provide(runtime.layer))
    }))
})

describe("snapshot store limits and garbage collection", () => {
  // On both backends: the session diff and the collection's queries are SQL of their own.
  for (const backend of TestDatabase.backends()) {
    it.scopedLive(`garbage collection removes the snapshot data of a deleted session (${backend})`, () =>
      Effect.gen(function*() {
        const secret = `only this session ever wrote this ${Math.random()}\n`
        const model = ScriptedModel.make([
          [toolCall("write", { filePath: "secret.txt", content: secret })],
          [toolCall("bash", { command: "rm secret.txt", description: "remove it" })],
          "done"
        ])
        const runtime = yield* TestRuntime.make({ model, backend })
        yield* Effect.gen(function*() {
          const store = yield* SessionStore
          const snapshot = yield* Snapshot
          const session = yield* store.create()
          yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }] })
          const status = yield* snapshot.status()
          const [, written] = yield* store.messages(session.id)
          const finish = written!.parts.find((part) => part.type === "step-finish")!
          const snapshotID = finish.type === "step-finish" ? finish.snapshot! : ""
          const entry = (yield* snapshot.entries(snapshotID, ["secret.txt"])).get("secret.txt")!
          expect(hasObject(status.store, entry.id)).toBe(true)

          // Still referenced: a collection keeps it.
          yield* snapshot.gc({ grace: 0 })
          expect(hasObject(status.store, entry.id)).toBe(true)
          expect(hasObject(status.store, snapshotID)).toBe(true)

          yield* store.remove(session.id)
          const report = yield* snapshot.gc({ grace: 0 })
          expect(hasObject(status.store, entry.id)).toBe(false)
          expect(hasObject(status.store, snapshotID)).toBe(false)
          expect(report.bytesAfter).toBeLessThan(report.bytesBefore)
          // reading a collected snapshot is a clear error
          const missing = yield* Effect.flip(snapshot.entries(snapshotID, ["secret.txt"]))
          expect(missing.message).toContain("not in the store")
        }).pipe(Effect.provide(runtime.layer))
      }))
  }

  // On both backends: the session diff and the collection's queries are SQL of their own.
  for (const backend of TestDatabase.backends()) {
    it.scopedLive(`garbage collection drops the snapshots of sessions idle past the retention period, and keeps the others (${backend})`, () =>
      Effect.gen(function*() {
        const oldText = `old session ${Math.random()}\n`
        const newText = `recent session ${Math.random()}\n`
        const model = ScriptedModel.make([
          [toolCall("write", { filePath: "old.txt", content: oldText })],
          [toolCall("bash", { command: "rm old.txt", description: "remove" })],
          "done",
          [toolCall("write", { filePath: "new.txt", content: newText })],
          [toolCall("bash", { command: "rm new.txt", description: "remove" })],
          "done"
        ])
        const runtime = yield* TestRuntime.make({ model, backend, files: { "project/agent.json": { snapshot_store: { retention_days: 3 } } } })
        yield* Effect.gen(function*() {
          const store = yield* SessionStore
          const snapshot = yield* Snapshot
          const loop = yield* SessionLoop
          const sql = yield* SqlClient.SqlClient
          const older = yield* store.create()
          yield* loop.prompt({ sessionID: older.id, parts: [{ type: "text", text: "go" }] })
          const recent = yield* store.create()
          yield* loop.prompt({ sessionID: recent.id, parts: [{ type: "text", text: "go" }] })
          const { store: dir } = yield* snapshot.status()
          const blob = (text: string) => SnapshotTree.ObjectWriter.hash("blob", Buffer.from(text))
          expect([hasObject(dir, blob(oldText)), hasObject(dir, blob(newText))]).toEqual([true, true])
          yield* sql`UPDATE session SET time_updated = ${Date.now() - 4 * 24 * 60 * 60 * 1000} WHERE id = ${older.id}`
          yield* snapshot.gc({ grace: 0 })
          expect([hasObject(dir, blob(oldText)), hasObject(dir, blob(newText))]).toEqual([false, true])
        }).pipe(Effect.provide(runtime.layer))
      }))
  }

  it.scopedLive("a 50 000-file tree is over the limit: snapshots are disabled with a clear message and the run goes on", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[toolCall("write", { filePath: "new.txt", content: "x\n" })], "done"])
      const runtime = yield* TestRuntime.make({ model })
      const project = runtime.box.path("project")
      for (let dir = 0; dir < 100; dir++) {
        fs.mkdirSync(path.join(project, `d${dir}`))
        for (let file = 0; file < 500; file++) fs.writeFileSync(path.join(project, `d${dir}`, `f${file}.txt`), `${dir}/${file}\n`)
      }
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const bus = yield* Bus
        const events = yield* bus.subscribe({ types: ["snapshot.disabled"] })
        const session = yield* store.create()
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }] })
        expect(outcome.reason).toBe("completed")
        expect(fs.readFileSync(path.join(project, "new.txt"), "utf8")).toBe("x\n")
        const status = yield* (yield* Snapshot).status()
        expect(status.enabled).toBe(false)
        expect(status.reason).toContain("more than 25000 files")
        expect(status.reason).toContain("snapshot_store.max_files")
        const [event] = Chunk.toArray(yield* Stream.runCollect(Stream.take(events, 1)))
        expect(event?.properties).toEqual({ directory: project, reason: status.reason })
        const [, step] = yield* store.messages(session.id)
        const start = step!.parts.find((part) => part.type === "step-start")
        expect(start?.type === "step-start" && start.snapshot).toBeUndefined()
        expect(step!.parts.some((part) => part.type === "patch")).toBe(false)
      }).pipe(Effect.provide(runtime.layer))
    }))

  it.scopedLive("a home directory is refused; files over the size cap are left out", () =>
    Effect.gen(function*() {
      const home = yield* TestRuntime.make({ model: ScriptedModel.make(["hi"]), cwd: "home", git: false })
      const homeStatus = yield* Effect.flatMap(Snapshot, (snapshot) => Effect.zipRight(snapshot.track(), snapshot.status())).pipe(
        Effect.provide(home.layer)
      )
      expect(homeStatus).toMatchObject({ enabled: false, reason: expect.stringContaining("is your home directory") })

      const model = ScriptedModel.make([
        [toolCall("bash", { command: "head -c 5000 /dev/zero > big.bin && echo small > small.txt", description: "files" })],
        "done"
      ])
      const capped = yield* TestRuntime.make({
        model,
        files: { "project/agent.json": { snapshot_store: { max_file_size: 1000 } } }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create()
        yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }] })
        const [, step] = yield* store.messages(session.id)
        expect(patchesOf(step).map((patch) => patch.files)).toEqual([[capped.box.path("project/small.txt")]])
      }).pipe(Effect.provide(capped.layer))
    }))

  it.scopedLive("snapshot: false turns snapshots off", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[toolCall("write", { filePath: "a.txt", content: "a\n" })], "done"])
      const runtime = yield* TestRuntime.make({ model, files: { "project/agent.json": { snapshot: false } } })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create()
        yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }] })
        const [, step] = yield* store.messages(session.id)
        expect(step!.parts.map((part) => part.type)).toEqual(["step-start", "tool", "step-finish"])
        const status = yield* (yield* Snapshot).status()
        expect(status).toMatchObject({ enabled: false, reason: expect.stringContaining("snapshot: false") })
        expect(fs.existsSync(status.store)).toBe(false)
      }).pipe(Effect.provide(runtime.layer))
    }))
})
