import type { SessionID } from "@agent/domain"
import type { LanguageModelV3CallOptions } from "@ai-sdk/provider"
import { type Script, ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { Bus } from "../../src/runtime/Bus.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import { echo, isAlive, pids, sleeper } from "./tools.js"

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
      if (call.isExplore && call.results.length === 0) return [toolCall("read", { filePath: ".env" })]
      if (call.isExplore) return `child saw: ${call.results.join(" ")}`
      if (call.results.length === 0) {
        return [toolCall("task", { description: "Read secrets", prompt: "read the env file", subagent_type: "explore" })]
      }
      return "parent done"
    }
    const model = ScriptedModel.make(Array.from({ length: 6 }, () => router))
    return Effect.gen(function*() {
      // The real read tool and a real file; explore's own rules allow every read, so only the
      // parent's deny can stop it.
      const runtime = yield* TestRuntime.make({
        model,
        files: {
          "project/.env": "API_KEY=very-secret",
          "project/agent.json": { agent: { build: { permission: { read: { "*.env": "deny" } } } } }
        }
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
        expect(JSON.stringify(yield* store.messages(child!.id))).not.toContain("very-secret")
        expect(JSON.stringify(model.calls)).not.toContain("very-secret")
      }).pipe(Effect.provide(runtime.layer))
    })
  })

  it.scopedLive("experimental.primary_tools: the primary agent is offered them, its subagents are not and cannot call them", () => {
    const router = (options: LanguageModelV3CallOptions): Script.ScriptTurnSpec => {
      const call = describeCall(options)
      if (call.isExplore && call.results.length === 0) return [toolCall("grep", { pattern: "answer" })]
      if (call.isExplore) return `child saw: ${call.results.join(" ")}`
      if (call.results.length === 0) return [toolCall("task", { description: "Look around", prompt: "find the answer", subagent_type: "explore" })]
      return "parent done"
    }
    const model = ScriptedModel.make(Array.from({ length: 4 }, () => router))
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({
        model,
        files: {
          "project/src/app.ts": "export const answer = 42\n",
          "project/agent.json": { experimental: { primary_tools: ["grep"] } }
        }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "Primary tools" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "find it" }] })
        expect(outcome.reason).toBe("completed")
        expect(model.calls[0]!.tools!.map((tool) => tool.name)).toContain("grep")
        const offered = model.calls.find((call) => describeCall(call).isExplore)!.tools!.map((tool) => tool.name)
        expect(offered).toContain("read")
        expect(offered).not.toContain("grep")
        // A call the model makes anyway goes to the invalid tool (which tells it so); nothing is searched.
        const [child] = yield* store.children(session.id)
        const childCalls = (yield* store.messages(child!.id)).flatMap((message) => message.parts.flatMap((part) => (part.type === "tool" ? [part] : [])))
        expect(childCalls[0]!.tool).toBe("invalid")
        expect(childCalls[0]!.state.input).toMatchObject({ tool: "grep" })
        expect(JSON.stringify(yield* store.messages(child!.id))).not.toContain("answer = 42")
        expect(child!.permission?.some((rule) => rule.permission === "grep" && rule.action === "deny" && rule.source?.note === "experimental.primary_tools")).toBe(true)
      }).pipe(Effect.provide(runtime.layer))
    })
  })

  it.scopedLive("a parent that denies everything but reading lets its subagent read, and nothing the parent may not do", () => {
    const router = (options: LanguageModelV3CallOptions): Script.ScriptTurnSpec => {
      const call = describeCall(options)
      if (call.isExplore && call.results.length === 0) return [toolCall("read", { filePath: "src/app.ts" })]
      if (call.isExplore) return `child saw: ${call.results.join(" ")}`
      if (call.results.length === 0) return [toolCall("task", { description: "Look around", prompt: "read the app", subagent_type: "explore" })]
      return "parent done"
    }
    const model = ScriptedModel.make(Array.from({ length: 4 }, () => router))
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({
        model,
        files: {
          "project/src/app.ts": "export const answer = 42\n",
          "project/agent.json": {
            default_agent: "reviewer",
            agent: {
              reviewer: { mode: "primary", prompt: "You review.", permission: { "*": "deny", read: "allow", grep: "allow", task: "allow" } }
            }
          }
        }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "Review" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "review it" }] })
        expect(outcome.reason).toBe("completed")
        const [child] = yield* store.children(session.id)
        const childCalls = (yield* store.messages(child!.id)).flatMap((message) => message.parts.flatMap((part) => (part.type === "tool" ? [part] : [])))
        expect(childCalls[0]!.state.status).toBe("completed")
        expect(childCalls[0]!.state.status === "completed" && childCalls[0]!.state.output).toContain("export const answer = 42")
        // explore may run bash and list on its own; the parent may not, so neither may the child
        const offered = model.calls.find((call) => describeCall(call).isExplore)!.tools!.map((tool) => tool.name)
        expect(offered).toEqual(expect.arrayContaining(["read", "grep"]))
        expect(offered).not.toContain("bash")
        expect(offered).not.toContain("list")
        expect(offered).not.toContain("task")
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

describe("the task tool", () => {
  it.scopedLive("lists the subagents the agent may use, asks `task` with the name, and a denied subagent cannot be started", () => {
    const router = (options: LanguageModelV3CallOptions): Script.ScriptTurnSpec => {
      const call = describeCall(options)
      if (call.results.length === 0) {
        return [
          toolCall("task", { description: "Scan", prompt: "scan it", subagent_type: "general" }),
          toolCall("task", { description: "Sneak", prompt: "sneak", subagent_type: "explore" })
        ]
      }
      if (call.user.includes("scan it")) return "scanned"
      return "parent done"
    }
    const model = ScriptedModel.make(Array.from({ length: 4 }, () => router))
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({
        model,
        files: {
          "project/agent.json": {
            permission: { task: { "*": "ask", explore: "deny" } },
            agent: { helper: { mode: "subagent", description: "Helps with chores.", prompt: "You help." }, quiet: { mode: "subagent", hidden: true, prompt: "Hidden." } }
          }
        }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const bus = yield* Bus
        const asked: Array<ReadonlyArray<string>> = []
        const asks = yield* bus.subscribe({ types: ["permission.asked"] })
        yield* asks.pipe(Stream.runForEach((event) => Effect.sync(() => asked.push(event.properties.patterns))), Effect.forkScoped)
        const session = yield* store.create({ title: "Parent" })
        yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "delegate" }], autoApprove: true })
        const description = model.calls[0]!.tools?.find((tool) => tool.name === "task")
        const text = description && "description" in description ? description.description ?? "" : ""
        expect(text).toMatch(/- general: /)
        expect(text).toMatch(/- helper: Helps with chores\./)
        expect(text).not.toMatch(/- explore:/) // denied by the task rules
        expect(text).not.toMatch(/- quiet:/) // hidden
        expect(text).not.toMatch(/- build:|- plan:/) // primary agents
        // general was asked for by name (and auto-approved); explore was refused before any child existed
        expect(asked).toContainEqual(["general"])
        const children = yield* store.children(session.id)
        expect(children.map((child) => child.title)).toEqual(["Scan (@general subagent)"])
        const calls = (yield* store.messages(session.id)).flatMap((message) => message.parts.flatMap((part) => (part.type === "tool" ? [part] : [])))
        const refused = calls.find((part) => part.state.input.subagent_type === "explore")!
        expect(refused.state.status === "error" && refused.state.error).toMatch(/Unknown subagent "explore". Available: general, helper/)
      }).pipe(Effect.provide(runtime.layer))
    })
  })

  it.scopedLive("a task_id that is not a subagent session of this session is refused with a clear error", () => {
    let other = "" as SessionID
    const router = (options: LanguageModelV3CallOptions): Script.ScriptTurnSpec => {
      const call = describeCall(options)
      if (call.results.length === 0) {
        return [
          toolCall("task", { description: "Resume", prompt: "go on", subagent_type: "general", task_id: other }),
          toolCall("task", { description: "Resume", prompt: "go on", subagent_type: "general", task_id: "ses_nonexistent" })
        ]
      }
      return "parent done"
    }
    const model = ScriptedModel.make(Array.from({ length: 2 }, () => router))
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        other = (yield* store.create({ title: "Someone else's" })).id
        const session = yield* store.create({ title: "Parent" })
        expect((yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "resume" }] })).reason).toBe("completed")
        const errors = (yield* store.messages(session.id)).flatMap((message) =>
          message.parts.flatMap((part) => (part.type === "tool" && part.state.status === "error" ? [part.state.error] : []))
        )
        expect(errors).toEqual([
          `No subagent session ${other} belongs to this session; leave task_id out to start a new one.`,
          "No subagent session ses_nonexistent belongs to this session; leave task_id out to start a new one."
        ])
        expect(yield* store.children(session.id)).toEqual([])
        expect((yield* store.messages(other)).length).toBe(0)
      }).pipe(Effect.provide(runtime.layer))
    })
  })

  it.scopedLive("the child's tool calls show in the task part's metadata while it runs; its tokens roll up", () => {
    const router = (options: LanguageModelV3CallOptions): Script.ScriptTurnSpec => {
      const call = describeCall(options)
      if (call.user.includes("echo twice") && call.results.length === 0) {
        return costly([toolCall("echo", { text: "one" }), toolCall("echo", { text: "two" })])
      }
      if (call.user.includes("echo twice")) return costly([text("echoed twice")])
      if (call.results.length === 0) return costly([toolCall("task", { description: "Echo", prompt: "echo twice", subagent_type: "general" })])
      return costly([text("parent done")])
    }
    const model = ScriptedModel.make(Array.from({ length: 4 }, () => router))
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model, tools: [echo] })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const bus = yield* Bus
        const session = yield* store.create({ title: "Parent" })
        /** The task part's metadata.summary, each time the parent's task part changed while running. */
        const seen: Array<ReadonlyArray<{ tool: string; status: string }>> = []
        const updates = yield* bus.subscribe({ types: ["message.part.updated"] })
        yield* updates.pipe(
          Stream.runForEach((event) =>
            Effect.sync(() => {
              const part = event.properties.part
              if (part.sessionID !== session.id || part.type !== "tool" || part.tool !== "task" || part.state.status !== "running") return
              const summary = part.state.metadata?.summary
              if (Array.isArray(summary)) seen.push(summary as Array<{ tool: string; status: string }>)
            })
          ),
          Effect.forkScoped
        )
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "delegate" }] })
        expect(outcome.reason).toBe("completed")
        // the parent saw the child's echo calls come in and finish
        expect(seen.some((summary) => summary.some((entry) => entry.tool === "echo" && entry.status === "running"))).toBe(true)
        expect(seen.some((summary) => summary.filter((entry) => entry.tool === "echo" && entry.status === "completed").length === 2)).toBe(true)
        const task = (yield* store.messages(session.id)).flatMap((message) => message.parts).find((part) => part.type === "tool" && part.tool === "task")!
        expect(task.type === "tool" && task.state.status === "completed" && task.state.metadata.summary).toEqual([
          expect.objectContaining({ tool: "echo", status: "completed", title: "echo one" }),
          expect.objectContaining({ tool: "echo", status: "completed", title: "echo two" })
        ])
        // four calls of 1 000 input + 100 output tokens: two by the parent, two by the child
        const [child] = yield* store.children(session.id)
        expect((yield* store.get(child!.id)).tokens).toMatchObject({ input: 2_000, output: 200 })
        expect((yield* store.get(session.id)).tokens).toMatchObject({ input: 4_000, output: 400 })
      }).pipe(Effect.provide(runtime.layer))
    })
  })

  it.scopedLive("a subagent runs on its own model when it has one, else on the parent's", () => {
    const router = (options: LanguageModelV3CallOptions): Script.ScriptTurnSpec => {
      const call = describeCall(options)
      if (call.results.length === 0 && call.user === "delegate") {
        return [
          toolCall("task", { description: "Own model", prompt: "use yours", subagent_type: "helper" }),
          toolCall("task", { description: "Parent model", prompt: "use mine", subagent_type: "general" })
        ]
      }
      if (call.user.includes("use mine")) return "general answered"
      return "parent done"
    }
    const model = ScriptedModel.make(Array.from({ length: 3 }, () => router))
    const small = ScriptedModel.make(["helper answered"], { modelID: "small" })
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({
        model,
        titleModel: small,
        files: { "project/agent.json": { agent: { helper: { mode: "subagent", description: "Helps.", model: "test/small" } } } }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "Parent" })
        expect((yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "delegate" }] })).reason).toBe("completed")
        const children = yield* store.children(session.id)
        const modelOf = (title: string) =>
          Effect.map(store.messages(children.find((child) => child.title.startsWith(title))!.id), (messages) =>
            messages.flatMap((message) => (message.info.role === "assistant" ? [message.info.modelID] : [])))
        expect(yield* modelOf("Own model")).toEqual(["small"])
        expect(yield* modelOf("Parent model")).toEqual(["scripted"])
      }).pipe(Effect.provide(runtime.layer))
    })
  })

  it.scopedLive("subagent_depth 2 lets a subagent with its own task rule start one more level, and no further", () => {
    const router = (options: LanguageModelV3CallOptions): Script.ScriptTurnSpec => {
      const call = describeCall(options)
      const offered = (options.tools ?? []).some((tool) => tool.name === "task")
      if (call.results.length > 0) return `done at ${call.user}`
      if (call.user === "level 0") return [toolCall("task", { description: "Level one", prompt: "level 1", subagent_type: "manager" })]
      if (call.user === "level 1") return offered ? [toolCall("task", { description: "Level two", prompt: "level 2", subagent_type: "manager" })] : "no task tool at 1"
      if (call.user === "level 2") return offered ? "task tool offered at 2" : "no task tool at 2"
      return "unexpected"
    }
    const model = ScriptedModel.make(Array.from({ length: 6 }, () => router))
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({
        model,
        files: {
          "project/agent.json": {
            subagent_depth: 2,
            agent: { manager: { mode: "subagent", description: "Delegates.", prompt: "You delegate.", permission: { task: "allow" } } }
          }
        }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "Root" })
        expect((yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "level 0" }] })).reason).toBe("completed")
        const [one] = yield* store.children(session.id)
        const [two] = yield* store.children(one!.id)
        expect(two!.title).toBe("Level two (@manager subagent)")
        expect(yield* store.children(two!.id)).toEqual([])
        const texts = (yield* store.messages(two!.id)).flatMap((message) => message.parts.flatMap((part) => (part.type === "text" ? [part.text] : [])))
        expect(texts).toContain("no task tool at 2")
        // todowrite stays off in children whose agent has no todowrite rule of its own
        expect(two!.permission).toContainEqual(expect.objectContaining({ permission: "todowrite", pattern: "*", action: "deny" }))
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
