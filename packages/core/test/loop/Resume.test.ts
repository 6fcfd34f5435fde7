import type { SessionID } from "@agent/domain"
import { FakeLLM, ScriptedModel, TestData, TestInstance, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { makeAppLayer } from "../../src/AppLayer.js"
import { Instance } from "../../src/runtime/Instance.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import { echo } from "./tools.js"

describe("resume after a crash", () => {
  it.scopedLive("a run cut off by a dead process is resumed: the interrupted tool is replayed and the model carries on", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const model = ScriptedModel.make(["I see the build was interrupted; restarting it is safe."])
      const runtime = makeAppLayer({
        instance: Layer.succeed(Instance, box.instance),
        providers: FakeLLM.layerModels({ "test/scripted": model, "test/small": TestRuntime.titleModel() }, { smallModel: "test/small" }),
        tools: [echo]
      })

      // First process: a run was in the middle of a tool call when the process died.
      const sessionID: SessionID = yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const sql = yield* SqlClient.SqlClient
        const session = yield* store.create({ title: "Build" })
        const user = TestData.userMessage(session.id)
        yield* store.upsertMessage(user)
        yield* store.upsertPart(TestData.textPart(user, "run the build"))
        const reply = TestData.assistantMessage(session.id, user.id)
        yield* store.upsertMessage(reply)
        const running = TestData.toolPart(reply, "running", "echo", { text: "building" })
        yield* store.upsertPart(running)
        yield* sql`UPDATE part SET owner = 'dead-process' WHERE id = ${running.id}`
        yield* sql`INSERT INTO lease (owner, pid, host, heartbeat) VALUES ('dead-process', 2147483646, 'gone', 0)`
        return session.id
      }).pipe(Effect.provide(runtime), Effect.scoped)

      // Second process: opening the database marks the call interrupted; resume continues.
      yield* Effect.gen(function*() {
        const outcome = yield* (yield* SessionLoop).resume(sessionID)
        expect(outcome.reason).toBe("completed")
        const replayed = model.calls[0]!.prompt.filter((entry) => entry.role === "tool").flatMap((entry) => entry.content)
        expect(replayed).toEqual([
          expect.objectContaining({ type: "tool-result", output: { type: "text", value: "[Tool execution was interrupted]" } })
        ])
        const messages = yield* (yield* SessionStore).messages(sessionID)
        expect(messages.map((message) => message.info.role)).toEqual(["user", "assistant", "assistant"])
        expect(messages[2]!.parts.find((part) => part.type === "text")).toMatchObject({ text: expect.stringContaining("interrupted") })
      }).pipe(Effect.provide(runtime), Effect.scoped)
    }))

  for (
    const [name, output, expected] of [
      ["empty", "", "[Tool execution was interrupted]"],
      ["partial", "line 1\nline 2\nline 150\n", "line 1\nline 2\nline 150\n\n[Tool execution was interrupted]"]
    ] as const
  ) {
    it.scopedLive(`a call cut off with ${name} live output is shown to the resumed model as interrupted, with that output`, () =>
      Effect.gen(function*() {
        const box = yield* TestInstance.sandbox()
        const model = ScriptedModel.make(["carrying on"])
        const runtime = makeAppLayer({
          instance: Layer.succeed(Instance, box.instance),
          providers: FakeLLM.layerModels({ "test/scripted": model, "test/small": TestRuntime.titleModel() }, { smallModel: "test/small" }),
          tools: [echo]
        })
        const sessionID: SessionID = yield* Effect.gen(function*() {
          const store = yield* SessionStore
          const sql = yield* SqlClient.SqlClient
          const session = yield* store.create({ title: "Build" })
          const user = TestData.userMessage(session.id)
          yield* store.upsertMessage(user)
          yield* store.upsertPart(TestData.textPart(user, "run the build"))
          const reply = TestData.assistantMessage(session.id, user.id)
          yield* store.upsertMessage(reply)
          const running = TestData.toolPart(reply, "running", "echo", { text: "building" })
          // what the bash tool's live updates leave on the running part
          const withOutput = { ...running, state: { ...running.state, metadata: { output } } } as typeof running
          yield* store.upsertPart(withOutput)
          yield* sql`UPDATE part SET owner = 'dead-process' WHERE id = ${running.id}`
          yield* sql`INSERT INTO lease (owner, pid, host, heartbeat) VALUES ('dead-process', 2147483646, 'gone', 0)`
          return session.id
        }).pipe(Effect.provide(runtime), Effect.scoped)
        yield* Effect.gen(function*() {
          expect((yield* (yield* SessionLoop).resume(sessionID)).reason).toBe("completed")
          const replayed = model.calls[0]!.prompt.filter((entry) => entry.role === "tool").flatMap((entry) => entry.content)
          expect(replayed).toEqual([expect.objectContaining({ type: "tool-result", output: { type: "text", value: expected } })])
        }).pipe(Effect.provide(runtime), Effect.scoped)
      }))
  }
})
