// Our tool names and argument names as Claude Code's hooks know them, and back (pure, table-tested):
// a hook written for Claude Code matches `Bash` and reads `tool_input.file_path`.

/** Built-in tools with a Claude Code counterpart; the others keep their own names. */
const TOOL_NAMES: Readonly<Record<string, string>> = {
  bash: "Bash",
  read: "Read",
  write: "Write",
  edit: "Edit",
  glob: "Glob",
  grep: "Grep",
  webfetch: "WebFetch",
  task: "Task",
  todowrite: "TodoWrite",
  list: "LS",
  question: "AskUserQuestion",
  skill: "Skill"
}
const FROM_CLAUDE: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(TOOL_NAMES).map(([ours, claude]) => [claude, ours]))

/** Argument names that differ, for every tool. */
const FIELDS: Readonly<Record<string, string>> = {
  filePath: "file_path",
  oldString: "old_string",
  newString: "new_string",
  replaceAll: "replace_all"
}
/** Argument names that differ for one tool. */
const TOOL_FIELDS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  grep: { include: "glob" }
}

/** An MCP tool's registry id is `<server>_<tool>` (sanitized); the servers say where the split is. */
const sanitize = (name: string) => name.replace(/[^a-zA-Z0-9_-]/g, "_")

/**
 * Claude Code's name for one of our tools: `Bash`, `Read`, ..., `mcp__<server>__<tool>` for a
 * tool of an MCP server (the longest server name that prefixes the id), else the id itself.
 */
export const claudeToolName = (tool: string, mcpServers: ReadonlyArray<string> = []): string => {
  const known = TOOL_NAMES[tool]
  if (known !== undefined) return known
  let server: string | undefined
  for (const candidate of mcpServers.map(sanitize)) {
    if (tool.startsWith(`${candidate}_`) && tool.length > candidate.length + 1 && (server === undefined || candidate.length > server.length)) {
      server = candidate
    }
  }
  return server === undefined ? tool : `mcp__${server}__${tool.slice(server.length + 1)}`
}

/** Our tool id for a name a hook gave (Claude Code's, or ours). */
export const ourToolName = (name: string, mcpServers: ReadonlyArray<string> = []): string => {
  const builtin = FROM_CLAUDE[name]
  if (builtin !== undefined) return builtin
  const mcp = /^mcp__(.+?)__(.+)$/.exec(name)
  if (mcp && mcpServers.map(sanitize).includes(mcp[1]!)) return `${mcp[1]}_${mcp[2]}`
  return name
}

const renameKeys = (input: unknown, names: Readonly<Record<string, string>>): unknown => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return input
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(input)) out[names[key] ?? key] = value
  return out
}

const invert = (names: Readonly<Record<string, string>>) => Object.fromEntries(Object.entries(names).map(([a, b]) => [b, a]))
const INVERTED_FIELDS = invert(FIELDS)

/** A call's arguments with Claude Code's field names (`file_path`, `old_string`, ...). */
export const toClaudeInput = (tool: string, input: unknown): unknown =>
  renameKeys(input, { ...FIELDS, ...TOOL_FIELDS[tool] })

/** A hook's `updatedInput` with our field names again. */
export const fromClaudeInput = (tool: string, input: unknown): unknown =>
  renameKeys(input, { ...INVERTED_FIELDS, ...invert(TOOL_FIELDS[tool] ?? {}) })

/** What a tool returned, as `tool_response`: the output and title, with the fields Claude Code's tools name. */
export const toClaudeResponse = (
  tool: string,
  input: unknown,
  result: { readonly output: string; readonly title: string; readonly metadata: Record<string, unknown> }
): Record<string, unknown> => {
  const base: Record<string, unknown> = { output: result.output, title: result.title, metadata: result.metadata }
  const args = typeof input === "object" && input !== null ? (input as Record<string, unknown>) : {}
  switch (tool) {
    case "bash":
      return { ...base, stdout: result.output, stderr: "", interrupted: false, isImage: false }
    case "read":
    case "write":
    case "edit":
      return {
        ...base,
        ...(typeof args.filePath === "string" ? { filePath: args.filePath } : {}),
        ...(tool === "write" && typeof args.content === "string" ? { content: args.content } : {}),
        success: true
      }
    default:
      return base
  }
}
