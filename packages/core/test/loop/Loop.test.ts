import type { BusEvent, SessionID, ToolPart } from "@agent/domain"
import { ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Stream } from "effect"
import { Bus } from "../../src/runtime/Bus.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import { echo, flood, guarded } from "./tools.js"

const { text, toolCall } = ScriptedModel

const toolParts = (parts: ReadonlyArray<{ type: string }>) => parts.filter((part): part is ToolPart => part.type === "tool")

describe("session loop", () => {
  it.scopedLive("runs a multi-step tool session end to end, persisting parts and publishing events in order", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        [text("Let me check."), toolCall("echo", { text: "hello" })],
        [toolCall("echo", { text: "one" }), toolCall("echo", { text: "two" })],
        "All done: hello, one, two."
      ])
      const runtime = yield* TestRuntime.make({ model, tools: [echo] })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const bus = yield* Bus
        const events = yield* bus.subscribe()
        const session = yield* store.create({ title: "Greeting" })
        const outcome = yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "say hello" }] })
        expect(outcome.reason).toBe("completed")
        expect(outcome.usage.steps).toBe(3)

        const messages = yield* store.messages(session.id)
        expect(messages.map((message) => message.info.role)).toEqual(["user", "assistant", "assistant", "assistant"])
        const [, first, second, last] = messages
        expect(first!.parts.map((part) => part.type)).toEqual(["step-start", "text", "tool", "step-finish"])
        expect(toolParts(first!.parts)[0]!.state).toMatchObject({ status: "completed", output: "hello", title: "echo hello" })
        expect(toolParts(second!.parts).map((part) => part.state.status === "completed" && part.state.output)).toEqual(["one", "two"])
        expect(last!.parts.find((part) => part.type === "text")).toMatchObject({ text: "All done: hello, one, two." })
        expect(last!.info.role === "assistant" && last!.info.finish).toBe("stop")
        expect(first!.info.role === "assistant" && first!.info.finish).toBe("tool-calls")

        // the model saw the tool results of earlier steps
        const third = model.calls[2]!.prompt
        const results = third.filter((entry) => entry.role === "tool").flatMap((entry) => entry.content)
        expect(results.map((result) => result.type === "tool-result" && result.output)).toEqual([
          { type: "text", value: "hello" },
          { type: "text", value: "one" },
          { type: "text", value: "two" }
        ])
        // the tool schema reached the model as JSON Schema
        const offered = model.calls[0]!.tools!.find((candidate) => candidate.name === "echo")!
        expect(offered).toMatchObject({ type: "function", inputSchema: { type: "object", required: ["text"] } })

        const seen = Chunk.toArray(yield* Stream.runCollect(Stream.takeUntil(events, (event) => event.type === "session.idle")))
        const types = seen.map((event) => event.type)
        expect(types.slice(0, 2)).toEqual(["session.created", "message.updated"]) // then the user message
        expect(types.filter((type) => type === "session.status")).toHaveLength(2)
        expect(types.at(-1)).toBe("session.idle")
        // a tool part goes pending → running → completed, in that order
        const toolStates = seen.flatMap((event: BusEvent) =>
          event.type === "message.part.updated" && event.properties.part.type === "tool" && event.properties.part.callID === toolParts(first!.parts)[0]!.callID
            ? [event.properties.part.state.status]
            : []
        )
        expect(toolStates).toEqual(["pending", "running", "completed"])
        // the session's usage adds up the steps
        const saved = yield* store.get(session.id)
        expect(saved.tokens?.input).toBe(30)
      }).pipe(Effect.provide(runtime.layer))
    }))

  it.scopedLive("repairs tool names that differ in case and routes unknown tools to invalid", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        [toolCall("ECHO", { text: "loud" }), toolCall("teleport", { to: "mars" }), toolCall("echo", "{not json")],
        "ok"
      ])
      const runtime = yield* TestRuntime.make({ model, tools: [echo] })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create()
        yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }] })
        const [, step] = yield* store.messages(session.id)
        const [repaired, unknown, malformed] = toolParts(step!.parts)
        expect(repaired!.tool).toBe("echo")
        expect(repaired!.state).toMatchObject({ status: "completed", output: "loud" })
        expect(unknown!.tool).toBe("invalid")
        expect(unknown!.state.status === "completed" && unknown!.state.output).toMatch(/^The arguments provided to the tool are invalid: .*teleport/)
        expect(malformed!.tool).toBe("invalid")
      }).pipe(Effect.provide(runtime.layer))
    }))

  it.scopedLive("bad arguments become an error the model can act on", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[toolCall("echo", { txt: "typo" })], "sorry"])
      const runtime = yield* TestRuntime.make({ model, tools: [echo] })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create()
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }] })
        expect(outcome.reason).toBe("completed")
        const [, step] = yield* store.messages(session.id)
        const [call] = toolParts(step!.parts)
        expect(call!.state.status).toBe("error")
        expect(call!.state.status === "error" && call!.state.error).toMatch(
          /^The echo tool was called with invalid arguments: text: is missing\.\nPlease rewrite the input so it satisfies the expected schema\.$/
        )
      }).pipe(Effect.provide(runtime.layer))
    }))

  it.scopedLive("large tool output is cut, and the whole text saved to a file the model is told about", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[toolCall("flood", { lines: 5000 })], "ok"])
      const runtime = yield* TestRuntime.make({ model, tools: [flood] })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create()
        yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }] })
        const [, step] = yield* store.messages(session.id)
        const [call] = toolParts(step!.parts)
        const state = call!.state
        if (state.status !== "completed") throw new Error("expected completed")
        expect(state.output.split("\n").slice(0, 2000).at(-1)).toBe("line 2000")
        expect(state.output).not.toContain("line 2001\n")
        expect(state.output).toMatch(/3000 lines truncated/)
        const file = state.metadata.outputPath as string
        expect(state.output).toContain(file)
        const { readFileSync } = yield* Effect.promise(() => import("node:fs"))
        expect(readFileSync(file, "utf8").split("\n")).toHaveLength(5000)
      }).pipe(Effect.provide(runtime.layer))
    }))
})

export type { SessionID }
void Fiber
void guarded
