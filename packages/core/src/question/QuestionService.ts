import type { PermissionToolRef, QuestionInfo, QuestionRequest, SessionID } from "@agent/domain"
import { Context, Deferred, Effect, Layer, Schema } from "effect"
import * as Identifier from "../runtime/Identifier.js"
import { Bus } from "../runtime/Bus.js"

export interface QuestionAskInput {
  readonly sessionID: SessionID
  readonly questions: ReadonlyArray<QuestionInfo>
  /** The tool call asking, so clients can show the questions in place. */
  readonly tool?: PermissionToolRef
}

/** One list per question: the chosen option labels, or the text the user typed. */
export type Answers = ReadonlyArray<ReadonlyArray<string>>

/** What the model reads when the user dismisses its questions. */
export const DISMISSED_MESSAGE = "The user dismissed these questions without answering them."

/** The user dismissed the questions. Like a rejected permission, it stops the run. */
export class QuestionRejectedError extends Schema.TaggedError<QuestionRejectedError>()("QuestionRejectedError", {
  requestID: Schema.String
}) {
  override get message() {
    return DISMISSED_MESSAGE
  }
}

export class QuestionNotFound extends Schema.TaggedError<QuestionNotFound>()("QuestionNotFound", {
  requestID: Schema.String
}) {
  override get message() {
    return `No pending question with id ${this.requestID}`
  }
}

export type QuestionError = QuestionRejectedError | QuestionNotFound

interface Pending {
  readonly request: QuestionRequest
  readonly deferred: Deferred.Deferred<Answers, QuestionRejectedError>
}

/**
 * Questions from the model to the user: `ask` publishes `question.asked` and waits until a
 * client answers (`reply`) or dismisses them (`reject`). There is no timeout; an interrupted
 * asker withdraws its question.
 */
export class QuestionService extends Context.Tag("@agent/core/QuestionService")<
  QuestionService,
  {
    readonly ask: (input: QuestionAskInput) => Effect.Effect<Answers, QuestionRejectedError>
    readonly reply: (requestID: string, answers: Answers) => Effect.Effect<void, QuestionNotFound>
    readonly reject: (requestID: string) => Effect.Effect<void, QuestionNotFound>
    /** Questions waiting for an answer, oldest first. */
    readonly list: () => Effect.Effect<ReadonlyArray<QuestionRequest>>
  }
>() {
  static readonly layer: Layer.Layer<QuestionService, never, Bus> = Layer.scoped(
    QuestionService,
    Effect.gen(function*() {
      const bus = yield* Bus
      const pending = new Map<string, Pending>()

      const withdraw = (entry: Pending) =>
        Effect.gen(function*() {
          pending.delete(entry.request.id)
          yield* bus.publish({
            type: "question.rejected",
            properties: { sessionID: entry.request.sessionID, requestID: entry.request.id }
          })
          yield* Deferred.fail(entry.deferred, new QuestionRejectedError({ requestID: entry.request.id }))
        })

      const ask = Effect.fn("QuestionService.ask")(function*(input: QuestionAskInput) {
        const request: QuestionRequest = {
          id: Identifier.ascending("question"),
          sessionID: input.sessionID,
          questions: input.questions.map((question) => ({ ...question, options: [...question.options] })),
          ...(input.tool ? { tool: input.tool } : {}),
          time: { created: Date.now() }
        }
        const deferred = yield* Deferred.make<Answers, QuestionRejectedError>()
        const entry: Pending = { request, deferred }
        pending.set(request.id, entry)
        yield* bus.publish({ type: "question.asked", properties: request })
        return yield* Deferred.await(deferred).pipe(
          // The asker was aborted: withdraw the question so no client keeps showing it.
          Effect.onInterrupt(() => (pending.has(request.id) ? withdraw(entry) : Effect.void))
        )
      })

      const reply = Effect.fn("QuestionService.reply")(function*(requestID: string, answers: Answers) {
        const entry = pending.get(requestID)
        if (!entry) return yield* new QuestionNotFound({ requestID })
        pending.delete(requestID)
        // One answer list per question; missing ones count as unanswered.
        const normalized = entry.request.questions.map((_, index) => [...(answers[index] ?? [])])
        yield* bus.publish({
          type: "question.replied",
          properties: { sessionID: entry.request.sessionID, requestID, answers: normalized }
        })
        yield* Deferred.succeed(entry.deferred, normalized)
      })

      const reject = Effect.fn("QuestionService.reject")(function*(requestID: string) {
        const entry = pending.get(requestID)
        if (!entry) return yield* new QuestionNotFound({ requestID })
        yield* withdraw(entry)
      })

      // Shutting down: nobody is left to answer.
      yield* Effect.addFinalizer(() => Effect.forEach([...pending.values()], withdraw, { discard: true }))

      return {
        ask,
        reply,
        reject,
        list: () => Effect.sync(() => [...pending.values()].map((entry) => entry.request))
      }
    })
  )
}
