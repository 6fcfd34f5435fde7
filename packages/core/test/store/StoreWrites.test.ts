import type { Part, SessionID } from "@agent/domain"
import { TestData, TestDatabase } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Statement } from "@effect/sql"
import { Cause, Chunk, Effect, Exit, Fiber, Stream } from "effect"
import { Bus } from "../../src/runtime/Bus.js"
import type { SessionStore } from "../../src/store/SessionStore.js"
import { StorageError } from "../../src/store/StorageError.js"
import { withStore } from "./fixtures/StoreOn.js"

// Many sessions writing at once, as the session loops of one process do. On PostgreSQL their part and
// message upserts are grouped (store/StoreWrites.ts); on both backends each caller gets its own
// result and a later write is never overtaken by an earlier one.

/** Counts the statements the effect's fibers (and the fibers they start) send. */
const countingStatements = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    let statements = 0
    const result = yield* effect.pipe(Statement.withTransformer((statement) => Effect.sync(() => (statements++, statement))))
    return { result, statements }
  })

const storedText = (store: SessionStore["Type"], sessionID: SessionID) =>
  store.messages(sessionID).pipe(
    Effect.map((messages) => messages.flatMap((message) => message.parts.map((part) => (part.type === "text" ? part.text : part.type))))
  )

describe.each(TestDatabase.backends())("store writes on %s", (backend) => {
  it.scoped("twenty sessions writing at once: every message and part is stored with its last text", () =>
    withStore(backend, (store) =>
      Effect.gen(function*() {
        const sessions = yield* Effect.forEach(Array.from({ length: 20 }, (_, index) => index), (index) => store.create({ title: `s${index}` }))
        const { statements } = yield* countingStatements(Effect.forEach(
          sessions,
          (session, index) =>
            Effect.gen(function*() {
              const user = TestData.userMessage(session.id)
              // Finished, so the store reads it back from the database, not from its streaming buffer.
              const part = TestData.textPart(user, "")
              // A message and its first part issued at one moment (one statement on PostgreSQL).
              yield* Effect.all([store.upsertMessage(user), store.upsertPart({ ...part, text: `${index}:a` })], { concurrency: "unbounded" })
              for (const text of ["ab", "abc"]) yield* store.upsertPart({ ...part, text: `${index}:${text}` })
              yield* store.upsertPart(TestData.toolPart(user, "completed"))
            }),
          { concurrency: "unbounded", discard: true }
        ))
        for (const [index, session] of sessions.entries()) {
          expect(yield* storedText(store, session.id)).toEqual([`${index}:abc`, "tool"])
        }
        // 100 upserts: on PostgreSQL those issued at one moment go as one statement.
        if (backend === "postgres") expect(statements).toBeLessThanOrEqual(25)
      })
    ))

  it.scoped("a row that cannot be written fails its own write only", () =>
    withStore(backend, (store) =>
      Effect.gen(function*() {
        const session = yield* store.create({ title: "orphans" })
        const user = TestData.userMessage(session.id)
        yield* store.upsertMessage(user)
        const good = Array.from({ length: 10 }, (_, index) => TestData.textPart(user, `good ${index}`))
        // Its message was never written: the part's foreign key refuses it.
        const orphan: Part = TestData.textPart({ id: TestData.messageID(), sessionID: session.id }, "orphan")
        const exits = yield* Effect.forEach([...good.slice(0, 5), orphan, ...good.slice(5)], (part) => Effect.exit(store.upsertPart(part)), {
          concurrency: "unbounded"
        })
        const failed = exits.filter(Exit.isFailure)
        expect(failed).toHaveLength(1)
        expect(exits[5]).toBe(failed[0])
        const defect = Cause.squash((failed[0] as Exit.Failure<void, never>).cause)
        expect(defect).toBeInstanceOf(StorageError)
        expect(String((defect as StorageError).message)).toMatch(/foreign key/i)
        expect(yield* storedText(store, session.id)).toEqual(good.map((part) => part.text))
      })
    ))

  it.scoped("a part removed right after its write stays removed", () =>
    withStore(backend, (store) =>
      Effect.gen(function*() {
        const session = yield* store.create({ title: "removed" })
        const user = TestData.userMessage(session.id)
        yield* store.upsertMessage(user)
        const kept = Array.from({ length: 5 }, (_, index) => TestData.textPart(user, `kept ${index}`))
        const removed = TestData.textPart(user, "removed")
        // Issued in this order at one moment: the removal must land after the write before it.
        yield* Effect.all([
          ...kept.map((part) => store.upsertPart(part)),
          store.upsertPart(removed),
          store.removePart(session.id, user.id, removed.id)
        ], { concurrency: "unbounded", discard: true })
        expect(yield* storedText(store, session.id)).toEqual(kept.map((part) => part.text))
      })
    ))
  it.scoped("usage added by many sessions at once adds up on each session and its ancestors", () =>
    withStore(backend, (store) =>
      Effect.gen(function*() {
        const parent = yield* store.create({ title: "parent" })
        const child = yield* store.create({ title: "child", parentID: parent.id })
        const sibling = yield* store.create({ title: "sibling", parentID: parent.id })
        const grandchild = yield* store.create({ title: "grandchild", parentID: child.id })
        const others = yield* Effect.forEach(Array.from({ length: 10 }, (_, index) => index), (index) => store.create({ title: `other ${index}` }))
        const family = [parent, child, sibling, grandchild]
        // Each session's step costs its place in line (1, 2, 3, ...): sums tell which usages reached which row.
        const sessions = [...family, ...others]
        const cost = (session: { id: string }) => sessions.findIndex((candidate) => candidate.id === session.id) + 1
        const usage = (session: { id: string }) => ({
          cost: cost(session),
          tokens: { input: 10 * cost(session), output: 1, reasoning: 0, cache: { read: 2, write: 0 } }
        })
        // A usage publishes one session.updated for its session and each ancestor; each session's usage comes twice.
        const chainLength = (index: number) => [1, 2, 2, 3][index] ?? 1
        const expected = sessions.reduce((sum, _, index) => sum + 2 * chainLength(index), 0)
        const updates = yield* (yield* (yield* Bus).subscribe({ types: ["session.updated"] })).pipe(
          Stream.take(expected),
          Stream.runCollect,
          Effect.timeout("10 seconds"),
          Effect.fork
        )
        const { statements } = yield* countingStatements(Effect.forEach(
          sessions,
          (session) =>
            // A step's message (as other sessions' step writes come in the same moment) and two usages of the session.
            Effect.all([
              store.upsertMessage(TestData.userMessage(session.id)),
              store.addUsage(session.id, usage(session)),
              store.addUsage(session.id, usage(session))
            ], { concurrency: "unbounded", discard: true }),
          { concurrency: "unbounded", discard: true }
        ))
        const own = (session: { id: string }) => 2 * cost(session)
        const totals = new Map([
          [parent.id, own(parent) + own(child) + own(sibling) + own(grandchild)],
          [child.id, own(child) + own(grandchild)],
          [sibling.id, own(sibling)],
          [grandchild.id, own(grandchild)],
          ...others.map((session) => [session.id, own(session)] as const)
        ])
        for (const [id, total] of totals) {
          const stored = yield* store.get(id as SessionID)
          expect(stored.cost).toBe(total)
          expect(stored.tokens?.input).toBe(10 * total)
          // 2 cache reads a usage: the parent's eight usages (its own and its descendants'), the child's four.
          expect(stored.tokens?.cache.read).toBe(2 * (id === parent.id ? 8 : id === child.id ? 4 : 2))
        }
        // Every session.updated carries the row as stored then; the last one of each session, its total.
        const last = new Map(Chunk.toReadonlyArray(yield* Fiber.join(updates)).map((event) => [event.properties.info.id, event.properties.info.cost]))
        expect(last).toEqual(totals)
        // 14 messages and 28 usages: on PostgreSQL those issued at one moment go as one statement.
        if (backend === "postgres") expect(statements).toBeLessThanOrEqual(12)
      })
    ))
})
