import { DeniedError, type SessionID, type ToolPart } from "@agent/domain"
import { ScriptedModel, TestRuntime, TestToolContext } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { Bus } from "../../src/runtime/Bus.js"

import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import { ToolRegistry } from "../../src/tool/ToolRegistry.js"
import * as Todo from "../../src/tools/Todo.js"

const makeContext = (sessionID: SessionID, deny: ReadonlyArray<string> = []) => TestToolContext.make({ sessionID, deny })

const plan = [
  { content: "Read the failing test", status: "completed", priority: "high" },
  { content: "Fix the parser", status: "in_progress", priority: "high" },
  { content: "Update the changelog", status: "pending", priority: "low" },
  { content: "Port to Deno", status: "cancelled", priority: "medium" }
] as const

/** Runs `body` inside a fresh runtime (real SQLite store) with a session to write to. */
const withStore = <A, E>(
  body: (ctx: { store: SessionStore["Type"]; sessionID: SessionID; bus: Bus["Type"] }) => Effect.Effect<A, E, any>
) =>
  Effect.gen(function*() {
    const runtime = yield* TestRuntime.make({ model: ScriptedModel.make([]) })
    return yield* Effect.gen(function*() {
      const store = yield* SessionStore
      const session = yield* store.create({ title: "todos" })
      return yield* body({ store, sessionID: session.id, bus: yield* Bus })
    }).pipe(Effect.provide(runtime.layer))
  })

describe("todowrite / todoread", () => {
  it.scopedLive("todowrite saves the list, returns it as JSON and counts what is not completed", () =>
    withStore(({ store, sessionID, bus }) =>
      Effect.gen(function*() {
        const write = yield* Todo.makeWrite
        const { context, asked } = makeContext(sessionID)
        const events = yield* bus.subscribe({ types: ["todo.updated"] })
        const updates = yield* events.pipe(Stream.take(1), Stream.runCollect, Effect.fork)
        const result = yield* write.execute({ todos: plan }, context)
        expect(result.title).toBe("3 todos")
        expect(JSON.parse(result.output)).toEqual(plan)
        expect(yield* store.todos(sessionID)).toEqual(plan)
        expect(asked).toEqual([{ permission: "todowrite", patterns: ["*"], always: ["*"] }])
        const [event] = yield* Fiber.join(updates)
        expect(event).toMatchObject({ type: "todo.updated", properties: { sessionID, todos: plan } })
      })
    ))

  it.scopedLive("each write replaces the whole list; todoread returns what is stored", () =>
    withStore(({ sessionID }) =>
      Effect.gen(function*() {
        const write = yield* Todo.makeWrite
        const read = yield* Todo.makeRead
        const { context, asked } = makeContext(sessionID)
        expect((yield* read.execute({}, context)).output).toBe("[]")
        yield* write.execute({ todos: plan }, context)
        const next = [{ content: "Ship it", status: "in_progress", priority: "high" }] as const
        yield* write.execute({ todos: next }, context)
        const result = yield* read.execute({}, context)
        expect(JSON.parse(result.output)).toEqual(next)
        expect(result.title).toBe("1 todos")
        expect(asked.filter((ask) => ask.permission === "todoread")).toEqual([
          { permission: "todoread", patterns: ["*"], always: ["*"] },
          { permission: "todoread", patterns: ["*"], always: ["*"] }
        ])
      })
    ))

  it.scopedLive("each session has its own list, kept in the database file across a restart of the runtime", () =>
    Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model: ScriptedModel.make([]), fileDatabase: true })
      const next = [{ content: "Ship it", status: "in_progress", priority: "high" }] as const
      // First run: two sessions, two lists.
      const [first, second] = yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const write = yield* Todo.makeWrite
        const a = yield* store.create({ title: "a" })
        const b = yield* store.create({ title: "b" })
        yield* write.execute({ todos: plan }, makeContext(a.id).context)
        yield* write.execute({ todos: next }, makeContext(b.id).context)
        return [a.id, b.id] as const
      }).pipe(Effect.provide(runtime.layer))
      // A new runtime on the same database file (the layer is built again).
      yield* Effect.gen(function*() {
        const read = yield* Todo.makeRead
        expect(JSON.parse((yield* read.execute({}, makeContext(first).context)).output)).toEqual(plan)
        expect(JSON.parse((yield* read.execute({}, makeContext(second).context)).output)).toEqual(next)
      }).pipe(Effect.provide(runtime.layer))
    }))

  it.scopedLive("a denied todowrite changes nothing", () =>
    withStore(({ store, sessionID }) =>
      Effect.gen(function*() {
        const write = yield* Todo.makeWrite
        const { context } = makeContext(sessionID, ["todowrite"])
        expect(yield* Effect.flip(write.execute({ todos: plan }, context))).toBeInstanceOf(DeniedError)
        expect(yield* store.todos(sessionID)).toEqual([])
      })
    ))

  it.scopedLive("run through the real loop, the model reads back what it wrote", () =>
    Effect.gen(function*() {
      const todos = [{ content: "Write tests", status: "in_progress", priority: "high" }]
      const model = ScriptedModel.make([
        [ScriptedModel.toolCall("todowrite", { todos })],
        [ScriptedModel.toolCall("todoread", {})],
        "Working on it."
      ])
      const runtime = yield* TestRuntime.make({ model })
      yield* Effect.gen(function*() {
        yield* (yield* ToolRegistry).register([yield* Todo.makeWrite, yield* Todo.makeRead])
        const store = yield* SessionStore
        const session = yield* store.create({ title: "todo loop" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "plan" }] })
        expect(outcome.reason).toBe("completed")
        expect(yield* store.todos(session.id)).toEqual(todos)
        const parts = (yield* store.messages(session.id)).flatMap((m) => m.parts).filter((p): p is ToolPart => p.type === "tool")
        expect(parts.map((part) => [part.tool, part.state.status])).toEqual([
          ["todowrite", "completed"],
          ["todoread", "completed"]
        ])
        const read = parts[1]!.state
        expect(read.status === "completed" && JSON.parse(read.output)).toEqual(todos)
        expect(read.status === "completed" && read.title).toBe("1 todos")
      }).pipe(Effect.provide(runtime.layer))
    }))
})
