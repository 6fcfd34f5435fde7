export { DISMISSED_MESSAGE, QuestionService } from "./QuestionService.js"
