// question/: Questions the model asks the user (the question tool) and their answers.
// The names other subsystems use of it, and its errors. Code imports the file that holds a name (see
// docs/architecture.md: barrels would put every member into each CLI chunk that imports one).

export { DISMISSED_MESSAGE, QuestionService } from "./QuestionService.js"

/** The errors this subsystem's services fail with. */
export type { QuestionError } from "./QuestionService.js"
