import { QuestionService } from "@agent/core"
import { AgentApi } from "@agent/domain"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { notFound } from "./HandlerErrors.js"

export const QuestionHandlers = HttpApiBuilder.group(AgentApi, "question", (handlers) =>
  Effect.gen(function*() {
    const questions = yield* QuestionService
    return handlers
      .handle("list", () => questions.list())
      .handle("reply", ({ path, payload }) =>
        questions.reply(path.requestID, payload.answers).pipe(Effect.mapError(notFound), Effect.as(true)))
      .handle("reject", ({ path }) => questions.reject(path.requestID).pipe(Effect.mapError(notFound), Effect.as(true)))
  }))
