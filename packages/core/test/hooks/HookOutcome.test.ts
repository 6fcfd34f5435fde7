import type { HookEventName } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import * as HookOutcome from "../../src/hooks/HookOutcome.js"
import type { RawResult } from "../../src/hooks/HookOutcome.js"

const exited = (code: number, stdout = "", stderr = ""): RawResult => ({ _tag: "Exited", code, stdout, stderr })
const json = (value: object, code = 0) => exited(code, JSON.stringify(value))
const pre = (decision: string, extra: object = {}) => json({ hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: decision, ...extra } })

describe("HookOutcome.interpret", () => {
  /** [what, event, result, the answer (its defined fields)] */
  const cases: ReadonlyArray<readonly [string, HookEventName, RawResult, HookOutcome.HookAnswer]> = [
    ["exit 0, no output", "PreToolUse", exited(0), { decision: "none" }],
    ["exit 2 on PreToolUse denies with stderr", "PreToolUse", exited(2, "", "no rm\n"), { decision: "deny", reason: "no rm" }],
    ["exit 2 blocks even when the JSON says allow", "PreToolUse", exited(2, JSON.stringify({ hookSpecificOutput: { permissionDecision: "allow" } }), "nope"), { decision: "deny", reason: "nope" }],
    ["exit 2 on PermissionRequest denies", "PermissionRequest", exited(2, "", "no"), { decision: "deny", reason: "no" }],
    ["exit 2 on Stop blocks (the agent goes on)", "Stop", exited(2, "", "tests fail"), { decision: "block", reason: "tests fail" }],
    ["exit 2 on PostToolUse blocks", "PostToolUse", exited(2, "", "lint"), { decision: "block", reason: "lint" }],
    ["exit 2 on UserPromptSubmit blocks", "UserPromptSubmit", exited(2, "", "secret"), { decision: "block", reason: "secret" }],
    ["exit 2 where nothing can be blocked is shown to the user", "SessionStart", exited(2, "", "oops"), { decision: "none", message: "oops" }],
    ["exit 2 on Notification too", "Notification", exited(2, "", "x"), { decision: "none", message: "x" }],
    ["exit 2 without stderr", "PreToolUse", exited(2), { decision: "deny", reason: "blocked by a hook" }],
    ["another code is a non-blocking error", "PreToolUse", exited(1, "", "crash"), { decision: "none", failure: "error", message: "crash" }],
    ["another code without stderr", "Stop", exited(127), { decision: "none", failure: "error", message: "exit code 127" }],
    ["a timeout fails open", "PreToolUse", { _tag: "TimedOut", seconds: 60 }, { decision: "none", failure: "timeout", message: "timed out after 60 s" }],
    ["a hook that cannot run", "PreToolUse", { _tag: "Failed", error: "no sh" }, { decision: "none", failure: "error", message: "no sh" }],
    ["JSON allow with a reason and new input", "PreToolUse", pre("allow", { permissionDecisionReason: "ok", updatedInput: { command: "ls" } }), { decision: "allow", reason: "ok", updatedInput: { command: "ls" } }],
    ["JSON deny", "PreToolUse", pre("deny", { permissionDecisionReason: "no" }), { decision: "deny", reason: "no" }],
    ["JSON ask", "PreToolUse", pre("ask"), { decision: "ask" }],
    ["the old approve spelling", "PreToolUse", json({ decision: "approve", reason: "fine" }), { decision: "allow", reason: "fine" }],
    ["the old block spelling", "PreToolUse", json({ decision: "block", reason: "bad" }), { decision: "deny", reason: "bad" }],
    ["PermissionRequest allow", "PermissionRequest", json({ hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow" } } }), { decision: "allow" }],
    ["PermissionRequest deny with a message", "PermissionRequest", json({ hookSpecificOutput: { decision: { behavior: "deny", message: "Fridays" } } }), { decision: "deny", reason: "Fridays" }],
    ["PermissionRequest ignores PreToolUse's field", "PermissionRequest", pre("allow"), { decision: "none" }],
    ["decision block on PostToolUse", "PostToolUse", json({ decision: "block", reason: "fix lint" }), { decision: "block", reason: "fix lint" }],
    ["decision block on Stop", "Stop", json({ decision: "block", reason: "go on" }), { decision: "block", reason: "go on" }],
    ["decision block where nothing can be blocked is ignored", "SessionEnd", json({ decision: "block", reason: "x" }), { decision: "none" }],
    ["additionalContext", "PostToolUse", json({ hookSpecificOutput: { additionalContext: "note this" } }), { decision: "none", context: "note this" }],
    ["continue false stops, with stopReason", "PreToolUse", json({ continue: false, stopReason: "enough" }), { decision: "none", stop: "enough" }],
    ["continue false without a reason", "Stop", json({ continue: false }), { decision: "none", stop: "" }],
    ["systemMessage is for the user", "PostToolUse", json({ systemMessage: "formatted 3 files" }), { decision: "none", message: "formatted 3 files" }],
    ["plain stdout is context for UserPromptSubmit", "UserPromptSubmit", exited(0, "ticket ABC-1\n"), { decision: "none", context: "ticket ABC-1" }],
    ["and for SessionStart", "SessionStart", exited(0, "branch main"), { decision: "none", context: "branch main" }],
    ["but not for PreToolUse", "PreToolUse", exited(0, "checked"), { decision: "none" }],
    // stdout is JSON only when it starts with `{`.
    ["JSON after text is text", "UserPromptSubmit", exited(0, 'note {"decision":"block"}'), { decision: "none", context: 'note {"decision":"block"}' }],
    ["leading blanks before the JSON", "Stop", exited(0, '\n  {"decision":"block","reason":"r"}'), { decision: "block", reason: "r" }],
    ["broken JSON on UserPromptSubmit is text", "UserPromptSubmit", exited(0, "{not json"), { decision: "none", context: "{not json" }],
    ["broken JSON elsewhere is an error", "PreToolUse", exited(0, "{not json"), { decision: "none", failure: "error", message: "the hook printed JSON that is not a hook answer" }],
    ["an HTTP 2xx body is read as stdout", "PreToolUse", { _tag: "Http", status: 200, body: JSON.stringify({ hookSpecificOutput: { permissionDecision: "deny" } }) }, { decision: "deny" }],
    ["an HTTP error status is a non-blocking error", "PreToolUse", { _tag: "Http", status: 503, body: "down" }, { decision: "none", failure: "error", message: "HTTP 503: down" }]
  ]
  for (const [what, event, raw, answer] of cases) {
    it(what, () => expect(HookOutcome.interpret(event, raw)).toEqual(answer))
  }
})

describe("HookOutcome.combine", () => {
  it("deny wins over ask, ask over allow; the deciding hooks' reasons", () => {
    const verdict = HookOutcome.combine([
      { decision: "allow", reason: "a" },
      { decision: "deny", reason: "d" },
      { decision: "ask", reason: "q" }
    ])
    expect(verdict).toMatchObject({ decision: "deny", reasons: ["d"] })
    expect(verdict.updatedInput).toBeUndefined()
    expect(HookOutcome.combine([{ decision: "allow" }, { decision: "ask", reason: "q" }])).toMatchObject({ decision: "ask", reasons: ["q"] })
  })
  it("collects context and messages from every hook, and any stop", () => {
    const verdict = HookOutcome.combine([
      { decision: "none", context: "one", message: "m1" },
      { decision: "allow", context: "two", updatedInput: { a: 1 } },
      { decision: "none", stop: "halt" }
    ])
    expect(verdict).toEqual({ decision: "allow", reasons: [], updatedInput: { a: 1 }, context: ["one", "two"], stop: "halt", messages: ["m1"] })
  })
  it("no hooks: no verdict", () => expect(HookOutcome.combine([])).toEqual(HookOutcome.NO_VERDICT))
})

describe("HookOutcome.obeyStopBlock", () => {
  const cases: ReadonlyArray<readonly [number, boolean]> = [[0, true], [1, true], [6, true], [7, false], [8, false]]
  for (const [before, obeyed] of cases) {
    it(`after ${before} blocks in a row: ${obeyed ? "obeyed" : "overridden"}`, () => expect(HookOutcome.obeyStopBlock(before)).toBe(obeyed))
  }
})

describe("HookOutcome.decisionLabel", () => {
  const cases: ReadonlyArray<readonly [HookOutcome.HookAnswer, string]> = [
    [{ decision: "deny" }, "deny"],
    [{ decision: "none", failure: "timeout" }, "timeout"],
    [{ decision: "none", context: "x" }, "context"],
    [{ decision: "none", stop: "" }, "stop"],
    [{ decision: "none" }, "none"]
  ]
  for (const [answer, label] of cases) it(label, () => expect(HookOutcome.decisionLabel(answer)).toBe(label))
})
