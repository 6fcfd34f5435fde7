import { describe, expect, it } from "vitest"
import { measurementsOf } from "../../src/runtime/GenAiMeasurements.js"

const chat = {
  "gen_ai.operation.name": "chat",
  "gen_ai.provider.name": "anthropic",
  "gen_ai.request.model": "claude-x",
  "gen_ai.response.model": "claude-x-2026",
  "gen_ai.conversation.id": "ses_1",
  "gen_ai.input.messages": "[secret]"
}
const model = {
  "gen_ai.operation.name": "chat",
  "gen_ai.provider.name": "anthropic",
  "gen_ai.request.model": "claude-x",
  "gen_ai.response.model": "claude-x-2026"
}

describe("measurementsOf", () => {
  it.each([
    [
      "a model call: its duration, its input and output tokens, its cost",
      { name: "chat claude-x", durationSeconds: 1.5, attributes: { ...chat, "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 30, "agent.usage.cost": 0.01 } },
      [
        { instrument: "gen_ai.client.operation.duration", value: 1.5, attributes: model },
        { instrument: "gen_ai.client.token.usage", value: 120, attributes: { ...model, "gen_ai.token.type": "input" } },
        { instrument: "gen_ai.client.token.usage", value: 30, attributes: { ...model, "gen_ai.token.type": "output" } },
        { instrument: "agent.usage.cost", value: 0.01, attributes: model }
      ]
    ],
    [
      "a failed model call: its duration with error.type, no usage, no cost",
      { name: "chat claude-x", durationSeconds: 0.2, attributes: { ...chat, "error.type": "ProviderError", "agent.usage.cost": 0 } },
      [{ instrument: "gen_ai.client.operation.duration", value: 0.2, attributes: { ...model, "error.type": "ProviderError" } }]
    ],
    [
      "a run: its duration by agent",
      {
        name: "invoke_agent build",
        durationSeconds: 9,
        attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "build", "gen_ai.provider.name": "p", "gen_ai.request.model": "m", "gen_ai.conversation.id": "ses_1" }
      },
      [{
        instrument: "gen_ai.client.operation.duration",
        value: 9,
        attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "build", "gen_ai.provider.name": "p", "gen_ai.request.model": "m" }
      }]
    ],
    [
      "a tool call: its duration by tool, without the call id",
      { name: "execute_tool bash", durationSeconds: 0.3, attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "bash", "gen_ai.tool.call.id": "call_1" } },
      [{ instrument: "gen_ai.execute_tool.duration", value: 0.3, attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "bash" } }]
    ],
    ["any other span: nothing", { name: "SessionStore.create", durationSeconds: 0.001, attributes: { "session.id": "ses_1" } }, []]
  ])("%s", (_, span, expected) => {
    expect(measurementsOf(span)).toEqual(expected)
  })
})
