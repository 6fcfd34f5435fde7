// question/: Questions the model asks the user (the question tool) and their answers.
// What other subsystems use of it; they import it from here, never from its files.

export { DISMISSED_MESSAGE, QuestionService } from "./QuestionService.js"

/** The errors this subsystem's services fail with. */
export type { QuestionError } from "./QuestionService.js"
