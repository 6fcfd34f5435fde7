import { QuestionService } from "@agent/core"
import { AgentApi } from "@agent/domain"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect, Option } from "effect"
import { SessionRouting } from "../cluster/SessionRouting.js"
import { notFound } from "./HandlerErrors.js"

export const QuestionHandlers = HttpApiBuilder.group(AgentApi, "question", (handlers) =>
  Effect.gen(function*() {
    const questions = yield* QuestionService
    // On a replica the questions of every replica are listed, and an answer goes to the question's session.
    const routing = Option.getOrUndefined(yield* Effect.serviceOption(SessionRouting))
    const reply = routing ? routing.replyQuestion : questions.reply
    const reject = routing ? routing.rejectQuestion : questions.reject
    return handlers
      .handle("list", () => routing ? routing.questions() : questions.list())
      .handle("reply", ({ path, payload }) => reply(path.requestID, payload.answers).pipe(Effect.mapError(notFound), Effect.as(true)))
      .handle("reject", ({ path }) => reject(path.requestID).pipe(Effect.mapError(notFound), Effect.as(true)))
  }))
