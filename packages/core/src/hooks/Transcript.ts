// The session as a Claude Code transcript (JSONL: one `user` or `assistant` line per message, tool
// results as `tool_result` blocks of a `user` line), for hooks that read `transcript_path`.
import type { MessageWithParts } from "@agent/domain"
import * as fs from "node:fs"
import * as path from "node:path"
import { claudeToolName, toClaudeInput } from "./ClaudeNames.js"

export interface TranscriptContext {
  readonly sessionID: string
  readonly cwd: string
  readonly version: string
  readonly mcpServers: ReadonlyArray<string>
}

type Block = Record<string, unknown>

/** The lines of one message: its own, and for an assistant message, a `user` line with its tool results. */
const linesOf = (message: MessageWithParts, parent: string | null, context: TranscriptContext): Array<Record<string, unknown>> => {
  const base = {
    parentUuid: parent,
    isSidechain: false,
    userType: "external",
    cwd: context.cwd,
    sessionId: context.sessionID,
    version: context.version,
    timestamp: new Date(message.info.time.created).toISOString()
  }
  if (message.info.role === "user") {
    const text = message.parts.flatMap((part) => (part.type === "text" && !part.synthetic ? [part.text] : [])).join("\n")
    return [{ ...base, type: "user", uuid: message.info.id, message: { role: "user", content: text } }]
  }
  const content: Array<Block> = []
  const results: Array<Block> = []
  for (const part of message.parts) {
    if (part.type === "text") content.push({ type: "text", text: part.text })
    else if (part.type === "reasoning") content.push({ type: "thinking", thinking: part.text })
    else if (part.type === "tool") {
      content.push({ type: "tool_use", id: part.callID, name: claudeToolName(part.tool, context.mcpServers), input: toClaudeInput(part.tool, part.state.input) })
      if (part.state.status === "completed") results.push({ type: "tool_result", tool_use_id: part.callID, content: part.state.output })
      else if (part.state.status === "error") results.push({ type: "tool_result", tool_use_id: part.callID, content: part.state.error, is_error: true })
    }
  }
  const info = message.info
  const assistant = {
    ...base,
    type: "assistant",
    uuid: info.id,
    message: { id: info.id, role: "assistant", model: info.modelID, content, stop_reason: info.finish ?? null }
  }
  return results.length === 0
    ? [assistant]
    : [assistant, { ...base, parentUuid: info.id, type: "user", uuid: `${info.id}-results`, message: { role: "user", content: results } }]
}

/** A message that no longer changes: a user message, or an assistant message that completed. */
const settled = (message: MessageWithParts) => message.info.role === "user" || message.info.time.completed !== undefined

/**
 * Rendered lines of settled messages, by message id: a session's transcript is rewritten before
 * every hook, and only its newest messages change.
 */
export type RenderCache = Map<string, { readonly text: string; readonly last: string }>

/** The whole transcript as JSONL text. */
export const render = (messages: ReadonlyArray<MessageWithParts>, context: TranscriptContext, cache: RenderCache = new Map()): string => {
  let parent: string | null = null
  const out: Array<string> = []
  for (const message of messages) {
    const cached = cache.get(message.info.id)
    if (cached !== undefined) {
      out.push(cached.text)
      parent = cached.last
      continue
    }
    const lines = linesOf(message, parent, context)
    const text = lines.map((line) => JSON.stringify(line)).join("\n")
    parent = lines[lines.length - 1]!.uuid as string
    if (settled(message)) cache.set(message.info.id, { text, last: parent })
    out.push(text)
  }
  return out.length === 0 ? "" : out.join("\n") + "\n"
}

/** Writes the transcript where hooks are told it is (replaced whole: a hook may read it at any time). */
export const write = (file: string, messages: ReadonlyArray<MessageWithParts>, context: TranscriptContext, cache?: RenderCache): void => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const temp = `${file}.${process.pid}.tmp`
  fs.writeFileSync(temp, render(messages, context, cache), { mode: 0o600 })
  fs.renameSync(temp, file)
}
