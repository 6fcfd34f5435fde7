// Pure translations between this runtime's vocabulary and ACP's: tool kinds, tool calls, plans,
// stop reasons and prompt content. No effects here, so each is table-tested.
import type { FinishReason, Part, RunStopReason, Todo, ToolPart } from "@agent/domain"
import type * as Acp from "@agentclientprotocol/sdk"
import * as path from "node:path"

/** The ACP kind of one of our tools (MCP and custom tools are `other`). */
export const toolKind = (tool: string): Acp.ToolKind => {
  switch (tool) {
    case "read":
    case "list":
    case "todoread":
      return "read"
    case "edit":
    case "write":
    case "apply_patch":
    case "multiedit":
      return "edit"
    case "glob":
    case "grep":
    case "codesearch":
    case "websearch":
      return "search"
    case "bash":
      return "execute"
    case "webfetch":
      return "fetch"
    case "todowrite":
    case "task":
    case "skill":
      return "think"
    default:
      return "other"
  }
}

type Input = Readonly<Record<string, unknown>>

const text = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined)

/** Absolute path of a tool's `filePath`/`path` argument, resolved against the session's directory. */
const absolute = (directory: string, value: unknown) => {
  const file = text(value)
  return file === undefined ? undefined : path.resolve(directory, file)
}

/** The files a call touches, as ACP locations (absolute paths). */
export const toolLocations = (tool: string, input: Input, directory: string, metadata?: Input): Array<Acp.ToolCallLocation> => {
  const files = metadata?.files
  if (Array.isArray(files)) {
    return files.flatMap((entry) => {
      const file = (entry as { filepath?: unknown }).filepath
      return typeof file === "string" ? [{ path: file }] : []
    })
  }
  const file = absolute(directory, input.filePath ?? input.file_path)
  if (file !== undefined) {
    const offset = typeof input.offset === "number" ? input.offset : undefined
    return [offset === undefined ? { path: file } : { path: file, line: offset }]
  }
  if (tool === "glob" || tool === "grep" || tool === "list") {
    const dir = absolute(directory, input.path)
    return dir === undefined ? [] : [{ path: dir }]
  }
  return []
}

/** A short title for a call before it has its own (the tool's title once it runs). */
export const toolTitle = (part: ToolPart, directory: string): string => {
  const state = part.state
  if ((state.status === "running" || state.status === "completed") && state.title) return state.title
  const input = state.input
  const file = text(input.filePath) ?? text(input.file_path)
  if (file !== undefined) return `${part.tool} ${path.relative(directory, path.resolve(directory, file)) || file}`
  const shown = text(input.description) ?? text(input.command) ?? text(input.pattern) ?? text(input.url)
  return shown === undefined ? part.tool : `${part.tool}: ${shown}`
}

/** The ACP status of a tool part's state. */
export const toolStatus = (part: ToolPart): Acp.ToolCallStatus => {
  switch (part.state.status) {
    case "pending":
      return "pending"
    case "running":
      return "in_progress"
    case "completed":
      return "completed"
    case "error":
      return "failed"
  }
}

const textContent = (value: string): Acp.ToolCallContent => ({ type: "content", content: { type: "text", text: value } })

/** An edit as ACP diffs: edit's old and new strings, write's new content, apply_patch's files (unified diff). */
const diffsOf = (part: ToolPart, directory: string): Array<Acp.ToolCallContent> => {
  const input = part.state.input
  const file = absolute(directory, input.filePath ?? input.file_path)
  if (part.tool === "edit" && file !== undefined && typeof input.newString === "string") {
    return [{ type: "diff", path: file, oldText: typeof input.oldString === "string" && input.oldString !== "" ? input.oldString : null, newText: input.newString }]
  }
  if (part.tool === "write" && file !== undefined && typeof input.content === "string") {
    return [{ type: "diff", path: file, oldText: null, newText: input.content }]
  }
  const metadata = "metadata" in part.state ? part.state.metadata : undefined
  const diff = metadata?.diff
  return typeof diff === "string" && diff !== "" ? [textContent(diff)] : []
}

/** The editor terminal a bash call ran in (its metadata's `terminalId`). */
const terminalOf = (part: ToolPart): string | undefined => {
  const id = "metadata" in part.state ? part.state.metadata?.terminalId : undefined
  return typeof id === "string" && id !== "" ? id : undefined
}

/**
 * What a tool call shows: its output when done (edits as diffs), its error when failed. A command
 * run in the editor's terminal shows that terminal, live and once done; `live: false` (a replay,
 * whose terminals are gone) shows its output as text instead.
 */
export const toolContent = (part: ToolPart, directory: string, live = true): Array<Acp.ToolCallContent> => {
  const state = part.state
  const terminalId = live ? terminalOf(part) : undefined
  if (terminalId !== undefined && (state.status === "running" || state.status === "completed")) return [{ type: "terminal", terminalId }]
  if (state.status === "error") return [textContent(state.error)]
  if (state.status !== "completed") return toolKind(part.tool) === "edit" ? diffsOf(part, directory) : []
  if (toolKind(part.tool) === "edit") {
    const diffs = diffsOf(part, directory)
    if (diffs.length > 0) return diffs
  }
  return state.output === "" ? [] : [textContent(state.output)]
}

/** The first sight of a tool call (`live: false` for a replay). */
export const toolCallOf = (part: ToolPart, directory: string, live = true): Acp.SessionUpdate => {
  const metadata = "metadata" in part.state ? part.state.metadata : undefined
  return {
    sessionUpdate: "tool_call",
    toolCallId: part.callID,
    title: toolTitle(part, directory),
    kind: toolKind(part.tool),
    status: toolStatus(part),
    locations: toolLocations(part.tool, part.state.input, directory, metadata),
    content: toolContent(part, directory, live),
    rawInput: part.state.input
  }
}

/** A later state of a tool call. */
export const toolCallUpdateOf = (part: ToolPart, directory: string): Acp.SessionUpdate => {
  const metadata = "metadata" in part.state ? part.state.metadata : undefined
  return {
    sessionUpdate: "tool_call_update",
    toolCallId: part.callID,
    title: toolTitle(part, directory),
    status: toolStatus(part),
    locations: toolLocations(part.tool, part.state.input, directory, metadata),
    content: toolContent(part, directory),
    rawInput: part.state.input,
    ...(part.state.status === "completed" ? { rawOutput: { output: part.state.output, metadata: part.state.metadata } } : {})
  }
}

/** The todo list as an ACP plan (cancelled items are left out: a plan has no such status). */
export const planOf = (todos: ReadonlyArray<Todo>): Acp.SessionUpdate => ({
  sessionUpdate: "plan",
  entries: todos.flatMap((todo) =>
    todo.status === "cancelled" ? [] : [{ content: todo.content, priority: todo.priority, status: todo.status }]
  )
})

/** Why a prompt ended, in ACP's words; `undefined` for an end that is an error instead. */
export const stopReasonOf = (
  reason: RunStopReason,
  finish?: FinishReason
): Acp.StopReason | undefined => {
  switch (reason) {
    case "completed":
      // The model's own last word: cut at its output limit, or its provider's content filter.
      return finish === "length" ? "max_tokens" : finish === "content-filter" ? "refusal" : "end_turn"
    case "aborted":
      return "cancelled"
    case "steps":
      return "max_turn_requests"
    case "rejected":
      // The user rejected a tool call: the turn ended as they asked.
      return "end_turn"
    case "error":
      return finish === "length" ? "max_tokens" : finish === "content-filter" ? "refusal" : undefined
    case "duration":
    case "stall":
    case "budget":
      return undefined
  }
}

/** One part of a user's prompt, as `SessionLoop.prompt` takes it. */
export type PromptPart =
  | { readonly type: "text"; readonly text: string; readonly synthetic?: boolean }
  | { readonly type: "file"; readonly mime: string; readonly url: string; readonly filename?: string }

const fileName = (uri: string) => {
  try {
    return path.basename(new URL(uri).pathname) || uri
  } catch {
    return path.basename(uri) || uri
  }
}

/** A file path for a `file://` URI, else the URI itself. */
const uriPath = (uri: string) => {
  try {
    const url = new URL(uri)
    return url.protocol === "file:" ? decodeURIComponent(url.pathname) : uri
  } catch {
    return uri
  }
}

/** ACP content blocks as prompt parts: text, images as attachments, resources inlined, links named. */
export const promptParts = (blocks: ReadonlyArray<Acp.ContentBlock>): Array<PromptPart> =>
  blocks.flatMap((block): Array<PromptPart> => {
    switch (block.type) {
      case "text":
        return [{ type: "text", text: block.text }]
      case "image":
        return [{ type: "file", mime: block.mimeType, url: `data:${block.mimeType};base64,${block.data}`, ...(block.uri ? { filename: fileName(block.uri) } : {}) }]
      case "audio":
        return [{ type: "file", mime: block.mimeType, url: `data:${block.mimeType};base64,${block.data}` }]
      case "resource": {
        const resource = block.resource
        if ("text" in resource) {
          return [{ type: "text", text: `<file path="${uriPath(resource.uri)}">\n${resource.text}\n</file>`, synthetic: true }]
        }
        const mime = resource.mimeType ?? "application/octet-stream"
        return [{ type: "file", mime, url: `data:${mime};base64,${resource.blob}`, filename: fileName(resource.uri) }]
      }
      case "resource_link":
        return [{ type: "text", text: `@${uriPath(block.uri)}`, synthetic: false }]
    }
  })

/** A stored part as the updates that show it again (`session/load`); the user's own text as user chunks. */
export const replayOf = (part: Part, role: "user" | "assistant", directory: string): Array<Acp.SessionUpdate> => {
  switch (part.type) {
    case "text":
      if (part.text === "" || (role === "user" && part.synthetic)) return []
      return [{ sessionUpdate: role === "user" ? "user_message_chunk" : "agent_message_chunk", content: { type: "text", text: part.text }, messageId: part.messageID }]
    case "reasoning":
      return part.text === "" ? [] : [{ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: part.text }, messageId: part.messageID }]
    case "tool":
      return [toolCallOf(part, directory, false)]
    case "file":
      return part.mime.startsWith("image/") && part.url.startsWith("data:")
        ? [{ sessionUpdate: role === "user" ? "user_message_chunk" : "agent_message_chunk", content: { type: "image", mimeType: part.mime, data: part.url.slice(part.url.indexOf(",") + 1) } }]
        : [{ sessionUpdate: role === "user" ? "user_message_chunk" : "agent_message_chunk", content: { type: "resource_link", name: part.filename ?? part.url, uri: part.url } }]
    default:
      return []
  }
}
