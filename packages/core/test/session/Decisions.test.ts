import type { AssistantMessage, SessionID } from "@agent/domain"
import { TestData } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import type { LiveMessage } from "../../src/llm/MessageConversion.js"
import * as Decisions from "../../src/session/Decisions.js"

const sessionID = "ses_decisions" as SessionID

const user = (text = "hi"): LiveMessage => {
  const info = TestData.userMessage(sessionID)
  return { info, parts: [TestData.textPart(info, text)] }
}
const reply = (parent: LiveMessage, overrides: Partial<AssistantMessage> = {}): LiveMessage => ({
  info: TestData.assistantMessage(sessionID, parent.info.id, overrides),
  parts: []
})

describe("isFinished / isDone", () => {
  const question = user()
  const cases: Array<[string, ReadonlyArray<LiveMessage>, boolean]> = [
    ["empty history", [], false],
    ["only a question", [question], false],
    ["an answer that stopped", [question, reply(question, { finish: "stop" })], true],
    ["an answer that asked for tools", [question, reply(question, { finish: "tool-calls" })], false],
    ["an answer with an unknown finish", [question, reply(question, { finish: "unknown" })], false],
    ["an answer still streaming", [question, reply(question)], false],
    ["a finished answer followed by a new question", [question, reply(question, { finish: "stop" }), user("more")], false]
  ]
  for (const [name, history, done] of cases) {
    it(name, () => expect(Decisions.isDone(history)).toBe(done))
  }
})

describe("latestUser", () => {
  it("is the newest user message, or none", () => {
    const first = user("a")
    const second = user("b")
    expect(Decisions.latestUser([])).toBeUndefined()
    expect(Decisions.latestUser([first, reply(first), second, reply(second)])).toBe(second)
  })
})

describe("lastFinishedAfterSummary", () => {
  const question = user()
  const stopped = reply(question, { finish: "stop" })
  const tools = reply(question, { finish: "tool-calls" })
  const streaming = reply(question)
  const summary = reply(question, { finish: "stop", summary: true })
  const cases: Array<[string, ReadonlyArray<LiveMessage>, LiveMessage | undefined]> = [
    ["no step yet", [question], undefined],
    ["a finished step", [question, stopped], stopped],
    ["a tool-calls step counts", [question, tools, streaming], tools],
    ["nothing after the latest summary", [question, stopped, summary], undefined]
  ]
  for (const [name, history, expected] of cases) {
    it(name, () => expect(Decisions.lastFinishedAfterSummary(history)).toBe(expected))
  }
})

describe("addedSince", () => {
  it("counts tool results of the step and text of newer messages, 4 characters a token", () => {
    const question = user()
    const step = reply(question, { finish: "tool-calls" })
    const tool = TestData.toolPart(step.info, "completed", "read")
    step.parts.push({ ...tool, state: { ...tool.state, output: "x".repeat(400) } } as typeof tool)
    step.parts.push(TestData.textPart(step.info, "y".repeat(4000)))
    const later = user("z".repeat(40))
    expect(Decisions.addedSince([question, step], step)).toBe(100)
    expect(Decisions.addedSince([question, step, later], step)).toBe(110)
  })
})

describe("pendingSubtask", () => {
  const withSubtasks = (): LiveMessage => {
    const message = user("run them")
    const base = { sessionID, messageID: message.info.id, prompt: "p", description: "d", agent: "explore" }
    message.parts.push({ ...base, id: TestData.partID(), type: "subtask" }, { ...base, id: TestData.partID(), type: "subtask" })
    return message
  }
  it("none without subtask parts", () => {
    const question = user()
    expect(Decisions.pendingSubtask([question], question)).toBeUndefined()
  })
  it("the first subtask no later task call handled, in order", () => {
    const question = withSubtasks()
    const [first, second] = question.parts.filter((part) => part.type === "subtask")
    expect(Decisions.pendingSubtask([question], question)).toBe(first)
    const handled = reply(question, { finish: "tool-calls" })
    handled.parts.push({ ...TestData.toolPart(handled.info, "completed", "task"), metadata: { subtask: first!.id } })
    expect(Decisions.pendingSubtask([question, handled], question)).toBe(second)
    const both = reply(question, { finish: "tool-calls" })
    both.parts.push({ ...TestData.toolPart(both.info, "completed", "task"), metadata: { subtask: second!.id } })
    expect(Decisions.pendingSubtask([question, handled, both], question)).toBeUndefined()
  })
})

describe("stepLimit", () => {
  const cases: Array<[number | undefined, number | undefined, number | undefined]> = [
    [undefined, undefined, undefined],
    [10, undefined, 10],
    [undefined, 3, 3],
    [10, 3, 3],
    [2, 5, 2]
  ]
  for (const [agent, max, expected] of cases) {
    it(`agent ${agent}, prompt ${max} -> ${expected}`, () => expect(Decisions.stepLimit(agent, max)).toBe(expected))
  }
})

describe("afterStep", () => {
  const usage = { cost: 0.5, tokens: 1000, steps: 3 }
  const cases: Array<[string, Parameters<typeof Decisions.afterStep>[0], string | undefined]> = [
    ["no limits", { limits: undefined, usage, step: 3, stepLimit: undefined, done: false }, undefined],
    ["under the token budget", { limits: { tokens: 2000 }, usage, step: 3, stepLimit: undefined, done: false }, undefined],
    ["at the token budget", { limits: { tokens: 1000 }, usage, step: 3, stepLimit: undefined, done: false }, "budget"],
    ["over the cost budget", { limits: { cost: 0.25 }, usage, step: 3, stepLimit: undefined, done: false }, "budget"],
    ["at the step limit", { limits: undefined, usage, step: 3, stepLimit: 3, done: false }, "steps"],
    ["at the step limit but done", { limits: undefined, usage, step: 3, stepLimit: 3, done: true }, undefined],
    ["under the step limit", { limits: undefined, usage, step: 2, stepLimit: 3, done: false }, undefined]
  ]
  for (const [name, input, reason] of cases) {
    it(name, () => {
      const ending = Decisions.afterStep(input)
      expect(ending?.reason).toBe(reason)
      if (reason) expect(ending?.error?.name).toBe("RunLimitError")
    })
  }
  it("says which budget and by how much", () => {
    const ending = Decisions.afterStep({ limits: { cost: 0.25 }, usage, step: 1, stepLimit: undefined, done: false })
    expect(ending?.error?.data.message).toBe("The run cost $0.5000, over its budget of $0.25.")
  })
})

describe("timeLimit", () => {
  const base = { now: 100_000, started: 0, lastActivity: 95_000, waitingOnUser: false }
  const cases: Array<[string, Parameters<typeof Decisions.timeLimit>[0], string | undefined]> = [
    ["no limits", { ...base, limits: undefined }, undefined],
    ["within the duration", { ...base, limits: { duration: 200 } }, undefined],
    ["past the duration", { ...base, limits: { duration: 100 } }, "duration"],
    ["a stall", { ...base, limits: { stall: 5 } }, "stall"],
    ["no stall yet", { ...base, limits: { stall: 6 } }, undefined],
    ["waiting on the user is no stall", { ...base, waitingOnUser: true, limits: { stall: 5 } }, undefined]
  ]
  for (const [name, input, reason] of cases) {
    it(name, () => expect(Decisions.timeLimit(input)?.reason).toBe(reason))
  }
})

describe("compactionTrigger", () => {
  const cases: Array<[boolean, boolean, boolean, "compact" | "stop" | undefined]> = [
    [true, false, false, undefined],
    [true, true, false, "compact"],
    [true, true, true, "stop"],
    [false, true, false, undefined],
    [false, true, true, undefined]
  ]
  for (const [auto, overflow, compactedWithoutStep, expected] of cases) {
    it(`auto ${auto}, overflow ${overflow}, just compacted ${compactedWithoutStep} -> ${expected}`, () =>
      expect(Decisions.compactionTrigger({ auto, overflow, compactedWithoutStep })).toBe(expected))
  }
})

describe("doom loop", () => {
  const question = user()
  const step = reply(question, { finish: "tool-calls" })
  const call = (input: Record<string, unknown>) => TestData.toolPart(step.info, "completed", "bash", input)
  it("previousToolCalls stops at the user message and keeps the newest, oldest first", () => {
    const older = reply(question, { finish: "tool-calls" })
    const a = TestData.toolPart(older.info, "completed", "read")
    older.parts.push(a)
    const b = call({ command: "ls" })
    const c = call({ command: "pwd" })
    step.parts.splice(0, step.parts.length, b, c)
    expect(Decisions.previousToolCalls([user(), older, step], 2)).toEqual([b, c])
    expect(Decisions.previousToolCalls([user(), older, step], 5)).toEqual([a, b, c])
    expect(Decisions.previousToolCalls([older, user(), step], 5)).toEqual([b, c])
  })
  const cases: Array<[string, Array<ReturnType<typeof call>>, boolean]> = [
    ["too few calls", [call({ command: "ls" })], false],
    ["two identical calls before", [call({ command: "ls" }), call({ command: "ls" })], true],
    ["one differs", [call({ command: "ls" }), call({ command: "pwd" })], false]
  ]
  for (const [name, recent, expected] of cases) {
    it(name, () => expect(Decisions.isDoomLoop(recent, "bash", { command: "ls" })).toBe(expected))
  }
  it("another tool with the same input is no loop", () =>
    expect(Decisions.isDoomLoop([call({ command: "ls" }), call({ command: "ls" })], "read", { command: "ls" })).toBe(false))
})

describe("retryDelay", () => {
  const cases: Array<[number | undefined, number, number | undefined, number]> = [
    [undefined, 1, undefined, 2000],
    [undefined, 2, undefined, 4000],
    [undefined, 10, undefined, 30_000],
    [undefined, 2, 100, 200],
    [1234, 5, undefined, 1234],
    [Number.MAX_SAFE_INTEGER, 1, undefined, 2_147_483_647]
  ]
  for (const [retryAfterMs, attempt, base, expected] of cases) {
    it(`retry-after ${retryAfterMs}, attempt ${attempt}, base ${base} -> ${expected}`, () =>
      expect(Decisions.retryDelay({ retryAfterMs }, attempt, base)).toBe(expected))
  }
})

describe("titles", () => {
  const cases: Array<[string, string | undefined]> = [
    ["Fix the parser", "Fix the parser"],
    ["<think>hmm</think>\n\nTitle: \"Fix the parser.\"", "Fix the parser"],
    ["   \n", undefined],
    ["x".repeat(150), `${"x".repeat(99)}…`]
  ]
  for (const [answer, title] of cases) {
    it(JSON.stringify(answer.slice(0, 30)), () => expect(Decisions.cleanTitle(answer)).toBe(title))
  }
  it("needsTitle: only a top-level session with the placeholder title", () => {
    expect(Decisions.needsTitle({ title: "New session - 2026" })).toBe(true)
    expect(Decisions.needsTitle({ title: "New session - 2026", parentID: "ses_p" })).toBe(false)
    expect(Decisions.needsTitle({ title: "Fix it" })).toBe(false)
  })
})

describe("subagentResult", () => {
  it("the child's non-synthetic text, tagged with its id and state", () => {
    const question = user()
    const answer = reply(question, { finish: "stop" })
    answer.parts.push(TestData.textPart(answer.info, "found it"), { ...TestData.textPart(answer.info, "hidden"), synthetic: true })
    expect(Decisions.subagentResult("ses_child", { reason: "completed", message: answer })).toBe(
      `<task id="ses_child" state="completed">\n<task_result>\nfound it\n</task_result>\n</task>`
    )
  })
})
