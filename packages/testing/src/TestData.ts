import { Identifier } from "@agent/core"
import type { AssistantMessage, MessageID, PartID, SessionID, TextPart, ToolPart, UserMessage } from "@agent/domain"

/** Builders for messages and parts with valid ids, for tests that need realistic history. */

export const messageID = () => Identifier.ascending("message") as MessageID
export const partID = () => Identifier.ascending("part") as PartID

export const userMessage = (sessionID: SessionID, overrides: Partial<UserMessage> = {}): UserMessage => ({
  id: messageID(),
  sessionID,
  role: "user",
  time: { created: Date.now() },
  agent: "build",
  model: { providerID: "test", modelID: "scripted" },
  ...overrides
})

export const assistantMessage = (
  sessionID: SessionID,
  parentID: MessageID,
  overrides: Partial<AssistantMessage> = {}
): AssistantMessage => ({
  id: messageID(),
  sessionID,
  role: "assistant",
  time: { created: Date.now() },
  parentID,
  providerID: "test",
  modelID: "scripted",
  agent: "build",
  mode: "build",
  path: { cwd: "/tmp", root: "/tmp" },
  cost: 0,
  tokens: { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } },
  ...overrides
})

export const textPart = (message: { id: MessageID; sessionID: SessionID }, text: string, done = true): TextPart => ({
  id: partID(),
  sessionID: message.sessionID,
  messageID: message.id,
  type: "text",
  text,
  time: done ? { start: Date.now(), end: Date.now() } : { start: Date.now() }
})

export const toolPart = (
  message: { id: MessageID; sessionID: SessionID },
  status: "pending" | "running" | "completed" | "error",
  tool = "bash",
  input: Record<string, unknown> = { command: "ls" }
): ToolPart => {
  const base = { id: partID(), sessionID: message.sessionID, messageID: message.id, type: "tool" as const, callID: `call_${partID()}`, tool }
  const now = Date.now()
  switch (status) {
    case "pending":
      return { ...base, state: { status, input, raw: JSON.stringify(input) } }
    case "running":
      return { ...base, state: { status, input, time: { start: now } } }
    case "completed":
      return { ...base, state: { status, input, output: "ok", title: tool, metadata: {}, time: { start: now, end: now } } }
    case "error":
      return { ...base, state: { status, input, error: "failed", time: { start: now, end: now } } }
  }
}
