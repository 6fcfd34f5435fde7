import { ScriptedModel, TestRuntime, TestTracer } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"

const { toolCall } = ScriptedModel

describe("the loop's GenAI spans", () => {
  it.scopedLive("a run, its model calls and its tool calls: names, nesting, usage, and error.type when a tool fails", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        [toolCall("read", { filePath: "missing.txt" }), toolCall("read", { filePath: "notes.txt" })],
        "One was missing."
      ])
      const runtime = yield* TestRuntime.make({
        model,
        modelInfo: { cost: { input: 1, output: 10 } },
        files: { "project/notes.txt": "hello" }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "Spans" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "read both" }] })
        expect(outcome.reason).toBe("completed")

        const spans = yield* TestTracer.CollectedSpans
        const [run, ...otherRuns] = yield* spans.named("invoke_agent build")
        expect(otherRuns).toEqual([])
        expect(run!.attributes).toMatchObject({
          "gen_ai.operation.name": "invoke_agent",
          "gen_ai.conversation.id": session.id,
          "gen_ai.agent.name": "build",
          "gen_ai.provider.name": "test",
          "gen_ai.request.model": "scripted",
          "agent.run.stop_reason": "completed",
          "agent.run.steps": 2
        })
        expect(run!.parent?.name).toBe("SessionLoop.prompt")

        const chats = yield* spans.named("chat scripted")
        expect(chats).toHaveLength(2)
        for (const chat of chats) {
          expect(chat.parent?.spanId).toBe(run!.spanId)
          expect(chat.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0)
          expect(chat.attributes["agent.usage.cost"]).toBeGreaterThan(0)
        }
        expect(chats.map((chat) => chat.attributes["gen_ai.response.finish_reasons"])).toEqual([["tool-calls"], ["stop"]])

        const reads = yield* spans.named("execute_tool read")
        expect(reads.map((span) => span.status).sort()).toEqual(["error", "ok"])
        for (const read of reads) expect(read.parent?.spanId).toBe(run!.spanId)
        const failed = reads.find((span) => span.status === "error")!
        expect(failed.attributes["error.type"]).toBe("ToolExecutionError")
        expect(reads.find((span) => span.status === "ok")!.attributes["error.type"]).toBeUndefined()
        // No content without telemetry.log_content.
        expect(JSON.stringify(yield* spans.all)).not.toContain("read both")
      }).pipe(Effect.provide(runtime.layer), Effect.provide(TestTracer.layer))
    }))

  it.scopedLive("a run that ends in a provider error says so on the run and on the model call", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([ScriptedModel.serverError({ message: "down" })])
      const runtime = yield* TestRuntime.make({ model, files: { "project/agent.json": { retry: { attempts: 0 } } } })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "Fails" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "hi" }] })
        expect(outcome.reason).toBe("error")
        const spans = yield* TestTracer.CollectedSpans
        const [run] = yield* spans.named("invoke_agent build")
        expect(run!.attributes).toMatchObject({ "agent.run.stop_reason": "error", "error.type": "APIError" })
        const [chat] = yield* spans.named("chat scripted")
        expect(chat!.status).toBe("error")
        expect(chat!.attributes["error.type"]).toBe("ProviderError")
      }).pipe(Effect.provide(runtime.layer), Effect.provide(TestTracer.layer))
    }))
})
