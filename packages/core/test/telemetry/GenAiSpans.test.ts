import type { Part } from "@agent/domain"
import { describe, expect, it } from "vitest"
import * as GenAiSpans from "../../src/session/GenAiSpans.js"

const subject = { sessionID: "ses_1", agent: "build", providerID: "openai", modelID: "gpt-x" }
const ids = { id: "prt_1", sessionID: "ses_1", messageID: "msg_1" } as const

const answer = [
  { ...ids, type: "reasoning", text: "thinking" },
  { ...ids, type: "text", text: "Here it is." },
  { ...ids, type: "text", text: "ignored", ignored: true },
  { ...ids, type: "tool", callID: "call_1", tool: "read", state: { status: "pending", input: { filePath: "a" }, raw: "" } },
  { ...ids, type: "step-start" }
] as unknown as ReadonlyArray<Part>

describe("GenAiSpans", () => {
  it("names the spans after the operation and its subject", () => {
    expect(GenAiSpans.runSpanName("build")).toBe("invoke_agent build")
    expect(GenAiSpans.chatSpanName("gpt-x")).toBe("chat gpt-x")
    expect(GenAiSpans.toolSpanName("bash")).toBe("execute_tool bash")
  })

  it("counts cached input in input_tokens and reasoning in output_tokens", () => {
    expect(GenAiSpans.usageAttributes({ input: 100, output: 20, reasoning: 5, cache: { read: 300, write: 50 } })).toEqual({
      "gen_ai.usage.input_tokens": 450,
      "gen_ai.usage.output_tokens": 25,
      "gen_ai.usage.cache_read.input_tokens": 300,
      "gen_ai.usage.cache_creation.input_tokens": 50
    })
  })

  it.each([false, true])("carries content only with log_content (%s)", (logContent) => {
    const request = { system: ["You are an agent."], messages: [{ role: "user" as const, content: "hello" }], temperature: 0.2 }
    const chat = GenAiSpans.chatAttributes(subject, request, logContent)
    expect(chat).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.conversation.id": "ses_1",
      "gen_ai.agent.name": "build",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "gpt-x",
      "gen_ai.request.temperature": 0.2
    })
    const finish = { finishReason: "stop", usage: { input: 1, output: 2, reasoning: 0, cache: { read: 0, write: 0 } }, cost: 0.5, responseModel: "gpt-x-1" }
    const result = GenAiSpans.chatResultAttributes(finish, answer, logContent)
    expect(result).toMatchObject({ "gen_ai.response.model": "gpt-x-1", "gen_ai.response.finish_reasons": ["stop"], "agent.usage.cost": 0.5 })
    const tool = GenAiSpans.toolAttributes({ sessionID: "ses_1", agent: "build", tool: "read", callID: "call_1", input: { filePath: "a" } }, logContent)
    expect(tool).toMatchObject({ "gen_ai.tool.name": "read", "gen_ai.tool.call.id": "call_1", "gen_ai.operation.name": "execute_tool" })
    const content = {
      ...chat,
      ...result,
      ...tool,
      ...GenAiSpans.toolResultAttributes("file text", logContent),
      ...GenAiSpans.runAttributes(subject, answer, logContent)
    }
    const keys = ["gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"]
    for (const key of keys) expect(key in content, key).toBe(logContent)
    if (!logContent) return
    expect(JSON.parse(chat["gen_ai.system_instructions"] as string)).toEqual([{ type: "text", content: "You are an agent." }])
    expect(JSON.parse(chat["gen_ai.input.messages"] as string)).toEqual([{ role: "user", parts: [{ type: "text", content: "hello" }] }])
    expect(JSON.parse(result["gen_ai.output.messages"] as string)).toEqual([{
      role: "assistant",
      parts: [
        { type: "reasoning", content: "thinking" },
        { type: "text", content: "Here it is." },
        { type: "tool_call", id: "call_1", name: "read", arguments: { filePath: "a" } }
      ],
      finish_reason: "stop"
    }])
    expect(JSON.parse(tool["gen_ai.tool.call.arguments"] as string)).toEqual({ filePath: "a" })
  })

  it("converts the request's tool calls and results to the conventions' parts", () => {
    expect(GenAiSpans.inputMessages([
      { role: "assistant", content: [{ type: "tool-call", toolCallId: "c1", toolName: "bash", input: { command: "ls" } }] },
      { role: "tool", content: [{ type: "tool-result", toolCallId: "c1", toolName: "bash", output: { type: "text", value: "a.txt" } }] }
    ])).toEqual([
      { role: "assistant", parts: [{ type: "tool_call", id: "c1", name: "bash", arguments: { command: "ls" } }] },
      { role: "tool", parts: [{ type: "tool_call_response", id: "c1", response: { type: "text", value: "a.txt" } }] }
    ])
  })

  it("names the error a run ended with", () => {
    expect(GenAiSpans.runResultAttributes({ reason: "error", steps: 2, cost: 0, answer: undefined, error: "APIError" }, false)).toEqual({
      "agent.run.stop_reason": "error",
      "error.type": "APIError",
      "agent.run.steps": 2,
      "agent.usage.cost": 0
    })
  })
})
