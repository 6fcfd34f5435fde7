// Request building: the run's history as the model's messages, with this step's reminders.
// A plain function over the history and a per-run conversion cache (`RequestCache`, a value the
// run holds): no module-level state.
import type { ModelMessage } from "ai"
import * as Prompts from "../runtime/Prompts.js"
import { type LiveMessage, ModelMessageCache } from "../llm/MessageConversion.js"
import { isFinished } from "./Decisions.js"

/**
 * The history converted for the model up to its first unfinished message, in request order, as
 * the previous step left it. A step converts only what follows (walking a long session message
 * by message on every step made its steps slower the longer it ran); the kept part is checked
 * first: same messages, same summary position, and each user message wrapped (or not) as before.
 */
interface Converted {
  readonly summaryIndex: number
  readonly messages: Array<LiveMessage>
  readonly out: Array<ModelMessage>
  readonly users: Array<{ readonly index: number; readonly assistantBefore: boolean; readonly wrapped: boolean }>
  planBefore: boolean
  assistantBefore: boolean
}

/** What a run keeps between its requests: converted messages, and the converted prefix of the history. */
export interface RequestCache {
  readonly messages: ModelMessageCache
  converted: Converted | undefined
}

export const makeRequestCache = (): RequestCache => ({ messages: new ModelMessageCache(), converted: undefined })

export interface RequestInput {
  readonly history: ReadonlyArray<LiveMessage>
  readonly agent: string
  readonly step: number
  readonly isLastStep: boolean
}

const lastFinishedIndex = (history: ReadonlyArray<LiveMessage>) => {
  for (let index = history.length - 1; index >= 0; index--) {
    if (isFinished(history[index]!)) return index
  }
  return -1
}

/** After a compaction the model sees the summary first, then the turns kept verbatim. */
const summaryIndexOf = (history: ReadonlyArray<LiveMessage>) => {
  for (let index = history.length - 1; index >= 1; index--) {
    const message = history[index]!
    if (message.info.role === "assistant" && message.info.summary && message.info.time.completed !== undefined) return index
  }
  return -1
}

/** History index of request position `position`: [question, summary, older turns, newer turns], or simply history order. */
const orderFor = (summaryIndex: number) => (position: number): number =>
  summaryIndex < 0
    ? position
    : position === 0
    ? summaryIndex - 1
    : position === 1
    ? summaryIndex
    : position <= summaryIndex
    ? position - 2
    : position

/** The plan agent's reminder, or the build agent's after a plan: added to the last user message. */
const withReminder = (out: Array<ModelMessage>, agent: string, planBefore: boolean) => {
  const reminder = agent === "plan"
    ? Prompts.read("session/plan.txt")
    : agent === "build" && planBefore
    ? Prompts.read("session/build-switch.txt")
    : undefined
  if (!reminder) return
  const lastUserIndex = out.findLastIndex((message) => message.role === "user")
  if (lastUserIndex < 0) return
  const target = out[lastUserIndex] as Extract<ModelMessage, { role: "user" }>
  const content = typeof target.content === "string" ? [{ type: "text" as const, text: target.content }] : target.content
  out[lastUserIndex] = { ...target, content: [...content, { type: "text", text: reminder }] }
}

/** History as the model sees it, with this step's reminders. Updates `cache` for the next step. */
export const requestMessages = (cache: RequestCache, input: RequestInput): Array<ModelMessage> => {
  const { history } = input
  const finishedIndex = lastFinishedIndex(history)
  const summaryIndex = summaryIndexOf(history)
  const at = orderFor(summaryIndex)
  const wraps = (index: number, assistantBefore: boolean) => input.step > 1 && index > finishedIndex && assistantBefore
  const kept = cache.converted
  const keep = kept !== undefined && kept.summaryIndex === summaryIndex && kept.messages.length <= history.length &&
    kept.users.every((user) => wraps(user.index, user.assistantBefore) === user.wrapped) &&
    kept.messages.every((message, position) => history[at(position)] === message)
  const prefix: Converted = keep
    ? kept
    : { summaryIndex, messages: [], out: [], users: [], planBefore: false, assistantBefore: false }
  cache.converted = prefix
  // The kept part grows up to the first unfinished message (where it stopped last time may be finished now).
  let extending = true
  const out: Array<ModelMessage> = prefix.out.slice()
  let planBefore = prefix.planBefore
  let assistantBefore = prefix.assistantBefore
  for (let position = prefix.messages.length; position < history.length; position++) {
    const index = at(position)
    const message = history[index]!
    const wrap = message.info.role === "user" && wraps(index, assistantBefore)
    const before = assistantBefore
    if (message.info.role === "assistant") {
      assistantBefore = true
      if (message.info.agent === "plan") planBefore = true
    }
    const messages = cache.messages.convert(message, { wrapUserText: wrap })
    for (const each of messages) out.push(each)
    // A finished message converts the same way on later steps: it joins the kept part.
    if (extending && (message.info.role === "user" || message.info.time.completed !== undefined)) {
      prefix.messages.push(message)
      for (const each of messages) prefix.out.push(each)
      if (message.info.role === "user") prefix.users.push({ index, assistantBefore: before, wrapped: wrap })
      prefix.planBefore = planBefore
      prefix.assistantBefore = assistantBefore
    } else {
      extending = false
    }
  }
  withReminder(out, input.agent, planBefore)
  if (input.isLastStep) out.push({ role: "assistant", content: Prompts.read("session/max-steps.txt") })
  return out
}
