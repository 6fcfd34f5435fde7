// The run's decisions as plain functions over the history and the run's numbers: is the run done,
// which subtask is pending, the step limit, the limits and budgets, when to summarize, the retry delay.
// No effects here: each is covered by a table test (test/session/Decisions.test.ts).
import type { Agent, Part, ToolPart, UserMessage } from "@agent/domain"
import type { ProviderError } from "../llm/LLMService.js"
import type { LiveMessage } from "../llm/MessageConversion.js"
import { type Ending, errorOf, type RunOutcome, type RunUsage } from "./LoopTypes.js"

export const DEFAULT_RETRY_ATTEMPTS = 10
/** This many identical tool calls in a row ask the user whether the model is going in circles. */
export const DOOM_LOOP_THRESHOLD = 3
export const COMPACTION_NOT_ENOUGH =
  "The conversation no longer fits the model's context window, even right after summarizing it. Start a new session or use a model with a larger window."
const TITLE_MAX = 100

/** The retry delay OpenCode uses: what the provider asked for, else 2 s doubling, capped at 30 s. */
export const retryDelay = (error: Pick<ProviderError, "retryAfterMs">, attempt: number, base = 2000): number => {
  if (error.retryAfterMs !== undefined) return Math.min(error.retryAfterMs, 2_147_483_647)
  return Math.min(base * 2 ** (attempt - 1), 30_000)
}

/** An assistant message whose step ended and asked for no tools. */
export const isFinished = (message: LiveMessage) =>
  message.info.role === "assistant" &&
  message.info.finish !== undefined &&
  message.info.finish !== "tool-calls" &&
  message.info.finish !== "unknown"

/** The model's last reply answers the newest user message and asks for nothing more. */
export const isDone = (history: ReadonlyArray<LiveMessage>) => {
  const last = history.at(-1)
  return last !== undefined && last.info.role === "assistant" && isFinished(last)
}

export const latestUser = (history: ReadonlyArray<LiveMessage>) => {
  for (let index = history.length - 1; index >= 0; index--) {
    if (history[index]!.info.role === "user") return history[index] as LiveMessage & { info: UserMessage }
  }
  return undefined
}

/** The newest finished step after the latest summary (steps before it were already summarized). */
export const lastFinishedAfterSummary = (history: ReadonlyArray<LiveMessage>) => {
  for (let index = history.length - 1; index >= 0; index--) {
    const message = history[index]!
    if (message.info.role === "assistant" && message.info.summary) return undefined
    if (isFinished(message) || (message.info.role === "assistant" && message.info.finish === "tool-calls")) return message
  }
  return undefined
}

/** Tokens (4 characters each) the history gained after `step` was sent: its tool results and newer messages' text. */
export const addedSince = (history: ReadonlyArray<LiveMessage>, step: LiveMessage) => {
  let chars = 0
  // From the newest message back to `step` (the history before it is not walked every step).
  for (let index = history.length - 1; index >= 0; index--) {
    const message = history[index]!
    for (const part of message.parts) {
      if (part.type === "tool" && part.state.status === "completed" && !part.state.time.compacted) chars += part.state.output.length
      else if (part.type === "tool" && part.state.status === "error") chars += part.state.error.length
      else if (message !== step && part.type === "text") chars += part.text.length
    }
    if (message === step) break
  }
  return Math.ceil(chars / 4)
}

export type SubtaskPart = Extract<Part, { type: "subtask" }>

/** Subtask parts of the newest user message that no later task call has handled yet. */
export const pendingSubtask = (history: ReadonlyArray<LiveMessage>, user: LiveMessage): SubtaskPart | undefined => {
  // Most prompts have no subtask: skip the scan of everything after it.
  if (!user.parts.some((part) => part.type === "subtask")) return undefined
  const index = history.indexOf(user)
  const handled = new Set(
    history.slice(index + 1).flatMap((message) =>
      message.parts.flatMap((part) => part.type === "tool" && typeof part.metadata?.subtask === "string" ? [part.metadata.subtask] : [])
    )
  )
  return user.parts.find((part): part is SubtaskPart => part.type === "subtask" && !handled.has(part.id))
}

/** The run's step limit: the agent's `steps`, lowered by the prompt's `maxSteps`. */
export const stepLimit = (agentSteps: number | undefined, maxSteps: number | undefined) =>
  maxSteps === undefined ? agentSteps : Math.min(agentSteps ?? Infinity, maxSteps)

/** How the run stops after a step that did not end it: its budgets, then its step limit. */
export const afterStep = (input: {
  readonly limits: Agent["limits"]
  readonly usage: RunUsage
  readonly step: number
  readonly stepLimit: number | undefined
  readonly done: boolean
}): Ending | undefined => {
  const { limits, usage } = input
  if (limits?.tokens && usage.tokens >= limits.tokens) {
    return { reason: "budget", error: errorOf("RunLimitError", `The run used ${usage.tokens} tokens, over its budget of ${limits.tokens}.`) }
  }
  if (limits?.cost && usage.cost >= limits.cost) {
    return { reason: "budget", error: errorOf("RunLimitError", `The run cost $${usage.cost.toFixed(4)}, over its budget of $${limits.cost}.`) }
  }
  if (input.stepLimit !== undefined && input.step >= input.stepLimit && !input.done) {
    return { reason: "steps", error: errorOf("RunLimitError", `The agent reached its limit of ${input.stepLimit} steps.`) }
  }
  return undefined
}

/** The run's time limits, checked every second: its whole duration, and how long nothing happened. */
export const timeLimit = (input: {
  readonly limits: Agent["limits"]
  readonly now: number
  readonly started: number
  readonly lastActivity: number
  /** A person is asked: the silence is theirs, not the run's. */
  readonly waitingOnUser: boolean
}): Ending | undefined => {
  const { limits, now } = input
  if (limits?.duration && now - input.started >= limits.duration * 1000) {
    return { reason: "duration", error: errorOf("RunLimitError", `The run reached its time limit of ${limits.duration} s.`) }
  }
  if (limits?.stall && !input.waitingOnUser && now - input.lastActivity >= limits.stall * 1000) {
    return { reason: "stall", error: errorOf("RunLimitError", `Nothing happened for ${limits.stall} s; the run was stopped.`) }
  }
  return undefined
}

/**
 * Whether the window is full and what to do: summarize, or stop when a summary just made
 * (with no real step since) was not enough. `overflow`: the last step filled the window, or the
 * provider refused the request as too long.
 */
export const compactionTrigger = (input: {
  readonly auto: boolean
  readonly overflow: boolean
  readonly compactedWithoutStep: boolean
}): "compact" | "stop" | undefined => {
  if (!input.auto || !input.overflow) return undefined
  return input.compactedWithoutStep ? "stop" : "compact"
}

/** The tool calls before this one in the current run, newest last, for doom-loop detection. */
export const previousToolCalls = (history: ReadonlyArray<LiveMessage>, count: number): Array<ToolPart> => {
  const calls: Array<ToolPart> = []
  for (let index = history.length - 1; index >= 0 && calls.length < count; index--) {
    const message = history[index]!
    if (message.info.role === "user") break
    for (let p = message.parts.length - 1; p >= 0 && calls.length < count; p--) {
      const part = message.parts[p]!
      if (part.type === "tool" && part.state.status !== "pending") calls.push(part)
    }
  }
  return calls.reverse()
}

/** This call and the ones right before it, all the same: the model is going in circles. */
export const isDoomLoop = (recent: ReadonlyArray<ToolPart>, tool: string, input: unknown) => {
  if (recent.length < DOOM_LOOP_THRESHOLD - 1) return false
  const encoded = JSON.stringify(input)
  return recent.every((call) => call.tool === tool && JSON.stringify(call.state.input) === encoded)
}

/** What the parent's task call returns: the subagent's answer, tagged with its session and how it ended. */
export const subagentResult = (childID: string, outcome: Pick<RunOutcome, "reason" | "message">) => {
  const texts = (outcome.message?.parts ?? []).flatMap((part) => (part.type === "text" && !part.synthetic ? [part.text] : []))
  return `<task id="${childID}" state="${outcome.reason}">\n<task_result>\n${texts.join("\n").trim()}\n</task_result>\n</task>`
}

/** A session whose title is still the placeholder gets one from the title model after its first step. */
export const needsTitle = (session: { readonly parentID?: unknown; readonly title: string }) =>
  !session.parentID && session.title.startsWith("New session - ")

/** First meaningful line of the title model's answer, without quotes or a "Title:" prefix. */
export const cleanTitle = (answer: string): string | undefined => {
  const line = answer
    .replace(/<think>[\s\S]*?<\/think>/g, "")
    .split("\n")
    .map((candidate) => candidate.trim())
    .find((candidate) => candidate.length > 0)
  if (!line) return undefined
  const cleaned = line.replace(/^title:\s*/i, "").replace(/^["'`*#\s]+|["'`*\s.]+$/g, "").trim()
  if (!cleaned) return undefined
  return cleaned.length > TITLE_MAX ? `${cleaned.slice(0, TITLE_MAX - 1)}…` : cleaned
}

/** The assistant message a failed step is recorded on keeps the step's first step-start only. */
export const partsKeptOnRetry = (parts: ReadonlyArray<Part>): Array<Part> =>
  parts.filter((part) => part.type === "step-start").slice(0, 1)

