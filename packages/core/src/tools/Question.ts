import { RejectedError } from "@agent/domain"
import { Effect, Schema } from "effect"
import * as Prompts from "../runtime/Prompts.js"
import { DISMISSED_MESSAGE, QuestionService } from "../question/QuestionService.js"
import * as Tool from "../tool/Tool.js"

const TOOL = "question"

const Option = Schema.Struct({
  label: Schema.String.annotations({ description: "The choice as the user sees it (1-5 words)" }),
  description: Schema.String.annotations({ description: "What picking this choice means" })
})

const Question = Schema.Struct({
  question: Schema.String.annotations({ description: "The full question" }),
  header: Schema.String.pipe(Schema.maxLength(30)).annotations({
    description: "A very short label for the question (at most 30 characters)",
    message: () => ({ message: "expected a label of at most 30 characters", override: true })
  }),
  options: Schema.Array(Option).annotations({ description: "The choices offered" }),
  multiple: Schema.optional(Schema.Boolean.annotations({ description: "Allow picking more than one choice" })),
  custom: Schema.optional(
    Schema.Boolean.annotations({ description: "Allow the user to type an answer of their own (default true)" })
  )
})

const Parameters = Schema.Struct({
  questions: Schema.Array(Question).pipe(Schema.minItems(1)).annotations({
    description: "The questions to ask",
    // Without `override`, a bad question inside the list keeps its own message.
    message: () => "expected at least one question"
  })
})

/**
 * Dismissed questions end the run the way a rejected permission does (the loop stops on a
 * `RejectedError`), but say what happened.
 */
export class QuestionsDismissed extends RejectedError {
  override get message() {
    return DISMISSED_MESSAGE
  }
}

/** How the model reads the answers. */
export const formatAnswers = (
  questions: ReadonlyArray<{ readonly question: string }>,
  answers: ReadonlyArray<ReadonlyArray<string>>
): string => {
  const pairs = questions.map((question, index) => {
    const answer = answers[index] ?? []
    return `"${question.question}"="${answer.length > 0 ? answer.join(", ") : "Unanswered"}"`
  })
  return `User has answered your questions: ${pairs.join(", ")}. Continue with these answers in mind.`
}

/**
 * `question`: asks the user and waits for the answers. Allowed or not by the `question`
 * permission (the registry hides the tool when it is denied), so it asks no permission
 * itself. Needs the `QuestionService`.
 */
export const make: Effect.Effect<Tool.AnyTool, never, QuestionService> = Effect.gen(function*() {
  const questions = yield* QuestionService
  return Tool.make({
    id: TOOL,
    fileEffects: "none",
    description: Prompts.read("tool/question.txt"),
    parameters: Parameters,
    execute: (params, context) =>
      Effect.gen(function*() {
        const answers = yield* questions
          .ask({
            sessionID: context.sessionID,
            questions: params.questions.map((question) => ({ ...question, options: [...question.options] })),
            tool: { messageID: context.messageID, callID: context.callID }
          })
          .pipe(
            Effect.catchTag("QuestionRejectedError", () => Effect.fail(new QuestionsDismissed({ permission: TOOL })))
          )
        const count = params.questions.length
        return {
          title: `Asked ${count} question${count === 1 ? "" : "s"}`,
          output: formatAnswers(params.questions, answers),
          metadata: { answers }
        }
      })
  })
})
