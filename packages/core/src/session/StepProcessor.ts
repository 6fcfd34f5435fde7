// The step processor: folds the model's answer (its events, in order) into the assistant message's
// parts. Text and reasoning grow by deltas (appended in the store, not rewritten); a finished tool
// call is handed to `onToolCall` (the step runs it); the finish is kept for the step to close with.
import type { AssistantMessage, Part, PartID, ToolPart } from "@agent/domain"
import { Effect } from "effect"
import * as Identifier from "../runtime/Identifier.js"
import { INVALID_TOOL, type LLMEvent } from "../llm/LLMService.js"
import type { LiveMessage } from "../llm/MessageConversion.js"
import type { LoopDeps } from "./LoopDeps.js"
import { type RunState, touch, writePart } from "./RunState.js"

export type FinishStep = Extract<LLMEvent, { type: "finish-step" }>

/** The processor's state: parts still streaming, tool calls by id, the step's finish. */
export interface ProcessorState {
  readonly open: Map<string, Extract<Part, { type: "text" | "reasoning" }>>
  readonly toolParts: Map<string, ToolPart>
  finish: FinishStep | undefined
}

export interface StepProcessor {
  readonly state: ProcessorState
  /** Folds one event of the model's answer into the message. */
  readonly fold: (event: LLMEvent) => Effect.Effect<void>
}

/** A finished call, routed: calls the model got wrong go to the invalid tool, which tells it why. */
export interface RoutedCall {
  readonly part: ToolPart
  /** The arguments as the model sent them (the tool decodes them). */
  readonly input: unknown
}

/** Replaces a streaming part in the message (not stored: its deltas are). */
const replace = (message: LiveMessage, id: PartID, next: Part) => {
  const index = message.parts.findIndex((existing) => existing.id === id)
  if (index >= 0) message.parts[index] = next
}

export const makeStepProcessor = (input: {
  readonly deps: LoopDeps
  readonly run: RunState
  readonly message: LiveMessage
  /** A finished tool call, in the order the model made them: started by the step (true) or refused (false). */
  readonly onToolCall: (call: RoutedCall) => Effect.Effect<boolean>
}): StepProcessor => {
  const { deps, run, message } = input
  const sessionID = run.sessionID
  const messageID = message.info.id
  const state: ProcessorState = { open: new Map(), toolParts: new Map(), finish: undefined }
  const newID = () => Identifier.ascending("part") as PartID
  const keyOf = (event: { readonly type: string; readonly id: string }) => `${event.type.split("-")[0]}:${event.id}`

  const toolCall = (event: Extract<LLMEvent, { type: "tool-call" }>) => {
    const routed = event.invalid !== undefined
      ? { toolName: INVALID_TOOL, input: { tool: event.toolName, error: event.invalid } as unknown }
      : { toolName: event.toolName, input: event.input }
    const toolInput = typeof routed.input === "object" && routed.input !== null ? routed.input as Record<string, unknown> : {}
    const existing = state.toolParts.get(event.toolCallId)
    const part: ToolPart = {
      id: existing?.id ?? newID(),
      sessionID,
      messageID,
      type: "tool",
      callID: event.toolCallId,
      tool: routed.toolName,
      state: { status: "running", input: toolInput, time: { start: Date.now() } }
    }
    return Effect.map(input.onToolCall({ part, input: routed.input }), (started) => {
      if (started) state.toolParts.set(event.toolCallId, part)
    })
  }

  const fold = (event: LLMEvent): Effect.Effect<void> => {
    switch (event.type) {
      case "text-start":
      case "reasoning-start": {
        const part: Extract<Part, { type: "text" | "reasoning" }> = {
          id: newID(),
          sessionID,
          messageID,
          type: event.type === "text-start" ? "text" : "reasoning",
          text: "",
          time: { start: Date.now() }
        }
        state.open.set(keyOf(event), part)
        return writePart(deps, run, message, part)
      }
      case "text-delta":
      case "reasoning-delta": {
        const key = keyOf(event)
        const part = state.open.get(key)
        if (!part) return Effect.void
        const next = { ...part, text: part.text + event.text }
        state.open.set(key, next)
        replace(message, part.id, next)
        touch(run)
        return deps.store.appendDelta({ sessionID, messageID, partID: part.id, field: "text", delta: event.text })
      }
      case "text-end":
      case "reasoning-end": {
        const key = keyOf(event)
        const part = state.open.get(key)
        if (!part) return Effect.void
        state.open.delete(key)
        return writePart(deps, run, message, { ...part, time: { start: part.time?.start ?? Date.now(), end: Date.now() } })
      }
      case "tool-input-start": {
        const part: ToolPart = {
          id: newID(),
          sessionID,
          messageID,
          type: "tool",
          callID: event.id,
          tool: event.toolName,
          state: { status: "pending", input: {}, raw: "" }
        }
        state.toolParts.set(event.id, part)
        return writePart(deps, run, message, part)
      }
      case "tool-input-delta": {
        const part = state.toolParts.get(event.id)
        if (part && part.state.status === "pending") {
          const next: ToolPart = { ...part, state: { ...part.state, raw: part.state.raw + event.delta } }
          state.toolParts.set(event.id, next)
          replace(message, part.id, next)
          touch(run)
        }
        return Effect.void
      }
      case "tool-call":
        return toolCall(event)
      case "finish-step": {
        // Recorded now, written once the step's tool calls are done (step-finish closes the step).
        state.finish = event
        message.info = { ...(message.info as AssistantMessage), finish: event.finishReason, tokens: event.usage, cost: event.cost }
        return Effect.void
      }
    }
  }

  return { state, fold }
}
