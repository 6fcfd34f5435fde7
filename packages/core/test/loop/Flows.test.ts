import type { BusEventOf, SessionID, ToolPart } from "@agent/domain"
import { type Script, ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream, TestClock } from "effect"
import { Bus } from "../../src/runtime/Bus.js"
import { PermissionService } from "../../src/permission/PermissionService.js"
import { type RunOutcome, SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import { echo, guarded, isAlive, pids, sleeper } from "./tools.js"

const { text, toolCall } = ScriptedModel

const toolParts = (parts: ReadonlyArray<{ type: string }>) => parts.filter((part): part is ToolPart => part.type === "tool")

/** Runs `body` against a fresh runtime with the scripted model and the test tools. */
const withRuntime = <A, E>(
  options: Omit<TestRuntime.TestRuntimeOptions, "tools"> & Partial<Pick<TestRuntime.TestRuntimeOptions, "tools">>,
  body: (ctx: {
    store: SessionStore["Type"]
    loop: SessionLoop["Type"]
    permissions: PermissionService["Type"]
    bus: Bus["Type"]
    sessionID: SessionID
  }) => Effect.Effect<A, E, any>
) =>
  Effect.gen(function*() {
    const runtime = yield* TestRuntime.make({ tools: [echo, guarded, sleeper], ...options })
    return yield* Effect.gen(function*() {
      const store = yield* SessionStore
      const session = yield* store.create({ title: "A session" })
      return yield* body({
        store,
        loop: yield* SessionLoop,
        permissions: yield* PermissionService,
        bus: yield* Bus,
        sessionID: session.id
      })
    }).pipe(Effect.provide(runtime.layer))
  })

const say = (loop: SessionLoop["Type"], sessionID: SessionID, message: string, extra: Partial<Parameters<SessionLoop["Type"]["prompt"]>[0]> = {}) =>
  loop.prompt({ sessionID, parts: [{ type: "text", text: message }], ...extra })

/** Waits (without real time) until the session has a pending permission request. */
const nextRequest = (permissions: PermissionService["Type"]) =>
  Effect.gen(function*() {
    for (;;) {
      const [request] = yield* permissions.list()
      if (request) return request
      yield* Effect.sleep("5 millis")
    }
  })

describe("permissions in the loop", () => {
  it.scopedLive("a deny fails only that call; the model is told and carries on", () =>
    withRuntime(
      {
        model: ScriptedModel.make([[toolCall("bash", { command: "rm -rf /" })], "I am not allowed to do that."]),
        files: { "project/agent.json": { permission: { bash: { "*": "allow", "rm *": "deny" } } } }
      },
      ({ loop, sessionID, store }) =>
        Effect.gen(function*() {
          const outcome = yield* say(loop, sessionID, "clean up")
          expect(outcome.reason).toBe("completed")
          const [, step, answer] = yield* store.messages(sessionID)
          expect(toolParts(step!.parts)[0]!.state).toMatchObject({ status: "error" })
          const error = toolParts(step!.parts)[0]!.state
          expect(error.status === "error" && error.error).toMatch(/Blocked by the user's permission rules.*"rm \*"/)
          expect(answer!.parts.some((part) => part.type === "text")).toBe(true)
        })
    ))

  it.scopedLive("a plain reject stops the run", () => {
    const model = ScriptedModel.make([[toolCall("bash", { command: "git push" })], "should never be asked"])
    return withRuntime(
      { model, files: { "project/agent.json": { permission: { bash: "ask" } } } },
      ({ loop, permissions, sessionID, store }) =>
        Effect.gen(function*() {
          const run = yield* Effect.fork(say(loop, sessionID, "push it"))
          const request = yield* nextRequest(permissions)
          expect(request).toMatchObject({ permission: "bash", patterns: ["git push"], always: ["git *"] })
          yield* permissions.reply({ requestID: request.id, reply: "reject" })
          const outcome = yield* Fiber.join(run)
          expect(outcome.reason).toBe("rejected")
          expect(model.calls).toHaveLength(1)
          const [, step] = yield* store.messages(sessionID)
          const state = toolParts(step!.parts)[0]!.state
          expect(state.status === "error" && state.error).toBe("The user said no to this tool call; it did not run.")
        })
    )
  })

  it.scopedLive("a reject with feedback fails the call with the feedback, and the run goes on", () => {
    const model = ScriptedModel.make([[toolCall("bash", { command: "git push --force" })], "Understood, I will not force-push."])
    return withRuntime(
      { model, files: { "project/agent.json": { permission: { bash: "ask" } } } },
      ({ loop, permissions, sessionID }) =>
        Effect.gen(function*() {
          const run = yield* Effect.fork(say(loop, sessionID, "push it"))
          const request = yield* nextRequest(permissions)
          yield* permissions.reply({ requestID: request.id, reply: "reject", message: "never force-push" })
          expect((yield* Fiber.join(run)).reason).toBe("completed")
          const results = model.calls[1]!.prompt.filter((entry) => entry.role === "tool").flatMap((entry) => entry.content)
          expect(results[0]).toMatchObject({ output: { type: "error-text", value: expect.stringContaining("never force-push") } })
        })
    )
  })

  it.scopedLive("with continue_loop_on_deny a reject does not stop the run", () =>
    withRuntime(
      {
        model: ScriptedModel.make([[toolCall("bash", { command: "make deploy" })], "Skipped the deploy."]),
        files: { "project/agent.json": { permission: { bash: "ask" }, experimental: { continue_loop_on_deny: true } } }
      },
      ({ loop, permissions, sessionID }) =>
        Effect.gen(function*() {
          const run = yield* Effect.fork(say(loop, sessionID, "deploy"))
          yield* permissions.reply({ requestID: (yield* nextRequest(permissions)).id, reply: "reject" })
          expect((yield* Fiber.join(run)).reason).toBe("completed")
        })
    ))

  it.scopedLive("auto-approve answers asks once, but deny rules still apply", () =>
    withRuntime(
      {
        model: ScriptedModel.make([[toolCall("bash", { command: "git status" }), toolCall("bash", { command: "rm -rf build" })], "done"]),
        files: { "project/agent.json": { permission: { bash: { "*": "ask", "rm *": "deny" } } } }
      },
      ({ loop, permissions, sessionID, store }) =>
        Effect.gen(function*() {
          expect((yield* say(loop, sessionID, "go", { autoApprove: true })).reason).toBe("completed")
          const [, step] = yield* store.messages(sessionID)
          const [status, rm] = toolParts(step!.parts)
          expect(status!.state).toMatchObject({ status: "completed", output: "ran git status" })
          expect(rm!.state.status).toBe("error")
          expect(yield* permissions.approvals()).toEqual([]) // "once" remembers nothing
        })
    ))
})

describe("guards against runaway runs", () => {
  it.scopedLive("three identical calls in a row ask doom_loop; rejecting it stops the run", () => {
    const same = () => [toolCall("echo", { text: "again" })]
    const model = ScriptedModel.make([same(), same(), same(), "never reached"])
    return withRuntime({ model }, ({ loop, permissions, sessionID, store }) =>
      Effect.gen(function*() {
        const run = yield* Effect.fork(say(loop, sessionID, "loop"))
        const request = yield* nextRequest(permissions)
        expect(request).toMatchObject({ permission: "doom_loop", patterns: ["echo"] })
        // the first two calls ran, the third is waiting
        const messages = yield* store.messages(sessionID)
        expect(messages.flatMap((message) => toolParts(message.parts)).filter((part) => part.state.status === "completed")).toHaveLength(2)
        yield* permissions.reply({ requestID: request.id, reply: "reject" })
        expect((yield* Fiber.join(run)).reason).toBe("rejected")
        expect(model.calls).toHaveLength(3)
      }))
  })

  it.scopedLive("different calls never trip the doom-loop guard", () =>
    withRuntime(
      { model: ScriptedModel.make([[toolCall("echo", { text: "a" })], [toolCall("echo", { text: "b" })], [toolCall("echo", { text: "a" })], "ok"]) },
      ({ loop, sessionID }) => Effect.map(say(loop, sessionID, "go"), (outcome) => expect(outcome.reason).toBe("completed"))
    ))

  it.scopedLive("on its last step the agent is told to answer in text; calling tools anyway ends the run", () => {
    const model = ScriptedModel.make([[toolCall("echo", { text: "1" })], [toolCall("echo", { text: "2" })], "unused"])
    return withRuntime(
      { model, files: { "project/agent.json": { agent: { build: { steps: 2 } } } } },
      ({ loop, sessionID }) =>
        Effect.gen(function*() {
          const outcome = yield* say(loop, sessionID, "go")
          expect(outcome.reason).toBe("steps")
          expect(outcome.error?.data.message).toMatch(/limit of 2 steps/)
          expect(model.calls).toHaveLength(2)
          const lastPrompt = model.calls[1]!.prompt
          expect(model.calls[0]!.prompt.at(-1)!.role).toBe("user")
          const final = lastPrompt.at(-1)!
          expect(final.role).toBe("assistant")
          expect(JSON.stringify(final.content)).toMatch(/MAXIMUM STEPS|final step|last step|no more tool/i)
        })
    )
  })

  it.scopedLive("a run over its wall-clock limit is stopped and its running tool killed", () =>
    withRuntime(
      {
        model: ScriptedModel.make([[toolCall("sleeper", { seconds: 30 })]]),
        files: { "project/agent.json": { limits: { duration: 1 } } }
      },
      ({ loop, sessionID, store }) =>
        Effect.gen(function*() {
          const outcome = yield* say(loop, sessionID, "wait")
          expect(outcome.reason).toBe("duration")
          expect(outcome.error?.data.message).toMatch(/time limit of 1 s/)
          const [, step] = yield* store.messages(sessionID)
          const state = toolParts(step!.parts)[0]!.state
          expect(state).toMatchObject({ status: "error", metadata: { interrupted: true } })
          const pid = (state as { metadata?: Record<string, unknown> }).metadata?.pid as number
          yield* Effect.sleep("100 millis")
          expect(isAlive(pid)).toBe(false)
          expect(step!.info.role === "assistant" && step!.info.time.completed).toBeTypeOf("number")
        })
    ), 20_000)

  it.scopedLive("a run that produces nothing for the stall limit is stopped", () =>
    withRuntime(
      {
        model: ScriptedModel.make([[ScriptedModel.delay(5_000), text("too late")]]),
        files: { "project/agent.json": { agent: { build: { limits: { stall: 1 } } } } }
      },
      ({ loop, sessionID }) =>
        Effect.gen(function*() {
          const outcome = yield* say(loop, sessionID, "hello")
          expect(outcome.reason).toBe("stall")
          expect(outcome.error?.data.message).toMatch(/Nothing happened for 1 s/)
        })
    ), 20_000)

  it.scopedLive("waiting for the user's permission answer is not a stall", () =>
    withRuntime(
      {
        model: ScriptedModel.make([[toolCall("bash", { command: "ls" })], "listed"]),
        files: { "project/agent.json": { permission: { bash: "ask" }, limits: { stall: 1 } } }
      },
      ({ loop, permissions, sessionID }) =>
        Effect.gen(function*() {
          const run = yield* Effect.fork(say(loop, sessionID, "list"))
          const request = yield* nextRequest(permissions)
          yield* Effect.sleep("2500 millis")
          yield* permissions.reply({ requestID: request.id, reply: "once" })
          expect((yield* Fiber.join(run)).reason).toBe("completed")
        })
    ), 20_000)

  it.scopedLive("token and cost budgets end the run after the step that crossed them", () =>
    Effect.gen(function*() {
      const loopForever = () => [toolCall("echo", { text: String(Math.random()) }), ScriptedModel.finish("tool-calls", { input: 100, output: 50 })]
      const tokens = yield* withRuntime(
        {
          model: ScriptedModel.make(Array.from({ length: 10 }, loopForever)),
          files: { "project/agent.json": { limits: { tokens: 400 } } }
        },
        ({ loop, sessionID }) => say(loop, sessionID, "go")
      )
      expect(tokens.reason).toBe("budget")
      expect(tokens.usage.steps).toBe(3)
      expect(tokens.error?.data.message).toMatch(/450 tokens, over its budget of 400/)
      const cost = yield* withRuntime(
        {
          model: ScriptedModel.make(Array.from({ length: 10 }, loopForever)),
          modelInfo: { cost: { input: 1000, output: 1000 } }, // $0.15 per step
          files: { "project/agent.json": { limits: { cost: 0.2 } } }
        },
        ({ loop, sessionID }) => say(loop, sessionID, "go")
      )
      expect(cost.reason).toBe("budget")
      expect(cost.usage.steps).toBe(2)
      expect(cost.usage.cost).toBeCloseTo(0.3)
    }))
})

describe("retries", () => {
  it.scoped("retries rate limits with the provider's delay, else 2 s doubling per attempt, on the Effect clock", () => {
    const model = ScriptedModel.make([
      ScriptedModel.rateLimited({ retryAfterSeconds: 7 }),
      ScriptedModel.overloaded(),
      ScriptedModel.overloaded(),
      "finally"
    ])
    return withRuntime({ model }, ({ bus, loop, sessionID }) =>
      Effect.gen(function*() {
        const statuses = yield* bus.subscribe({ types: ["session.status"] })
        const retries: Array<BusEventOf<"session.status">["properties"]["status"]> = []
        yield* statuses.pipe(Stream.runForEach((event) => Effect.sync(() => retries.push(event.properties.status))), Effect.forkScoped)
        const run = yield* Effect.fork(say(loop, sessionID, "hi"))
        const waitForAttempt = (attempt: number) =>
          Effect.gen(function*() {
            while (!retries.some((status) => status.type === "retry" && status.attempt === attempt)) yield* Effect.promise(() => new Promise((r) => setTimeout(r, 2)))
          })
        // lets any fiber the clock woke up run, so "still waiting" is not a scheduling accident
        const settle = Effect.promise(() => new Promise((r) => setTimeout(r, 30)))
        yield* waitForAttempt(1)
        yield* TestClock.adjust("6999 millis")
        yield* settle
        expect(model.calls).toHaveLength(1) // still waiting: the provider asked for 7 s
        yield* TestClock.adjust("1 millis")
        yield* waitForAttempt(2)
        expect(model.calls).toHaveLength(2)
        yield* TestClock.adjust("3999 millis") // attempt 2: 2 s · 2
        yield* settle
        expect(model.calls).toHaveLength(2)
        yield* TestClock.adjust("1 millis")
        yield* waitForAttempt(3)
        expect(model.calls).toHaveLength(3)
        yield* TestClock.adjust("7999 millis") // attempt 3: 2 s · 4
        yield* settle
        expect(model.calls).toHaveLength(3)
        yield* TestClock.adjust("1 millis")
        const outcome = yield* Fiber.join(run)
        expect(outcome.reason).toBe("completed")
        expect(model.calls).toHaveLength(4)
        expect(retries.filter((status) => status.type === "retry").map((status) => status.type === "retry" && status.attempt)).toEqual([1, 2, 3])
      }))
  })

  it.scoped("gives up after the configured number of attempts and records the error", () => {
    const model = ScriptedModel.make(Array.from({ length: 5 }, () => ScriptedModel.serverError()))
    return withRuntime(
      { model, files: { "project/agent.json": { retry: { attempts: 2 } } } },
      ({ loop, sessionID, store }) =>
        Effect.gen(function*() {
          const run = yield* Effect.fork(say(loop, sessionID, "hi"))
          for (let index = 0; index < 10 && run.unsafePoll() === null; index++) {
            yield* Effect.promise(() => new Promise((r) => setTimeout(r, 10)))
            yield* TestClock.adjust("30 seconds")
          }
          const outcome: RunOutcome = yield* Fiber.join(run)
          expect(outcome.reason).toBe("error")
          expect(model.calls).toHaveLength(3)
          const [, reply] = yield* store.messages(sessionID)
          expect(reply!.info.role === "assistant" && reply!.info.error).toMatchObject({ name: "APIError", data: { attempts: 3 } })
        })
    )
  })

  it.scoped("context overflow is never retried: it is compacted, or with compaction off it ends the run", () =>
    Effect.gen(function*() {
      const compacting = ScriptedModel.make([ScriptedModel.contextOverflow(), "Summary of the work.", "Answer after the summary."])
      const compacted = yield* withRuntime({ model: compacting }, ({ loop, sessionID }) => say(loop, sessionID, "hi"))
      expect(compacted.reason).toBe("completed")
      expect(compacting.calls).toHaveLength(3)

      const off = ScriptedModel.make([ScriptedModel.contextOverflow(), "unused"])
      const ended = yield* withRuntime(
        { model: off, files: { "project/agent.json": { compaction: { auto: false } } } },
        ({ loop, sessionID }) => say(loop, sessionID, "hi")
      )
      expect(ended.reason).toBe("error")
      expect(ended.error?.data).toMatchObject({ contextOverflow: true })
      expect(off.calls).toHaveLength(1)
    }))
})

describe("abort, concurrency and resume", () => {
  it.scopedLive("abort mid-tool kills the process, marks the part interrupted and completes the message", () =>
    withRuntime({ model: ScriptedModel.make([[text("Waiting."), toolCall("sleeper", { seconds: 60 })]]) }, ({ bus, loop, sessionID, store }) =>
      Effect.gen(function*() {
        const idle = yield* bus.subscribe({ types: ["session.idle"] })
        const before = pids.length
        const run = yield* Effect.fork(say(loop, sessionID, "wait a minute"))
        while (pids.length === before) yield* Effect.sleep("5 millis")
        const pid = pids.at(-1)!
        expect(isAlive(pid)).toBe(true)
        expect((yield* loop.status(sessionID)).type).toBe("busy")
        yield* loop.abort(sessionID)
        const outcome = yield* Fiber.join(run)
        expect(outcome.reason).toBe("aborted")
        yield* Effect.sleep("50 millis")
        expect(isAlive(pid)).toBe(false)
        const [, step] = yield* store.messages(sessionID)
        const state = toolParts(step!.parts)[0]!.state
        expect(state).toMatchObject({ status: "error", error: "Tool execution aborted", metadata: { interrupted: true } })
        expect(step!.info.role === "assistant" && step!.info.error?.name).toBe("MessageAbortedError")
        expect(step!.parts.find((part) => part.type === "text")).toMatchObject({ text: "Waiting." })
        yield* Stream.runHead(idle)
        expect((yield* loop.status(sessionID)).type).toBe("idle")
      })
    ))

  it.scopedLive("a second prompt during a run joins it; the model sees it as a reminder, and no step runs twice", () => {
    let inFlight = 0
    let maxInFlight = 0
    const tracked = (turn: Script.ScriptTurnSpec) => () => {
      inFlight++
      maxInFlight = Math.max(maxInFlight, inFlight)
      setTimeout(() => inFlight--, 150)
      return turn
    }
    const model = ScriptedModel.make([
      tracked([ScriptedModel.delay(150), toolCall("echo", { text: "working" })]),
      tracked("Done with both.")
    ])
    return withRuntime({ model }, ({ loop, sessionID, store }) =>
      Effect.gen(function*() {
        const first = yield* Effect.fork(say(loop, sessionID, "start the job"))
        yield* Effect.sleep("50 millis")
        const second = yield* say(loop, sessionID, "also check the tests")
        const firstOutcome = yield* Fiber.join(first)
        expect(firstOutcome.reason).toBe("completed")
        expect(second.message?.info.id).toBe(firstOutcome.message?.info.id)
        expect(model.calls).toHaveLength(2)
        expect(maxInFlight).toBe(1)
        const lastPrompt = JSON.stringify(model.calls[1]!.prompt)
        expect(lastPrompt).toContain("also check the tests")
        expect(lastPrompt).toContain("While you were working, the user added this message")
        const roles = (yield* store.messages(sessionID)).map((message) => message.info.role)
        expect(roles).toEqual(["user", "assistant", "user", "assistant"])
      }))
  })

  it.scopedLive("on a later turn, the turn's own message becomes a reminder from its second step on (OpenCode's rule)", () => {
    const model = ScriptedModel.make(["First answer.", [toolCall("echo", { text: "x" })], [toolCall("echo", { text: "y" })], "Second answer."])
    return withRuntime({ model }, ({ loop, sessionID }) =>
      Effect.gen(function*() {
        yield* say(loop, sessionID, "first question")
        yield* say(loop, sessionID, "second question")
        const prompts = model.calls.map((call) => JSON.stringify(call.prompt))
        expect(prompts).toHaveLength(4)
        expect(prompts[1]).toContain("second question")
        expect(prompts[1]).not.toContain("While you were working")
        // steps two and three of the second turn: wrapped, though step one sent it plain
        for (const later of prompts.slice(2)) {
          expect(later).toContain("While you were working, the user added this message:\\nsecond question")
        }
      }))
  })

  it.scopedLive("resume continues an interrupted run, replaying the interrupted tool", () => {
    const model = ScriptedModel.make([[toolCall("sleeper", { seconds: 60 })], "Picked up where I left off."])
    return withRuntime({ model }, ({ loop, sessionID, store }) =>
      Effect.gen(function*() {
        const before = pids.length
        const run = yield* Effect.fork(say(loop, sessionID, "long job"))
        while (pids.length === before) yield* Effect.sleep("5 millis")
        yield* loop.abort(sessionID)
        yield* Fiber.join(run)
        const outcome = yield* loop.resume(sessionID)
        expect(outcome.reason).toBe("completed")
        const replay = model.calls[1]!.prompt.filter((entry) => entry.role === "tool").flatMap((entry) => entry.content)
        expect(replay[0]).toMatchObject({ output: { type: "text", value: "[Tool execution was interrupted]" } })
        expect((yield* store.messages(sessionID)).map((message) => message.info.role)).toEqual(["user", "assistant", "assistant"])
      }))
  })
})

describe("titles and reminders", () => {
  it.scopedLive("a new root session is named by the title agent with the small model, in the background", () => {
    const titleModel = ScriptedModel.make(['Title: "Fix the flaky login test"'], { modelID: "small" })
    const model = ScriptedModel.make(["On it."])
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model, titleModel })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const bus = yield* Bus
        const updates = yield* bus.subscribe({ types: ["session.updated"] })
        const session = yield* store.create()
        yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "the login test fails on CI sometimes" }] })
        const renamed = yield* updates.pipe(Stream.filter((event) => event.properties.info.title !== session.title), Stream.runHead)
        expect(renamed._tag === "Some" && renamed.value.properties.info.title).toBe("Fix the flaky login test")
        expect(titleModel.calls).toHaveLength(1)
        expect(ScriptedModel.lastUserText(titleModel.calls[0]!)).toContain("the login test fails on CI sometimes")
        expect(JSON.stringify(titleModel.calls[0]!.prompt[0])).toMatch(/title/i)
      }).pipe(Effect.provide(runtime.layer))
    })
  })

  it.scopedLive("plan gets the plan reminder; switching to build adds the switch reminder", () => {
    const model = ScriptedModel.make(["Here is the plan.", "Implementing it."])
    return withRuntime({ model }, ({ loop, sessionID }) =>
      Effect.gen(function*() {
        yield* say(loop, sessionID, "plan the refactor", { agent: "plan" })
        const planPrompt = JSON.stringify(model.calls[0]!.prompt)
        expect(planPrompt).toContain(".agent/plans/")
        yield* say(loop, sessionID, "go ahead", { agent: "build" })
        const buildPrompt = model.calls[1]!.prompt
        const lastUser = JSON.stringify(buildPrompt.findLast((entry) => entry.role === "user"))
        expect(lastUser).toContain("go ahead")
        expect(lastUser).toMatch(/plan/i)
        expect(lastUser).not.toContain(".agent/plans/")
        // the first (plan) message keeps no plan reminder in later requests
        expect(JSON.stringify(buildPrompt.find((entry) => entry.role === "user"))).not.toContain(".agent/plans/")
      }))
  })
})
