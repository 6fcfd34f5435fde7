import { Agent, type BusEvent, type MessageID, RejectedError, type SessionID, type ToolPart } from "@agent/domain"
import { ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Scope, Stream } from "effect"
import { Bus } from "../../src/runtime/Bus.js"
import * as Identifier from "../../src/runtime/Identifier.js"
import { DISMISSED_MESSAGE, QuestionRejectedError, QuestionService } from "../../src/question/QuestionService.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import * as Tool from "../../src/tool/Tool.js"
import { ToolRegistry } from "../../src/tool/ToolRegistry.js"
import * as Question from "../../src/tools/Question.js"

const sessionID = Identifier.descending("session") as SessionID

const questions = [
  {
    question: "Which database should the service use?",
    header: "Database",
    options: [
      { label: "SQLite (Recommended)", description: "One file, no server" },
      { label: "Postgres", description: "A server, more features" }
    ]
  },
  {
    question: "Which checks should run in CI?",
    header: "CI checks",
    options: [
      { label: "Lint", description: "eslint" },
      { label: "Tests", description: "vitest" },
      { label: "Types", description: "tsc" }
    ],
    multiple: true
  }
]

/** The service over a fresh bus, plus every event the bus carried. */
const setup = Effect.gen(function*() {
  const bus = yield* Effect.provide(Bus, Bus.layer)
  const events: Array<BusEvent> = []
  const stream = yield* bus.subscribe()
  yield* stream.pipe(Stream.runForEach((event) => Effect.sync(() => events.push(event))), Effect.forkScoped)
  // Built in the test's scope, so the service lives (and its finalizer runs) with the test.
  const built = yield* Layer.build(QuestionService.layer.pipe(Layer.provide(Layer.succeed(Bus, bus))))
  const service = Context.get(built, QuestionService)
  return { service, events, bus }
})

/** Waits (polling) until a question is pending. */
const nextQuestion = (service: QuestionService["Type"]) =>
  Effect.gen(function*() {
    for (;;) {
      const [request] = yield* service.list()
      if (request) return request
      yield* Effect.sleep("5 millis")
    }
  })

const eventTypes = (events: ReadonlyArray<BusEvent>) => events.map((event) => event.type).filter((type) => type.startsWith("question."))

const waitFor = (condition: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200 && !condition(); i++) yield* Effect.sleep("5 millis")
  })

describe("QuestionService", () => {
  it.scopedLive("ask publishes question.asked and resolves with the reply", () =>
    Effect.gen(function*() {
      const { service, events } = yield* setup
      const asking = yield* Effect.fork(service.ask({ sessionID, questions }))
      const request = yield* nextQuestion(service)
      expect(request.id).toMatch(/^que_[0-9A-Za-z]{26}$/)
      expect(request).toMatchObject({ sessionID, questions })
      yield* service.reply(request.id, [["Postgres"], ["Lint", "Types"]])
      expect(yield* Fiber.join(asking)).toEqual([["Postgres"], ["Lint", "Types"]])
      expect(yield* service.list()).toEqual([])
      yield* waitFor(() => eventTypes(events).length === 2)
      expect(eventTypes(events)).toEqual(["question.asked", "question.replied"])
      expect(events.find((event) => event.type === "question.replied")).toMatchObject({
        properties: { sessionID, requestID: request.id, answers: [["Postgres"], ["Lint", "Types"]] }
      })
    }))

  it.scopedLive("reject fails the asker with QuestionRejectedError and publishes question.rejected", () =>
    Effect.gen(function*() {
      const { service, events } = yield* setup
      const asking = yield* Effect.fork(service.ask({ sessionID, questions }))
      const request = yield* nextQuestion(service)
      yield* service.reject(request.id)
      const exit = yield* Fiber.await(asking)
      expect(exit).toEqual(Exit.fail(new QuestionRejectedError({ requestID: request.id })))
      yield* waitFor(() => eventTypes(events).length === 2)
      expect(eventTypes(events)).toEqual(["question.asked", "question.rejected"])
    }))

  it.scopedLive("unknown ids fail with QuestionNotFound", () =>
    Effect.gen(function*() {
      const { service } = yield* setup
      expect((yield* Effect.flip(service.reply("que_nope", [])))._tag).toBe("QuestionNotFound")
      expect((yield* Effect.flip(service.reject("que_nope")))._tag).toBe("QuestionNotFound")
    }))

  it.scopedLive("interrupting the asker withdraws the question", () =>
    Effect.gen(function*() {
      const { service, events } = yield* setup
      const asking = yield* Effect.fork(service.ask({ sessionID, questions }))
      const request = yield* nextQuestion(service)
      yield* Fiber.interrupt(asking)
      expect(yield* service.list()).toEqual([])
      yield* waitFor(() => eventTypes(events).length === 2)
      expect(events.at(-1)).toMatchObject({ type: "question.rejected", properties: { requestID: request.id } })
      expect((yield* Effect.flip(service.reply(request.id, [["x"]])))._tag).toBe("QuestionNotFound")
    }))

  it.live("closing the service rejects pending questions", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const built = yield* Layer.build(QuestionService.layer.pipe(Layer.provide(Bus.layer))).pipe(Scope.extend(scope))
      const service = Context.get(built, QuestionService)
      const asking = yield* Effect.fork(service.ask({ sessionID, questions }))
      const request = yield* nextQuestion(service)
      yield* Scope.close(scope, Exit.void)
      expect(yield* Fiber.await(asking)).toEqual(Exit.fail(new QuestionRejectedError({ requestID: request.id })))
    }))
})

const toolContext = (): Tool.ToolContext => ({
  sessionID,
  messageID: Identifier.ascending("message") as MessageID,
  callID: "call_q",
  agent: new Agent({ name: "build", mode: "primary", native: true, permission: [], options: {} }),
  abort: new AbortController().signal,
  ask: () => Effect.die("the question tool must not ask permission"),
  rules: [],
  metadata: () => Effect.void
})

describe("question tool", () => {
  it.scopedLive("asks through the service and reports the answers", () =>
    Effect.gen(function*() {
      const { service } = yield* setup
      const tool = yield* Effect.provideService(Question.make, QuestionService, service)
      const context = toolContext()
      const running = yield* Effect.fork(tool.execute({ questions }, context))
      const request = yield* nextQuestion(service)
      expect(request.tool).toEqual({ messageID: context.messageID, callID: "call_q" })
      yield* service.reply(request.id, [["SQLite (Recommended)"], ["Lint", "Tests"]])
      const result = yield* Fiber.join(running)
      expect(result.output).toBe(
        'User has answered your questions: "Which database should the service use?"="SQLite (Recommended)", ' +
          '"Which checks should run in CI?"="Lint, Tests". Continue with these answers in mind.'
      )
      expect(result.title).toBe("Asked 2 questions")
      expect(result.metadata).toEqual({ answers: [["SQLite (Recommended)"], ["Lint", "Tests"]] })
    }))

  it.scopedLive("a skipped question reads Unanswered", () =>
    Effect.gen(function*() {
      const { service } = yield* setup
      const tool = yield* Effect.provideService(Question.make, QuestionService, service)
      const running = yield* Effect.fork(tool.execute({ questions }, toolContext()))
      yield* service.reply((yield* nextQuestion(service)).id, [["Postgres"]])
      expect((yield* Fiber.join(running)).output).toContain('"Which checks should run in CI?"="Unanswered"')
    }))

  it.scopedLive("dismissing the questions fails the call as a rejection (which stops the run)", () =>
    Effect.gen(function*() {
      const { service } = yield* setup
      const tool = yield* Effect.provideService(Question.make, QuestionService, service)
      const running = yield* Effect.fork(tool.execute({ questions }, toolContext()))
      yield* service.reject((yield* nextQuestion(service)).id)
      const error = yield* Effect.flip(Fiber.join(running))
      expect(error).toBeInstanceOf(RejectedError)
      expect(error.message).toBe(DISMISSED_MESSAGE)
    }))

  it.effect("headers longer than 30 characters and an empty list are invalid input", () =>
    Effect.gen(function*() {
      const tool = yield* Effect.provideService(Question.make, QuestionService, {
        ask: () => Effect.die("unused"),
        reply: () => Effect.die("unused"),
        reject: () => Effect.die("unused"),
        list: () => Effect.succeed([])
      })
      const long = { ...questions[0]!, header: "x".repeat(31) }
      const error = yield* Effect.flip(Tool.decodeInput(tool, { questions: [long] }))
      expect(error.message).toContain("questions.0.header: expected a label of at most 30 characters.")
      const empty = yield* Effect.flip(Tool.decodeInput(tool, { questions: [] }))
      expect(empty._tag).toBe("ToolInputError")
      expect(empty.message).toContain("questions: expected at least one question.")
      // a bad question inside the list keeps its own message
      const missing = yield* Effect.flip(Tool.decodeInput(tool, { questions: [{ question: "Which?", options: [] }] }))
      expect(missing.message).toContain("questions.0.header: is missing")
      const ok = yield* Tool.decodeInput(tool, { questions: [{ ...questions[0]!, header: "x".repeat(30) }] })
      expect(ok).toBeDefined()
    }))

  const inLoop = <A, E>(
    model: ScriptedModel,
    body: (ctx: { loop: SessionLoop["Type"]; store: SessionStore["Type"]; service: QuestionService["Type"]; sessionID: SessionID }) => Effect.Effect<A, E, any>
  ) =>
    Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model })
      return yield* Effect.gen(function*() {
        yield* (yield* ToolRegistry).register([yield* Question.make])
        const store = yield* SessionStore
        const session = yield* store.create({ title: "questions" })
        return yield* body({ loop: yield* SessionLoop, store, service: yield* QuestionService, sessionID: session.id })
      }).pipe(Effect.provide(QuestionService.layer), Effect.provide(runtime.layer))
    })

  it.scopedLive("through the real loop: the answer goes back to the model", () => {
    const model = ScriptedModel.make([[ScriptedModel.toolCall("question", { questions: [questions[0]] })], "Using Postgres then."])
    return inLoop(model, ({ loop, store, service, sessionID }) =>
      Effect.gen(function*() {
        const run = yield* Effect.fork(loop.prompt({ sessionID, parts: [{ type: "text", text: "set up a db" }] }))
        const request = yield* nextQuestion(service)
        expect(request.sessionID).toBe(sessionID)
        yield* service.reply(request.id, [["Postgres"]])
        expect((yield* Fiber.join(run)).reason).toBe("completed")
        const part = (yield* store.messages(sessionID)).flatMap((m) => m.parts).find((p): p is ToolPart => p.type === "tool")
        expect(part?.state).toMatchObject({ status: "completed", output: expect.stringContaining('="Postgres"') })
        expect(JSON.stringify(model.calls[1]!.prompt)).toContain('\\"Which database should the service use?\\"=\\"Postgres\\"')
      }))
  })

  it.scopedLive("through the real loop: dismissing stops the run", () => {
    const model = ScriptedModel.make([[ScriptedModel.toolCall("question", { questions })], "never reached"])
    return inLoop(model, ({ loop, service, sessionID }) =>
      Effect.gen(function*() {
        const run = yield* Effect.fork(loop.prompt({ sessionID, parts: [{ type: "text", text: "ask me" }] }))
        yield* service.reject((yield* nextQuestion(service)).id)
        expect((yield* Fiber.join(run)).reason).toBe("rejected")
        expect(model.calls).toHaveLength(1)
      }))
  })
})
