import { OtlpReceiver, ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { PermissionService } from "../../src/permission/PermissionService.js"
import { Bus } from "../../src/runtime/Bus.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"

const { toolCall } = ScriptedModel

describe("OpenTelemetry export through makeAppLayer", () => {
  it.scopedLive("an OTLP endpoint in the instance's environment exports spans and the recorder's metrics when the runtime closes", () =>
    Effect.gen(function*() {
      const receiver = yield* OtlpReceiver.start
      const model = ScriptedModel.make([
        [toolCall("read", { filePath: "notes.txt" })],
        "Read it.",
        "SUMMARY: the notes were read."
      ])
      const runtime = yield* TestRuntime.make({
        model,
        files: { "project/notes.txt": "hello", "project/agent.json": { permission: { read: "ask" } } },
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }
      })
      const sessionID = yield* Effect.scoped(Effect.gen(function*() {
        const context = yield* Layer.build(runtime.layer)
        return yield* Effect.gen(function*() {
          const store = yield* SessionStore
          const permissions = yield* PermissionService
          const asks = yield* (yield* Bus).subscribe({ types: ["permission.asked"] })
          yield* asks.pipe(
            Stream.runForEach((event) => permissions.reply({ requestID: event.properties.id, reply: "always" })),
            Effect.forkScoped
          )
          const session = yield* store.create({ title: "Exported" })
          const loop = yield* SessionLoop
          expect((yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "read notes" }] })).reason).toBe("completed")
          expect((yield* loop.compact(session.id)).reason).toBe("completed")
          // Nothing is sent before the runtime closes (the batch delay and the metric interval are long).
          expect(receiver.requests.filter((request) => request.path === "/v1/metrics")).toEqual([])
          return session.id
        }).pipe(Effect.provide(context))
      }))

      const spans = receiver.spans()
      // The prompt's run and the compaction's run.
      expect(spans.filter((span) => span.name === "invoke_agent build").map((span) => span.attributes["gen_ai.conversation.id"]))
        .toEqual([sessionID, sessionID])
      const points = receiver.points()
      const decisions = points.filter((point) => point.metric === "agent.permission.decisions")
      expect(decisions).toEqual([
        expect.objectContaining({ value: 1, attributes: { "agent.permission": "read", "agent.permission.decision": "always" } })
      ])
      expect(points.filter((point) => point.metric === "agent.compactions")).toEqual([
        expect.objectContaining({ value: 1, attributes: { "agent.compaction.auto": false } })
      ])
    }))
})
