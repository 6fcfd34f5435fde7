import { ScriptedModel, TestRuntime, TestTracer } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { PermissionService } from "../../src/permission/PermissionService.js"
import { Bus } from "../../src/runtime/Bus.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"

const { toolCall } = ScriptedModel

describe("tracing", () => {
  it.scopedLive("a session's model calls and permission waits are spans with the session, agent, model and permission", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[toolCall("read", { filePath: "notes.txt" })], "Read it."])
      const runtime = yield* TestRuntime.make({
        model,
        files: { "project/notes.txt": "hello", "project/agent.json": { permission: { read: "ask" } } }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const permissions = yield* PermissionService
        const asks = yield* (yield* Bus).subscribe({ types: ["permission.asked"] })
        yield* asks.pipe(
          Stream.runForEach((event) => permissions.reply({ requestID: event.properties.id, reply: "once" })),
          Effect.forkScoped
        )
        const session = yield* store.create({ title: "Traced" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "read notes" }] })
        expect(outcome.reason).toBe("completed")

        const spans = yield* TestTracer.CollectedSpans
        const calls = yield* spans.named("LLMService.call")
        expect(calls).toHaveLength(2)
        for (const call of calls) {
          expect(call.status).toBe("ok")
          expect(call.attributes).toMatchObject({ "session.id": session.id, agent: "build", "model.provider": "test", "model.id": "scripted" })
        }
        const waits = yield* spans.named("PermissionService.wait")
        expect(waits).toHaveLength(1)
        expect(waits[0]!.attributes).toMatchObject({ permission: "read", "session.id": session.id })
        expect(String(waits[0]!.attributes.pattern)).toMatch(/notes\.txt/)
        // The wait is inside the ask, a service method traced by `Effect.fn`.
        expect(waits[0]!.parent?.name).toBe("PermissionService.ask")
      }).pipe(Effect.provide(runtime.layer), Effect.provide(TestTracer.layer))
    }))
})
