import type { LanguageModelV3CallOptions } from "@ai-sdk/provider"
import { type Script, ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { SessionLoop } from "../../src/SessionLoop.js"
import { SessionStore } from "../../src/SessionStore.js"
import { echo, isAlive, peek, pids, sleeper } from "./tools.js"

const { finish, text, toolCall } = ScriptedModel

/** What one model call is about: its system prompt and the texts and tool results it carries. */
const describeCall = (options: LanguageModelV3CallOptions) => {
  const system = options.prompt.filter((entry) => entry.role === "system").map((entry) => entry.content).join("\n")
  const results = options.prompt
    .filter((entry) => entry.role === "tool")
    .flatMap((entry) => entry.content)
    .map((part) => (part.type === "tool-result" ? JSON.stringify(part.output) : ""))
  return { system, user: ScriptedModel.lastUserText(options), results, isExplore: system.includes("read-only research agent") }
}

const costly = (turn: ReadonlyArray<Script.ScriptStep>) => [...turn, finish(turn.some((step) => "toolCall" in step) ? "tool-calls" : "stop", { input: 1_000, output: 100 })]

describe("subagents", () => {
  it.scopedLive("three explore subagents run in parallel, one fails, one is resumed by task_id, and their costs roll up", () => {
    let running = 0
    let overlap = 0
    const router = (options: LanguageModelV3CallOptions): Script.ScriptTurnSpec => {
      const call = describeCall(options)
      if (call.isExplore) {
        running++
        overlap = Math.max(overlap, running)
        setTimeout(() => running--, 100)
        if (call.user.includes("look at A")) return costly([ScriptedModel.delay(100), text("A: found the parser in src/parse.ts")])
        if (call.user.includes("look at B")) return [ScriptedModel.delay(100), ScriptedModel.fail({ statusCode: 400, message: "bad request for B" })]
        if (call.user.includes("look at C")) return costly([ScriptedModel.delay(100), text("C: tests live in test/")])
        if (call.user.includes("follow up on A")) return costly([text("A again: parse.ts exports parseLine")])
      }
      if (call.user.includes("explore three things") && call.results.length === 0) {
        return costly([
          toolCall("task", { description: "Look at A", prompt: "look at A", subagent_type: "explore" }),
          toolCall("task", { description: "Look at B", prompt: "look at B", subagent_type: "explore" }),
          toolCall("task", { description: "Look at C", prompt: "look at C", subagent_type: "explore" })
        ])
      }
      if (call.user.includes("explore three things")) return costly([text("Two of three worked.")])
      if (call.user.includes("ask A more") && call.results.length === 3) {
        const firstResult = call.results.find((result) => result.includes("A: found"))!
        const taskID = /task id=\\"(ses_[0-9A-Za-z]+)\\"/.exec(firstResult)![1]!
        return costly([toolCall("task", { description: "Follow up A", prompt: "follow up on A", subagent_type: "explore", task_id: taskID })])
      }
      if (call.user.includes("ask A more")) return costly([text("Done.")])
      return `unexpected call: ${call.user}`
    }
    const model = ScriptedModel.make(Array.from({ length: 20 }, () => router))
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({
        model,
        tools: [echo],
        modelInfo: { cost: { input: 1, output: 10 } }, // $0.002 per call
        files: { "project/agent.json": { retry: { attempts: 0 } } }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const session = yield* store.create({ title: "Parent" })
        const first = yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "explore three things" }] })
        expect(first.reason).toBe("completed")
        expect(overlap).toBe(3) // all three children were running at the same time

        const children = yield* store.children(session.id)
        expect(children).toHaveLength(3)
        expect(children.map((child) => child.title).sort()).toEqual([
          "Look at A (@explore subagent)",
          "Look at B (@explore subagent)",
          "Look at C (@explore subagent)"
        ])
        const [, step] = yield* store.messages(session.id)
        const calls = step!.parts.flatMap((part) => (part.type === "tool" ? [part] : []))
        expect(calls.map((part) => part.state.status).sort()).toEqual(["completed", "completed", "error"])
        const failed = calls.find((part) => part.state.status === "error")!
        expect(failed.state.status === "error" && failed.state.error).toMatch(/explore subagent stopped before finishing.*bad request for B/s)
        const done = calls.find((part) => part.state.status === "completed" && part.state.output.includes("A: found"))!
        expect(done.state.status === "completed" && done.state.output).toMatch(/^<task id="ses_\w+" state="completed">\n<task_result>\nA: found the parser in src\/parse.ts\n<\/task_result>\n<\/task>$/)
        expect(done.state.status === "completed" && done.state.metadata.sessionId).toBe(children.find((child) => child.title.startsWith("Look at A"))!.id)

        // resume A by its task_id: the same child session continues
        const second = yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "ask A more" }] })
        expect(second.reason).toBe("completed")
        expect(yield* store.children(session.id)).toHaveLength(3)
        const childA = children.find((child) => child.title.startsWith("Look at A"))!
        const childMessages = yield* store.messages(childA.id)
        expect(childMessages.map((message) => message.info.role)).toEqual(["user", "assistant", "user", "assistant"])

        // the parent's totals include what the children spent
        const parent = yield* store.get(session.id)
        const own = (yield* store.messages(session.id)).reduce((sum, message) => sum + (message.info.role === "assistant" ? message.info.cost : 0), 0)
        const childCost = (yield* Effect.forEach(children, (child) => store.get(child.id))).reduce((sum, child) => sum + (child.cost ?? 0), 0)
        expect(childCost).toBeCloseTo(0.006, 6) // A twice and C once
        expect(parent.cost).toBeCloseTo(own + childCost, 6)
      }).pipe(Effect.provide(runtime.layer))
    })
  }, 30_000)

  it.scopedLive("a subagent cannot escape a parent deny, and cannot start subagents of its own", () => {
    const router = (options: LanguageModelV3CallOptions): Script.ScriptTurnSpec => {
      const call = describeCall(options)
      if (call.isExplore && call.results.length === 0) return [toolCall("read", { filePath: "/project/.env" })]
      if (call.isExplore) return `child saw: ${call.results.join(" ")}`
      if (call.results.length === 0) {
        return [toolCall("task", { description: "Read secrets", prompt: "read the env file", subagent_type: "explore" })]
      }
      return "parent done"
    }
    const model = ScriptedModel.make(Array.from({ length: 6 }, () => router))
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({
        model,
        tools: [peek],
        files: { "project/agent.json": { agent: { build: { permission: { read: { "*.env": "deny" } } } } } }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "Parent" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "get the secrets" }] })
        expect(outcome.reason).toBe("completed")
        const [child] = yield* store.children(session.id)
        const childCalls = (yield* store.messages(child!.id)).flatMap((message) => message.parts.flatMap((part) => (part.type === "tool" ? [part] : [])))
        expect(childCalls[0]!.state.status).toBe("error")
        expect(childCalls[0]!.state.status === "error" && childCalls[0]!.state.error).toMatch(/Blocked by the user's permission rules/)
        // the child was not offered the task tool (depth limit 1)
        const childCall = model.calls.find((call) => describeCall(call).isExplore)!
        expect(childCall.tools?.map((tool) => tool.name)).not.toContain("task")
        expect(child!.permission?.some((rule) => rule.permission === "read" && rule.pattern === "*.env" && rule.action === "deny")).toBe(true)
      }).pipe(Effect.provide(runtime.layer))
    })
  })

  it.scopedLive("an @mention runs the subagent first, without a task permission ask", () => {
    const router = (options: LanguageModelV3CallOptions): Script.ScriptTurnSpec => {
      const call = describeCall(options)
      if (call.isExplore) return "explored: nothing unusual"
      return call.results.length > 0 ? "Here is what the explorer found." : "unexpected"
    }
    const model = ScriptedModel.make(Array.from({ length: 4 }, () => router))
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model, files: { "project/agent.json": { permission: { task: "ask" } } } })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "Mention" })
        const outcome = yield* (yield* SessionLoop).prompt({
          sessionID: session.id,
          parts: [{ type: "text", text: "check the repo layout" }, { type: "agent", name: "explore" }]
        })
        expect(outcome.reason).toBe("completed")
        expect(model.calls).toHaveLength(2) // the subagent, then the parent once
        const [user, step, answer] = yield* store.messages(session.id)
        expect(user!.parts.map((part) => part.type)).toEqual(["text", "agent", "subtask"])
        expect(step!.parts[0]).toMatchObject({ tool: "task", state: { status: "completed" } })
        expect(answer!.parts.find((part) => part.type === "text")).toMatchObject({ text: "Here is what the explorer found." })
      }).pipe(Effect.provide(runtime.layer))
    })
  })
})

describe("subagents and abort", () => {
  it.scopedLive("aborting the parent aborts the running child and kills its tools", () => {
    const router = (options: LanguageModelV3CallOptions): Script.ScriptTurnSpec => {
      const call = describeCall(options)
      if (call.user.includes("sleep a minute")) return [toolCall("sleeper", { seconds: 60 })]
      return [toolCall("task", { description: "Wait long", prompt: "sleep a minute", subagent_type: "general" })]
    }
    const model = ScriptedModel.make(Array.from({ length: 4 }, () => router))
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model, tools: [sleeper] })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const session = yield* store.create({ title: "Parent" })
        const before = pids.length
        const run = yield* Effect.fork(loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "delegate" }] }))
        while (pids.length === before) yield* Effect.sleep("10 millis")
        const pid = pids.at(-1)!
        const [child] = yield* store.children(session.id)
        expect((yield* loop.status(child!.id)).type).toBe("busy")
        yield* loop.abort(session.id)
        expect((yield* Fiber.join(run)).reason).toBe("aborted")
        yield* Effect.sleep("100 millis")
        expect(isAlive(pid)).toBe(false)
        expect((yield* loop.status(child!.id)).type).toBe("idle")
        const childParts = (yield* store.messages(child!.id)).flatMap((message) => message.parts)
        expect(childParts.find((part) => part.type === "tool")).toMatchObject({ state: { status: "error", metadata: { interrupted: true } } })
      }).pipe(Effect.provide(runtime.layer))
    })
  }, 20_000)
})
