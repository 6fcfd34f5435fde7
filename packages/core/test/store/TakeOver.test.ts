import { FakeLLM, TestData, TestInstance, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { makeAppLayer } from "../../src/AppLayer.js"
import { Instance } from "../../src/runtime/Instance.js"
import { SessionStore } from "../../src/store/SessionStore.js"

// A replica taking a session over (docs/cluster.md) marks the tool calls its previous owner left
// pending or running as interrupted, even while that owner's lease still looks alive (the cluster's
// shard lock, not the lease, says who owns the session); its own calls and other sessions' are left alone.

describe("SessionStore.takeOver", () => {
  it.scopedLive("marks the session's calls of another process interrupted, and only those", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const runtime = makeAppLayer({
        instance: Layer.succeed(Instance, box.instance),
        providers: FakeLLM.layerModels({ "test/small": TestRuntime.titleModel() }, { smallModel: "test/small" })
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const sql = yield* SqlClient.SqlClient
        const [taken, other] = [yield* store.create({ title: "taken" }), yield* store.create({ title: "other" })]
        const parts = yield* Effect.forEach([taken, other], (session) =>
          Effect.gen(function*() {
            const user = TestData.userMessage(session.id)
            yield* store.upsertMessage(user)
            const reply = TestData.assistantMessage(session.id, user.id)
            yield* store.upsertMessage(reply)
            const theirs = TestData.toolPart(reply, "running", "echo", { text: "theirs" })
            const ours = TestData.toolPart(reply, "running", "echo", { text: "ours" })
            const done = TestData.toolPart(reply, "completed", "echo", { text: "done" })
            for (const part of [theirs, ours, done]) yield* store.upsertPart(part)
            // The previous owner: alive as far as its lease says.
            yield* sql`UPDATE part SET owner = 'replica-a' WHERE id = ${theirs.id}`
            return { theirs, ours, done }
          }))
        yield* sql`INSERT INTO lease (owner, pid, host, heartbeat) VALUES ('replica-a', ${process.pid}, 'elsewhere', ${Date.now()})`

        expect(yield* store.takeOver(taken.id)).toBe(1)
        const status = (sessionID: typeof taken.id, id: string) =>
          store.messages(sessionID).pipe(
            Effect.map((messages) => messages.flatMap((message) => message.parts).find((part) => part.id === id)!)
          )
        const marked = yield* status(taken.id, parts[0]!.theirs.id)
        expect(marked.type === "tool" && marked.state).toMatchObject({ status: "error", error: "Tool execution was interrupted", metadata: { interrupted: true } })
        expect(yield* status(taken.id, parts[0]!.ours.id)).toMatchObject({ state: { status: "running" } })
        expect(yield* status(taken.id, parts[0]!.done.id)).toMatchObject({ state: { status: "completed" } })
        expect(yield* status(other.id, parts[1]!.theirs.id)).toMatchObject({ state: { status: "running" } })
        // Nothing left to take over.
        expect(yield* store.takeOver(taken.id)).toBe(0)
      }).pipe(Effect.provide(runtime), Effect.scoped)
    }))
})
