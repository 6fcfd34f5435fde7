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
 * What one session's transcript file holds, so the next write appends instead of rewriting it:
 * `ids` are the settled messages at its start (their lines never change), `prefixBytes` their
 * length in bytes, `parent` the uuid of their last line; `tail` the lines of the messages after
 * them (the run's newest, still changing), written after the prefix.
 */
export interface TranscriptFile {
  readonly ids: Array<string>
  prefixBytes: number
  parent: string | null
  tail: string
}

export const emptyFile = (): TranscriptFile => ({ ids: [], prefixBytes: 0, parent: null, tail: "" })

const textOf = (messages: ReadonlyArray<MessageWithParts>, parent: string | null, context: TranscriptContext) => {
  let text = ""
  let last = parent
  for (const message of messages) {
    const lines = linesOf(message, last, context)
    for (const line of lines) text += JSON.stringify(line) + "\n"
    last = lines[lines.length - 1]!.uuid as string
  }
  return { text, last }
}

/** The whole transcript as JSONL text. */
export const render = (messages: ReadonlyArray<MessageWithParts>, context: TranscriptContext): string => textOf(messages, null, context).text

/** How many messages from `from` on are settled, in a row: those join the file's unchanging prefix. */
const settledRun = (messages: ReadonlyArray<MessageWithParts>, from: number) => {
  let end = from
  while (end < messages.length && settled(messages[end]!)) end++
  return end
}

/** Whether the file's prefix is still the session's first messages (a revert or compaction can drop them). */
const prefixHolds = (file: TranscriptFile, messages: ReadonlyArray<MessageWithParts>) =>
  file.ids.length <= messages.length && file.ids.every((id, index) => messages[index]!.info.id === id)

/**
 * Writes the transcript where hooks are told it is. The first write (or one after the session's
 * earlier messages changed, or after the file changed under us) writes a temporary file and renames
 * it over; later ones cut the file back to its settled prefix and write what follows, or leave it
 * alone when nothing changed: a reader always finds whole lines of the session's first messages,
 * and a write no longer costs in proportion to the session (docs/performance.md, "Hooks").
 * `state` is updated to what the file now holds.
 */
export const write = (file: string, messages: ReadonlyArray<MessageWithParts>, context: TranscriptContext, state: TranscriptFile): void => {
  if ((state.ids.length > 0 || state.tail !== "") && prefixHolds(state, messages)) {
    const from = state.ids.length
    const end = settledRun(messages, from)
    const added = textOf(messages.slice(from, end), state.parent, context)
    const tail = textOf(messages.slice(end), added.last, context).text
    if (append(file, state, added.text, tail)) return record(state, messages.slice(from, end), added, tail)
  }
  const end = settledRun(messages, 0)
  const settledText = textOf(messages.slice(0, end), null, context)
  const tail = textOf(messages.slice(end), settledText.last, context).text
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const temp = `${file}.${process.pid}.tmp`
  fs.writeFileSync(temp, settledText.text + tail, { mode: 0o600 })
  fs.renameSync(temp, file)
  state.ids.length = 0
  state.prefixBytes = 0
  record(state, messages.slice(0, end), settledText, tail)
}

/** `state` after `added` joined the file's prefix and `tail` follows it. */
const record = (state: TranscriptFile, settledNow: ReadonlyArray<MessageWithParts>, added: { readonly text: string; readonly last: string | null }, tail: string) => {
  for (const message of settledNow) state.ids.push(message.info.id)
  state.prefixBytes += Buffer.byteLength(added.text)
  state.parent = added.last
  state.tail = tail
}

/** Writes `added` then `tail` after the file's prefix; false when the file is not what `state` says (gone, or changed by someone else). */
const append = (file: string, state: TranscriptFile, added: string, tail: string): boolean => {
  const expected = state.prefixBytes + Buffer.byteLength(state.tail)
  if (added === "" && tail === state.tail) {
    try {
      return fs.statSync(file).size === expected
    } catch {
      return false
    }
  }
  let fd: number
  try {
    fd = fs.openSync(file, "r+")
  } catch {
    return false
  }
  try {
    if (fs.fstatSync(fd).size !== expected) return false
    if (state.tail !== "") fs.ftruncateSync(fd, state.prefixBytes)
    const bytes = Buffer.from(added + tail)
    fs.writeSync(fd, bytes, 0, bytes.length, state.prefixBytes)
    return true
  } finally {
    fs.closeSync(fd)
  }
}
