// The attributes of the loop's spans, after the OpenTelemetry GenAI conventions: `invoke_agent
// <agent>` per run, `chat <model>` per model call, `execute_tool <tool>` per tool call. Pure
// functions, table-tested; the loop calls them only when spans are recorded (Tracing.tracedWith).
// Prompt and output text are attributes only under `telemetry.log_content: true`.
import type { Part, TokenUsage } from "@agent/domain"
import type { ModelMessage } from "ai"

/** Who and what a span is about. */
export interface SpanSubject {
  readonly sessionID: string
  readonly agent: string
  readonly providerID: string
  readonly modelID: string
}

const subjectAttributes = (subject: SpanSubject) => ({
  "gen_ai.conversation.id": subject.sessionID,
  "gen_ai.agent.name": subject.agent,
  "gen_ai.provider.name": subject.providerID,
  "gen_ai.request.model": subject.modelID
})

/** One message in the conventions' JSON shape: a role and its parts. */
interface GenAiMessage {
  readonly role: string
  readonly parts: ReadonlyArray<Record<string, unknown>>
  readonly finish_reason?: string
}

type ModelPart = Exclude<ModelMessage["content"], string>[number]

const modelPart = (part: ModelPart): Record<string, unknown> => {
  switch (part.type) {
    case "text":
      return { type: "text", content: part.text }
    case "reasoning":
      return { type: "reasoning", content: part.text }
    case "tool-call":
      return { type: "tool_call", id: part.toolCallId, name: part.toolName, arguments: part.input }
    case "tool-result":
      return { type: "tool_call_response", id: part.toolCallId, response: part.output }
    case "file":
      return { type: "file", mime_type: part.mediaType }
    default:
      return { type: part.type }
  }
}

/** The request's messages in the conventions' shape (`gen_ai.input.messages`). */
export const inputMessages = (messages: ReadonlyArray<ModelMessage>): ReadonlyArray<GenAiMessage> =>
  messages.map((message) => ({
    role: message.role,
    parts: typeof message.content === "string" ? [{ type: "text", content: message.content }] : message.content.map(modelPart)
  }))

/** A stored message's parts the model wrote or was sent: text, reasoning, tool calls. */
const storedParts = (parts: ReadonlyArray<Part>): Array<Record<string, unknown>> =>
  parts.flatMap((part): Array<Record<string, unknown>> => {
    if (part.type === "text" && part.ignored !== true) return [{ type: "text", content: part.text }]
    if (part.type === "reasoning") return [{ type: "reasoning", content: part.text }]
    if (part.type === "tool") return [{ type: "tool_call", id: part.callID, name: part.tool, arguments: part.state.input }]
    return []
  })

/** The assistant's answer (`gen_ai.output.messages`). */
export const outputMessages = (parts: ReadonlyArray<Part>, finishReason: string | undefined): ReadonlyArray<GenAiMessage> => [{
  role: "assistant",
  parts: storedParts(parts),
  ...(finishReason ? { finish_reason: finishReason } : {})
}]

/** The conventions count cached input in `input_tokens` and reasoning in `output_tokens`. */
export const usageAttributes = (usage: TokenUsage) => ({
  "gen_ai.usage.input_tokens": usage.input + usage.cache.read + usage.cache.write,
  "gen_ai.usage.output_tokens": usage.output + usage.reasoning,
  "gen_ai.usage.cache_read.input_tokens": usage.cache.read,
  "gen_ai.usage.cache_creation.input_tokens": usage.cache.write
})

// --- invoke_agent ---------------------------------------------------------------------------

export const runSpanName = (agent: string) => `invoke_agent ${agent}`

export const runAttributes = (subject: SpanSubject, prompt: ReadonlyArray<Part> | undefined, logContent: boolean) => ({
  "gen_ai.operation.name": "invoke_agent",
  ...subjectAttributes(subject),
  ...(logContent && prompt ? { "gen_ai.input.messages": JSON.stringify([{ role: "user", parts: storedParts(prompt) }]) } : {})
})

export const runResultAttributes = (
  result: {
    readonly reason: string
    readonly steps: number
    readonly cost: number
    readonly answer: ReadonlyArray<Part> | undefined
    /** The error's name, when the run ended in one. */
    readonly error?: string | undefined
  },
  logContent: boolean
) => ({
  "agent.run.stop_reason": result.reason,
  ...(result.error ? { "error.type": result.error } : {}),
  "agent.run.steps": result.steps,
  "agent.usage.cost": result.cost,
  ...(logContent && result.answer ? { "gen_ai.output.messages": JSON.stringify(outputMessages(result.answer, undefined)) } : {})
})

// --- chat -----------------------------------------------------------------------------------

export const chatSpanName = (modelID: string) => `chat ${modelID}`

export const chatAttributes = (
  subject: SpanSubject,
  request: {
    readonly system: ReadonlyArray<string>
    readonly messages: ReadonlyArray<ModelMessage>
    readonly temperature?: number | undefined
    readonly topP?: number | undefined
  },
  logContent: boolean
) => ({
  "gen_ai.operation.name": "chat",
  ...subjectAttributes(subject),
  ...(request.temperature !== undefined ? { "gen_ai.request.temperature": request.temperature } : {}),
  ...(request.topP !== undefined ? { "gen_ai.request.top_p": request.topP } : {}),
  ...(logContent
    ? {
      "gen_ai.system_instructions": JSON.stringify(request.system.map((content) => ({ type: "text", content }))),
      "gen_ai.input.messages": JSON.stringify(inputMessages(request.messages))
    }
    : {})
})

export const chatResultAttributes = (
  finish: { readonly finishReason: string; readonly usage: TokenUsage; readonly cost: number; readonly responseModel?: string } | undefined,
  answer: ReadonlyArray<Part>,
  logContent: boolean
) => ({
  ...(finish
    ? {
      ...usageAttributes(finish.usage),
      "gen_ai.response.finish_reasons": [finish.finishReason],
      "agent.usage.cost": finish.cost,
      ...(finish.responseModel ? { "gen_ai.response.model": finish.responseModel } : {})
    }
    : {}),
  ...(logContent ? { "gen_ai.output.messages": JSON.stringify(outputMessages(answer, finish?.finishReason)) } : {})
})

// --- execute_tool ---------------------------------------------------------------------------

export const toolSpanName = (tool: string) => `execute_tool ${tool}`

export const toolAttributes = (
  call: { readonly sessionID: string; readonly agent: string; readonly tool: string; readonly callID: string; readonly input: unknown },
  logContent: boolean
) => ({
  "gen_ai.operation.name": "execute_tool",
  "gen_ai.tool.name": call.tool,
  "gen_ai.tool.call.id": call.callID,
  "gen_ai.tool.type": "function",
  "gen_ai.conversation.id": call.sessionID,
  "gen_ai.agent.name": call.agent,
  ...(logContent ? { "gen_ai.tool.call.arguments": JSON.stringify(call.input ?? null) } : {})
})

export const toolResultAttributes = (output: string, logContent: boolean) =>
  logContent ? { "gen_ai.tool.call.result": output } : {}
