import { type MessageID, MessageNotFound, type MessageWithParts, type SessionID, SessionImportError, SessionNotFound, type TokenUsage } from "@agent/domain"
import { TestData, TestDatabase, TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { SqlClient } from "@effect/sql"
import { SqliteClient, SqliteMigrator } from "@effect/sql-sqlite-node"
import { Cause, Chunk, Context, Effect, Exit, Fiber, Layer, Stream } from "effect"
import * as fs from "node:fs"
import { Bus } from "../../src/runtime/Bus.js"
import * as Database from "../../src/store/Database.js"
import { Instance } from "../../src/runtime/Instance.js"
import initial from "../../src/store/migrations/0001_initial.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import { storeLayer, withStore } from "./fixtures/StoreOn.js"

const usage = (cost: number, input: number): { cost: number; tokens: TokenUsage } => ({
  cost,
  tokens: { input, output: 2 * input, reasoning: 1, cache: { read: 3, write: 4 } }
})

const count = (sql: SqlClient.SqlClient, table: string) =>
  sql<{ n: number }>`SELECT count(*) AS n FROM ${sql(table)}`.pipe(Effect.map((rows) => rows[0]!.n), Effect.orDie)

describe.each(TestDatabase.backends())("store on %s", (backend) => {
  describe("sessions", () => {
    it.scoped("create, get, update and list", () =>
      withStore(backend, (store) =>
        Effect.gen(function*() {
          const first = yield* store.create({ title: "Fix the parser" })
          const second = yield* store.create({ agent: "plan", model: { id: "gpt-5", providerID: "openai" } })
          expect(first.title).toBe("Fix the parser")
          expect(second.title).toMatch(/^New session - \d{4}-/)
          expect(second.id < first.id).toBe(true) // newest sorts first
          expect(yield* store.get(second.id)).toEqual(second)

          const renamed = yield* store.update(first.id, { title: "Fix the lexer", archived: 123 })
          expect(renamed.title).toBe("Fix the lexer")
          expect(renamed.time.archived).toBe(123)
          expect((yield* store.update(first.id, { archived: null })).time.archived).toBeUndefined()

          const listed = yield* store.list()
          expect(listed.items.map((session) => session.id)).toEqual([second.id, first.id])
          const missing = yield* Effect.flip(store.get("ses_zzzzzzzzzzzzzzzzzzzzzzzzzz" as SessionID))
          expect(missing).toBeInstanceOf(SessionNotFound)
          expect(yield* Effect.flip(store.update("ses_zzzzzzzzzzzzzzzzzzzzzzzzzz" as SessionID, { title: "x" }))).toBeInstanceOf(
            SessionNotFound
          )
        })
      ))

    it.scoped("lists roots only, pages with a cursor and searches titles literally", () =>
      withStore(backend, (store) =>
        Effect.gen(function*() {
          const titles = ["alpha one", "beta two", "alpha three", "100% done", "under_score", "ALPHA four", "gamma"]
          const made = []
          for (const title of titles) made.push(yield* store.create({ title }))
          yield* store.create({ parentID: made[0]!.id, title: "alpha child" })

          const page1 = yield* store.list({ limit: 3 })
          const page2 = yield* store.list({ limit: 3, cursor: page1.next! })
          const page3 = yield* store.list({ limit: 3, cursor: page2.next! })
          const all = [...page1.items, ...page2.items, ...page3.items].map((session) => session.title)
          expect(all).toEqual([...titles].reverse())
          expect(page3.next).toBeUndefined()

          const alpha = yield* store.list({ search: "alpha" })
          expect(alpha.items.map((session) => session.title)).toEqual(["ALPHA four", "alpha three", "alpha one"])
          expect((yield* store.list({ search: "%" })).items.map((session) => session.title)).toEqual(["100% done"])
          expect((yield* store.list({ search: "_" })).items.map((session) => session.title)).toEqual(["under_score"])
        })
      ))

    it.scoped("deleting a root removes a 3-level tree and everything in it", () =>
      withStore(backend, (store, sql) =>
        Effect.gen(function*() {
          const bus = yield* Bus
          const deleted = yield* bus.subscribe({ types: ["session.deleted"] })
          const root = yield* store.create({ title: "root" })
          const child = yield* store.create({ parentID: root.id, title: "child" })
          const grandchild = yield* store.create({ parentID: child.id, title: "grandchild" })
          const keep = yield* store.create({ title: "unrelated" })
          for (const session of [root, child, grandchild, keep]) {
            const user = TestData.userMessage(session.id)
            yield* store.upsertMessage(user)
            yield* store.upsertPart(TestData.textPart(user, `hello ${session.title}`))
            yield* store.setTodos(session.id, [{ content: "do it", status: "pending", priority: "high" }])
          }
          expect((yield* store.children(root.id)).map((session) => session.id)).toEqual([child.id])

          yield* store.remove(root.id)
          for (const session of [root, child, grandchild]) {
            expect(yield* Effect.flip(store.get(session.id))).toBeInstanceOf(SessionNotFound)
          }
          expect(yield* count(sql, "session")).toBe(1)
          expect(yield* count(sql, "message")).toBe(1)
          expect(yield* count(sql, "part")).toBe(1)
          expect(yield* count(sql, "todo")).toBe(1)
          const events = yield* Stream.runCollect(Stream.take(deleted, 3))
          expect(Chunk.toArray(events).map((event) => event.properties.info.title).sort()).toEqual(["child", "grandchild", "root"])
          expect(yield* Effect.flip(store.remove(root.id))).toBeInstanceOf(SessionNotFound)
        })
      ))

    it.scoped("fork copies the messages before a message under new ids", () =>
      withStore(backend, (store) =>
        Effect.gen(function*() {
          const source = yield* store.create({ title: "Refactor", agent: "plan" })
          const ids: Array<MessageID> = []
          for (let turn = 0; turn < 3; turn++) {
            const user = TestData.userMessage(source.id)
            const reply = TestData.assistantMessage(source.id, user.id)
            yield* store.upsertMessage(user)
            yield* store.upsertPart(TestData.textPart(user, `question ${turn}`))
            yield* store.upsertMessage(reply)
            yield* store.upsertPart(TestData.textPart(reply, `answer ${turn}`))
            ids.push(user.id, reply.id)
          }
          const fork = yield* store.fork(source.id, { messageID: ids[4]! })
          expect(fork.title).toBe("Refactor (fork #1)")
          expect(fork.agent).toBe("plan")
          const copied = yield* store.messages(fork.id)
          expect(copied.map((message) => message.parts.map((part) => (part.type === "text" ? part.text : "")))).toEqual([
            ["question 0"],
            ["answer 0"],
            ["question 1"],
            ["answer 1"]
          ])
          expect(copied.every((message) => !ids.includes(message.info.id) && message.info.sessionID === fork.id)).toBe(true)
          const [user0, reply0] = copied
          expect(reply0!.info.role === "assistant" && reply0!.info.parentID).toBe(user0!.info.id)
          expect(reply0!.parts[0]!.messageID).toBe(reply0!.info.id)
          // the source is untouched; a fork of the fork counts on
          expect((yield* store.messages(source.id)).length).toBe(6)
          expect((yield* store.fork(fork.id)).title).toBe("Refactor (fork #2)")
          expect((yield* store.messages((yield* store.fork(source.id)).id)).length).toBe(6)
        })
      ))

    it.scoped("usage rolls up from a grandchild to every ancestor", () =>
      withStore(backend, (store) =>
        Effect.gen(function*() {
          const root = yield* store.create()
          const child = yield* store.create({ parentID: root.id })
          const grandchild = yield* store.create({ parentID: child.id })
          const sibling = yield* store.create({ parentID: root.id })
          yield* store.addUsage(root.id, usage(0.5, 100))
          yield* store.addUsage(grandchild.id, usage(0.25, 10))
          yield* store.addUsage(sibling.id, usage(0.125, 1))
          expect((yield* store.get(root.id)).cost).toBe(0.875)
          expect((yield* store.get(root.id)).tokens).toEqual({ input: 111, output: 222, reasoning: 3, cache: { read: 9, write: 12 } })
          expect((yield* store.get(child.id)).cost).toBe(0.25)
          expect((yield* store.get(grandchild.id)).tokens?.input).toBe(10)
          expect((yield* store.get(sibling.id)).cost).toBe(0.125)
        })
      ))
  })

  describe("messages and parts", () => {
    it.scoped("pages newest first with a cursor, or loads everything oldest first", () =>
      withStore(backend, (store) =>
        Effect.gen(function*() {
          const session = yield* store.create()
          const ids: Array<MessageID> = []
          for (let index = 0; index < 25; index++) {
            const user = TestData.userMessage(session.id)
            yield* store.upsertMessage(user)
            yield* store.upsertPart(TestData.textPart(user, `m${index}`))
            yield* store.upsertPart(TestData.toolPart(user, "completed"))
            ids.push(user.id)
          }
          const page1 = yield* store.messagePage(session.id, { limit: 10 })
          const page2 = yield* store.messagePage(session.id, { limit: 10, before: page1.next! })
          const page3 = yield* store.messagePage(session.id, { limit: 10, before: page2.next! })
          expect([...page1.items, ...page2.items, ...page3.items].map((message) => message.info.id)).toEqual([...ids].reverse())
          expect(page3.items.length).toBe(5)
          expect(page3.next).toBeUndefined()
          expect(page1.items[0]!.parts.map((part) => part.type)).toEqual(["text", "tool"])
          const all = yield* store.messages(session.id)
          expect(all.map((message) => message.info.id)).toEqual(ids)

          const one = yield* store.getMessage(session.id, ids[3]!)
          expect(one.parts[0]).toMatchObject({ type: "text", text: "m3" })
          yield* store.removeMessage(session.id, ids[3]!)
          expect(yield* Effect.flip(store.getMessage(session.id, ids[3]!))).toBeInstanceOf(MessageNotFound)
          yield* store.removePart(session.id, ids[4]!, one.parts[0]!.id) // wrong message: no-op on others
          const fifth = yield* store.getMessage(session.id, ids[4]!)
          yield* store.removePart(session.id, ids[4]!, fifth.parts[1]!.id)
          expect((yield* store.getMessage(session.id, ids[4]!)).parts.map((part) => part.type)).toEqual(["text"])
        })
      ))

    it.scoped("the compacted view starts at the last completed compaction, keeping its tail", () =>
      withStore(backend, (store) =>
        Effect.gen(function*() {
          const session = yield* store.create()
          const turn = (text: string) =>
            Effect.gen(function*() {
              const user = TestData.userMessage(session.id)
              yield* store.upsertMessage(user)
              yield* store.upsertPart(TestData.textPart(user, text))
              const reply = TestData.assistantMessage(session.id, user.id, { finish: "stop" })
              yield* store.upsertMessage(reply)
              return { user, reply }
            })
          const compact = (tail?: string, failed = false) =>
            Effect.gen(function*() {
              const user = TestData.userMessage(session.id)
              yield* store.upsertMessage(user)
              yield* store.upsertPart({
                id: TestData.partID(),
                sessionID: session.id,
                messageID: user.id,
                type: "compaction",
                auto: true,
                ...(tail ? { tail_start_id: tail as never } : {})
              })
              const summary = TestData.assistantMessage(session.id, user.id, {
                summary: true,
                finish: "stop",
                ...(failed ? { error: { name: "APIError", data: { message: "boom" } } } : {})
              })
              yield* store.upsertMessage(summary)
              return { user, summary }
            })
          const first = yield* turn("one")
          expect((yield* store.history(session.id)).length).toBe(2)
          yield* turn("two")
          const third = yield* turn("three")
          const compaction = yield* compact(third.user.id)
          const after = yield* turn("four")
          const view = (yield* store.history(session.id)).map((message) => message.info.id)
          expect(view).toEqual([third.user.id, third.reply.id, compaction.user.id, compaction.summary.id, after.user.id, after.reply.id])
          expect(view).not.toContain(first.user.id)
          // a fork points its copied compaction at its own copy of the tail, so its view is the same
          const fork = yield* store.fork(session.id)
          const forkView = yield* store.history(fork.id)
          expect(forkView.map((message) => message.parts.map((part) => (part.type === "text" ? part.text : part.type)))).toEqual(
            [["three"], [], ["compaction"], [], ["four"], []]
          )
          const copiedCompaction = forkView[2]!.parts[0]!
          expect(copiedCompaction.type === "compaction" && copiedCompaction.tail_start_id).toBe(forkView[0]!.info.id)
          // a failed compaction does not hide anything; the earlier one still counts
          yield* compact(undefined, true)
          expect((yield* store.history(session.id))[0]!.info.id).toBe(third.user.id)
          // a newer compaction without a tail starts at its own message
          const second = yield* compact()
          expect((yield* store.history(session.id)).map((message) => message.info.id)).toEqual([second.user.id, second.summary.id])
          // the full transcript stays in the store
          expect((yield* store.messages(session.id)).length).toBe(14)
        })
      ))

    it.live("text deltas are published at once and written coalesced", () =>
      withStore(backend, (store, sql) =>
        Effect.gen(function*() {
          const bus = yield* Bus
          const deltas = yield* bus.subscribe({ types: ["message.part.delta"] })
          const session = yield* store.create()
          const reply = TestData.assistantMessage(session.id, TestData.messageID())
          yield* store.upsertMessage(reply)
          const part = TestData.textPart(reply, "", false)
          yield* store.upsertPart(part)
          const stored = () =>
            sql<{ data: string }>`SELECT data FROM part WHERE id = ${part.id}`.pipe(
              Effect.map((rows) => (JSON.parse(rows[0]!.data) as { text: string }).text),
              Effect.orDie
            )
          for (let index = 0; index < 500; index++) {
            yield* store.appendDelta({ sessionID: session.id, messageID: reply.id, partID: part.id, field: "text", delta: "x" })
          }
          // Read at once, inside the 50 ms the writes are coalesced over (a server round trip is slower than a file read).
          const writtenSoFar = yield* stored()
          const seen = yield* Stream.runCollect(Stream.take(deltas, 500))
          expect(Chunk.size(seen)).toBe(500)
          // readers already see the whole text, while the row has not been written 500 times
          expect((yield* store.getMessage(session.id, reply.id)).parts[0]).toMatchObject({ text: "x".repeat(500) })
          expect(writtenSoFar).toBe("")
          yield* Effect.sleep("150 millis")
          expect(yield* stored()).toBe("x".repeat(500))
          // ending the part writes it at once
          yield* store.appendDelta({ sessionID: session.id, messageID: reply.id, partID: part.id, field: "text", delta: "!" })
          yield* store.upsertPart({ ...part, text: "x".repeat(500) + "!", time: { start: 1, end: 2 } })
          expect(yield* stored()).toBe("x".repeat(500) + "!")
        })
      ).pipe(Effect.scoped))

    it.scoped("a prompt's text (no time: complete as written) is not held as streaming text", () =>
      withStore(backend, (store, sql) =>
        Effect.gen(function*() {
          const session = yield* store.create()
          const user = TestData.userMessage(session.id)
          yield* store.upsertMessage(user)
          const { time: _time, ...prompt } = TestData.textPart(user, "the prompt")
          yield* store.upsertPart(prompt)
          // Another process changes the row: a text held as open would keep overlaying it (and stay in memory).
          const changed = JSON.stringify({ ...prompt, text: "changed elsewhere" })
          yield* sql`UPDATE part SET data = ${changed}, rev = rev + 1 WHERE id = ${prompt.id}`.pipe(Effect.orDie)
          expect((yield* store.getMessage(session.id, user.id)).parts[0]).toMatchObject({ text: "changed elsewhere" })
        })
      ))

    it.scoped("todos are replaced as a list and published", () =>
      withStore(backend, (store) =>
        Effect.gen(function*() {
          const bus = yield* Bus
          const events = yield* bus.subscribe({ types: ["todo.updated"] })
          const session = yield* store.create()
          yield* store.setTodos(session.id, [
            { content: "write tests", status: "in_progress", priority: "high" },
            { content: "ship", status: "pending", priority: "low" }
          ])
          yield* store.setTodos(session.id, [{ content: "ship", status: "completed", priority: "low" }])
          expect(yield* store.todos(session.id)).toEqual([{ content: "ship", status: "completed", priority: "low" }])
          expect(Chunk.size(yield* Stream.runCollect(Stream.take(events, 2)))).toBe(2)
        })
      ))
  })

  describe("export and import", () => {
    it.scoped("a session tree survives export → import into another database unchanged", () =>
      Effect.gen(function*() {
        const box = yield* TestInstance.sandbox()
        const exported = yield* Effect.gen(function*() {
          const store = yield* SessionStore
          const root = yield* store.create({ title: "exported", agent: "build", permission: [{ permission: "bash", pattern: "*", action: "ask" }] })
          const child = yield* store.create({ parentID: root.id, title: "child" })
          for (const session of [root, child]) {
            const user = TestData.userMessage(session.id)
            const reply = TestData.assistantMessage(session.id, user.id, { finish: "tool-calls", cost: 0.01 })
            yield* store.upsertMessage(user)
            yield* store.upsertPart(TestData.textPart(user, "do the thing"))
            yield* store.upsertMessage(reply)
            yield* store.upsertPart(TestData.toolPart(reply, "completed", "read", { filePath: "/a" }))
            yield* store.upsertPart(TestData.toolPart(reply, "error"))
          }
          yield* store.setTodos(root.id, [{ content: "a", status: "pending", priority: "medium" }])
          yield* store.addUsage(child.id, usage(0.3, 7))
          return SessionStore.encodeExport(yield* store.exportSession(root.id))
        }).pipe(Effect.provide(storeLayer(box, yield* TestDatabase.target(backend, box, "first.db"))))

        const text = JSON.stringify(exported)
        const reimported = yield* Effect.gen(function*() {
          const store = yield* SessionStore
          const session = yield* store.importSession(JSON.parse(text))
          expect(session.title).toBe("exported")
          const again = yield* Effect.flip(store.importSession(JSON.parse(text)))
          expect(again).toBeInstanceOf(SessionImportError)
          expect(again.message).toContain("already exists")
          const malformed = yield* Effect.flip(store.importSession({ info: { id: "nope" }, messages: [] }))
          expect(malformed.message).toMatch(/^Cannot import session: /)
          return SessionStore.encodeExport(yield* store.exportSession(session.id))
        }).pipe(Effect.provide(storeLayer(box, yield* TestDatabase.target(backend, box, "second.db"))))
        expect(reimported).toEqual(exported)
        expect((exported as { children: Array<unknown> }).children).toHaveLength(1)
      }))
  })

  describe("two connections to one database", () => {
    it.scoped("a store that has loaded a session sees what another one wrote since, down to an import under the same ids", () =>
      Effect.gen(function*() {
        const box = yield* TestInstance.sandbox()
        const file = yield* TestDatabase.target(backend, box)
        const reader = Context.get(yield* Layer.build(storeLayer(box, file)), SessionStore)
        const writer = Context.get(yield* Layer.build(storeLayer(box, file)), SessionStore)
        const texts = (loaded: ReadonlyArray<MessageWithParts>) =>
          loaded.flatMap((message) => message.parts.flatMap((part) => (part.type === "text" ? [part.text] : [])))

        const session = yield* reader.create({ title: "shared" })
        const user = TestData.userMessage(session.id)
        const part = TestData.textPart(user, "first")
        yield* reader.upsertMessage(user)
        yield* reader.upsertPart(part)
        expect(texts(yield* reader.messages(session.id))).toEqual(["first"])

        // the same row rewritten elsewhere with text of the same length
        yield* writer.upsertPart({ ...part, text: "other" })
        yield* writer.upsertMessage({ ...user, agent: "plan" })
        const seen = yield* reader.messages(session.id)
        expect(texts(seen)).toEqual(["other"])
        expect(seen[0]!.info.role === "user" && seen[0]!.info.agent).toBe("plan")

        // written by something that does not know about revisions (an older version, the sqlite3 shell)
        const sql = Context.get(yield* Layer.build(storeLayer(box, file)), SqlClient.SqlClient)
        yield* sql`UPDATE part SET data = replace(data, '"text":"other"', '"text":"shell"') WHERE id = ${part.id}`
        expect(texts(yield* reader.messages(session.id))).toEqual(["shell"])
        yield* sql`DELETE FROM part WHERE id = ${part.id}`
        yield* sql`INSERT INTO part (id, message_id, session_id, type, data)
          VALUES (${part.id}, ${user.id}, ${session.id}, 'text', ${JSON.stringify({ ...part, text: "again" })})`
        expect(texts(yield* reader.messages(session.id))).toEqual(["again"])

        // deleted and imported again with the same ids and changed text
        const exported = SessionStore.encodeExport(yield* writer.exportSession(session.id))
        yield* writer.remove(session.id)
        yield* writer.importSession(JSON.parse(JSON.stringify(exported).replace('"text":"again"', '"text":"third"')))
        expect(texts(yield* reader.messages(session.id))).toEqual(["third"])
        expect(texts([yield* reader.getMessage(session.id, user.id)])).toEqual(["third"])
      }))
  })

  describe("import of a file that does not fit together", () => {
    it.scoped("is refused with what is wrong, and writes nothing", () =>
      withStore(backend, (store, sql) =>
        Effect.gen(function*() {
          const root = yield* store.create({ title: "original" })
          const child = yield* store.create({ parentID: root.id, title: "child" })
          for (const session of [root, child]) {
            const user = TestData.userMessage(session.id)
            const reply = TestData.assistantMessage(session.id, user.id, { finish: "stop" })
            yield* store.upsertMessage(user)
            yield* store.upsertPart(TestData.textPart(user, "question"))
            yield* store.upsertMessage(reply)
            yield* store.upsertPart(TestData.textPart(reply, "answer"))
            yield* store.upsertPart(TestData.toolPart(reply, "completed"))
          }
          const exported = JSON.stringify(SessionStore.encodeExport(yield* store.exportSession(root.id)))
          yield* store.remove(root.id)
          type Node = {
            info: { id: string; parentID?: string }
            messages: Array<{ info: { id: string; sessionID: string }; parts: Array<{ id: string; messageID: string }> }>
            children: Array<Node>
          }
          const edited = (edit: (tree: Node) => void) => {
            const tree = JSON.parse(exported) as Node
            edit(tree)
            return tree
          }
          const refused = (data: unknown) => Effect.flip(store.importSession(data)).pipe(Effect.map((error) => error.message))
          const other = "ses_zzzzzzzzzzzzzzzzzzzzzzzzzz"

          expect(yield* refused(edited((tree) => (tree.messages[1]!.parts[0]!.messageID = tree.messages[0]!.info.id)))).toMatch(
            /^Cannot import session: part prt_\w+ is listed under message msg_\w+ of session ses_\w+ but belongs to message msg_\w+/
          )
          expect(yield* refused(edited((tree) => (tree.messages[0]!.info.sessionID = other)))).toBe(
            `Cannot import session: message ${JSON.parse(exported).messages[0].info.id} is listed under session ${root.id} but its sessionID is ${other}`
          )
          expect(yield* refused(edited((tree) => (tree.children[0]!.info.parentID = other)))).toBe(
            `Cannot import session: session ${child.id} is listed as a child of ${root.id} but its parentID is ${other}`
          )
          expect(yield* refused(edited((tree) => tree.messages[1]!.parts.push(tree.messages[1]!.parts[1]!)))).toMatch(
            /^Cannot import session: part prt_\w+ appears twice in the file$/
          )
          expect(yield* count(sql, "session")).toBe(0)

          // the same conversation under another session id: its messages are already here
          yield* store.importSession(JSON.parse(exported))
          const copy = edited((tree) => {
            tree.info.id = other
            for (const message of tree.messages) message.info.sessionID = other
            for (const message of tree.messages) for (const part of message.parts) (part as { sessionID?: string }).sessionID = other
            tree.children = []
          })
          expect(yield* refused(copy)).toBe(`Cannot import session: message ${copy.messages[0]!.info.id} already exists in this database`)
          expect(yield* count(sql, "session")).toBe(2)
          expect(yield* count(sql, "message")).toBe(4)
        })
      ))
  })
})

describe("database file (SQLite)", () => {
  it.scoped("migrations run twice harmlessly and the pragmas hold", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const file = box.path("data/agent.db")
      const id = yield* Effect.gen(function*() {
        return (yield* (yield* SessionStore).create({ title: "kept" })).id
      }).pipe(Effect.provide(storeLayer(box, file)))
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        expect((yield* (yield* SessionStore).get(id)).title).toBe("kept")
        const migrations = yield* sql<{ migration_id: number }>`SELECT migration_id FROM effect_sql_migrations`
        expect(migrations.map((row) => row.migration_id)).toEqual([1, 2, 3, 4])
        const pragma = (name: string) => sql.unsafe<Record<string, unknown>>(`PRAGMA ${name}`).pipe(Effect.map((rows) => Object.values(rows[0]!)[0]))
        expect(yield* pragma("journal_mode")).toBe("wal")
        expect(yield* pragma("auto_vacuum")).toBe(2)
        expect(yield* pragma("foreign_keys")).toBe(1)
        expect(yield* pragma("synchronous")).toBe(1)
        expect(yield* pragma("busy_timeout")).toBe(5000)
      }).pipe(Effect.provide(storeLayer(box, file)))
    }))

  it.scoped("a database of an older schema version is brought up to date with its sessions kept", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const file = box.path("data/agent.db")
      fs.mkdirSync(box.path("data"), { recursive: true })
      // What the first release left: only the first migration, and a session written by it.
      const id = yield* Effect.gen(function*() {
        yield* SqliteMigrator.run({ loader: SqliteMigrator.fromRecord({ "0001_initial": initial }) })
        return yield* Effect.gen(function*() {
          return (yield* (yield* SessionStore).create({ title: "from version 1" })).id
        }).pipe(Effect.provide(SessionStore.layer.pipe(Layer.provideMerge(Bus.layer), Layer.provideMerge(Layer.succeed(Instance, box.instance)))))
      }).pipe(Effect.provide(Layer.mergeAll(SqliteClient.layer({ filename: file }), NodeContext.layer)))

      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        expect((yield* sql<{ migration_id: number }>`SELECT migration_id FROM effect_sql_migrations ORDER BY migration_id`).map((row) => row.migration_id)).toEqual([1, 2, 3, 4])
        expect((yield* (yield* SessionStore).get(id)).title).toBe("from version 1")
        expect(yield* count(sql, "session_diff")).toBe(0)
      }).pipe(Effect.provide(storeLayer(box, file)))
    }))

  it.live("a write waits out another connection's lock, and one that never frees fails naming the file", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const file = box.path("data/agent.db")
      // A second connection, as another process would hold it, to take the write lock.
      const other = yield* Layer.build(Database.layerFile(file)).pipe(Effect.map(Context.get(SqlClient.SqlClient)))
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        // Without SQLite's own 5 s wait, so what is left is the store's retry.
        yield* (yield* SqlClient.SqlClient)`PRAGMA busy_timeout = 0`
        yield* other`BEGIN IMMEDIATE`
        const released = yield* Effect.fork(Effect.sleep("300 millis").pipe(Effect.zipRight(other`COMMIT`)))
        const made = yield* store.create({ title: "waited" })
        yield* Fiber.join(released)
        expect((yield* store.get(made.id)).title).toBe("waited")

        yield* other`BEGIN IMMEDIATE`
        const exit = yield* Effect.exit(store.create({ title: "never" }))
        yield* other`COMMIT`
        const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
        expect(defect).toBeInstanceOf(Database.StorageError)
        expect((defect as Error).message).toBe(
          `storage error in ${file}: database is locked by another process; gave up after retrying`
        )
        expect((yield* store.list()).items.map((session) => session.title)).toEqual(["waited"])
      }).pipe(Effect.provide(storeLayer(box, file)))
    }).pipe(Effect.scoped), 60_000)

  it.scoped("a corrupt database is moved aside and a new one is started", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const file = box.path("data/agent.db")
      fs.mkdirSync(box.path("data"), { recursive: true })
      fs.writeFileSync(file, "this is not a database, but it is the user's file ".repeat(200))
      yield* Effect.gen(function*() {
        yield* (yield* SessionStore).create({ title: "fresh" })
      }).pipe(Effect.provide(storeLayer(box, file)))
      const aside = fs.readdirSync(box.path("data")).filter((name) => name.startsWith("agent.db.corrupt-"))
      expect(aside.length).toBeGreaterThanOrEqual(1)
      expect(fs.readFileSync(box.path(`data/${aside.find((name) => !name.endsWith("-wal") && !name.endsWith("-shm"))}`), "utf8")).toMatch(/^this is not a database/)
    }))
})

describe.each(TestDatabase.backends())("leases on %s", (backend) => {
  it.scoped("tool calls left running by a dead process are marked interrupted on open", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const file = yield* TestDatabase.target(backend, box, "data/agent.db")
      const { running, done, sessionID } = yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const sql = yield* SqlClient.SqlClient
        const session = yield* store.create()
        const reply = TestData.assistantMessage(session.id, TestData.messageID())
        yield* store.upsertMessage(reply)
        const running = TestData.toolPart(reply, "running")
        const done = TestData.toolPart(reply, "completed")
        yield* store.upsertPart(running)
        yield* store.upsertPart(done)
        // pretend the writer was another process that has since died
        yield* sql`UPDATE part SET owner = 'ghost' WHERE id = ${running.id}`
        yield* sql`INSERT INTO lease (owner, pid, host, heartbeat) VALUES ('ghost', 2147483646, ${"elsewhere"}, 0)`
        return { running, done, sessionID: session.id }
      }).pipe(Effect.provide(storeLayer(box, file)))

      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const [message] = yield* store.messages(sessionID)
        const interrupted = message!.parts.find((part) => part.id === running.id)!
        expect(interrupted.type === "tool" && interrupted.state).toMatchObject({
          status: "error",
          error: "Tool execution was interrupted",
          metadata: { interrupted: true }
        })
        expect(message!.parts.find((part) => part.id === done.id)).toEqual(done)
        const leases = yield* (yield* SqlClient.SqlClient)<{ owner: string }>`SELECT owner FROM lease`
        expect(leases.map((lease) => lease.owner)).not.toContain("ghost")
      }).pipe(Effect.provide(storeLayer(box, file)))
    }))

  it.scopedLive("a live process's lease keeps beating: another process still sees its running tool call as running after 30 s", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const file = yield* TestDatabase.target(backend, box)
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const beat = sql<{ heartbeat: number }>`SELECT heartbeat FROM lease`.pipe(Effect.map((rows) => rows[0]!.heartbeat), Effect.orDie)
        const first = yield* beat
        // The beat comes every 5 s; each must write the time it runs, or the lease looks 30 s old
        // to the next process that opens the store, which then takes this one's calls for dead.
        yield* Effect.sleep("5500 millis")
        expect((yield* beat) - first).toBeGreaterThanOrEqual(4_000)
      }).pipe(Effect.scoped, Effect.provide(storeLayer(box, file)))
    }), 20_000)
})
