import { Divergence } from "@agent/core"
import type { LanguageModelV3Prompt } from "@ai-sdk/provider"
import { describe, expect, it } from "@effect/vitest"

const user = (text: string): LanguageModelV3Prompt[number] => ({ role: "user", content: [{ type: "text", text }] })
const call = (toolName: string, input: object): LanguageModelV3Prompt[number] => ({
  role: "assistant",
  content: [{ type: "tool-call", toolCallId: "c1", toolName, input }]
})
const result = (toolName: string, type: "text" | "error-text" | "execution-denied", value = "x"): LanguageModelV3Prompt[number] => ({
  role: "tool",
  content: [{ type: "tool-result", toolCallId: "c1", toolName, output: type === "execution-denied" ? { type } : { type, value } }]
})

const base: LanguageModelV3Prompt = [{ role: "system", content: "today is Monday" }, user("fix it"), call("read", { filePath: "a.txt" }), result("read", "text")]

describe("Divergence.divergence", () => {
  const cases: ReadonlyArray<{ name: string; now: LanguageModelV3Prompt; tools?: Array<string>; expected: string | undefined }> = [
    { name: "the same course", now: base, expected: undefined },
    {
      name: "another system prompt and other tool output text",
      now: [{ role: "system", content: "today is Tuesday" }, user("fix it"), call("read", { filePath: "a.txt" }), result("read", "text", "other bytes")],
      expected: undefined
    },
    {
      name: "another user message",
      now: [base[0]!, user("break it"), base[2]!, base[3]!],
      expected: 'the recording has the user message "fix it" where this run has the user message "break it"'
    },
    {
      name: "an error where an output was recorded",
      now: [...base.slice(0, 3), result("read", "error-text")],
      expected: "the recording has an output from read where this run has an error from read"
    },
    {
      name: "a denial",
      now: [...base.slice(0, 3), result("read", "execution-denied")],
      expected: "the recording has an output from read where this run has a denial from read"
    },
    {
      name: "a conversation that goes further",
      now: [...base, user("and more")],
      expected: 'the conversation goes on with the user message "and more", which the recording does not have'
    },
    {
      name: "a conversation that stops short",
      now: base.slice(0, 2),
      expected: "the recording goes on with a call of read {\"filePath\":\"a.txt\"}, which this run does not have"
    },
    { name: "other tools", now: base, tools: ["read", "bash"], expected: "the tools offered differ: this run also offers bash" }
  ]
  for (const { name, now, tools, expected } of cases) {
    it(name, () => {
      expect(Divergence.divergence({ prompt: base, tools: ["read"] }, { prompt: now, tools: tools ?? ["read"] })).toBe(expected)
    })
  }

  it("the project directory is compared as <project>, so a recording replays in another checkout", () => {
    const at = (dir: string): LanguageModelV3Prompt => [user(`look at ${dir}/a.txt`), call("read", { filePath: `${dir}/a.txt` })]
    expect(Divergence.divergence({ prompt: at("/home/a/proj"), directory: "/home/a/proj" }, { prompt: at("/tmp/x"), directory: "/tmp/x" })).toBeUndefined()
    expect(Divergence.divergence({ prompt: at("/home/a/proj") }, { prompt: at("/tmp/x") })).toMatch(/^the recording has the user message/)
  })
})
