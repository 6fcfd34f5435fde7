import type { Todo } from "@agent/domain"
import { Effect, Schema } from "effect"
import * as Prompts from "../runtime/Prompts.js"
import { SessionStore } from "../store/SessionStore.js"
import * as Tool from "../tool/Tool.js"

const TodoItem = Schema.Struct({
  content: Schema.String.annotations({ description: "What needs doing, in a short imperative sentence" }),
  status: Schema.Literal("pending", "in_progress", "completed", "cancelled").annotations({
    description: "pending, in_progress (only one task at a time), completed or cancelled"
  }),
  priority: Schema.Literal("high", "medium", "low").annotations({ description: "high, medium or low" })
})

const WriteParameters = Schema.Struct({
  todos: Schema.Array(TodoItem).annotations({ description: "The whole, updated todo list; it replaces the previous one" })
})

const ReadParameters = Schema.Struct({})

/** What both tools return: the list as JSON, titled by how much is left. */
const result = (todos: ReadonlyArray<Todo>): Tool.ToolResult => ({
  title: `${todos.filter((todo) => todo.status !== "completed").length} todos`,
  output: JSON.stringify(todos, null, 2),
  metadata: { todos }
})

/** `todowrite`: replaces the session's todo list. Needs the `SessionStore`. */
export const makeWrite: Effect.Effect<Tool.AnyTool, never, SessionStore> = Effect.gen(function*() {
  const store = yield* SessionStore
  return Tool.make({
    id: "todowrite",
    fileEffects: "none",
    description: Prompts.read("tool/todowrite.txt"),
    parameters: WriteParameters,
    execute: (params, context) =>
      Effect.gen(function*() {
        yield* context.ask({ permission: "todowrite", patterns: ["*"], always: ["*"] })
        const todos: ReadonlyArray<Todo> = params.todos.map(({ content, status, priority }) => ({ content, status, priority }))
        yield* store.setTodos(context.sessionID, todos)
        return result(todos)
      })
  })
})

/** `todoread`: the session's todo list. Needs the `SessionStore`. */
export const makeRead: Effect.Effect<Tool.AnyTool, never, SessionStore> = Effect.gen(function*() {
  const store = yield* SessionStore
  return Tool.make({
    id: "todoread",
    fileEffects: "none",
    description: Prompts.read("tool/todoread.txt"),
    parameters: ReadParameters,
    execute: (_params, context) =>
      Effect.gen(function*() {
        yield* context.ask({ permission: "todoread", patterns: ["*"], always: ["*"] })
        return result(yield* store.todos(context.sessionID))
      })
  })
})
