import { describe, expect, it } from "@effect/vitest"
import * as ClaudeNames from "../../src/hooks/ClaudeNames.js"

describe("ClaudeNames.claudeToolName / ourToolName", () => {
  const servers = ["github", "my server", "git"]
  /** [our tool id, Claude Code's name] */
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["bash", "Bash"],
    ["read", "Read"],
    ["write", "Write"],
    ["edit", "Edit"],
    ["glob", "Glob"],
    ["grep", "Grep"],
    ["webfetch", "WebFetch"],
    ["task", "Task"],
    ["todowrite", "TodoWrite"],
    ["list", "LS"],
    ["question", "AskUserQuestion"],
    ["skill", "Skill"],
    ["apply_patch", "apply_patch"],
    ["github_create_issue", "mcp__github__create_issue"],
    // The server's sanitized name, and the longest server that prefixes the id.
    ["my_server_search", "mcp__my_server__search"],
    ["github_list", "mcp__github__list"],
    ["git_status", "mcp__git__status"],
    ["unknown_tool", "unknown_tool"]
  ]
  for (const [ours, claude] of cases) {
    it(`${ours} <-> ${claude}`, () => {
      expect(ClaudeNames.claudeToolName(ours, servers)).toBe(claude)
      expect(ClaudeNames.ourToolName(claude, servers)).toBe(ours)
    })
  }
})

describe("ClaudeNames.toClaudeInput / fromClaudeInput", () => {
  /** [tool, our arguments, Claude Code's] */
  const cases: ReadonlyArray<readonly [string, Record<string, unknown>, Record<string, unknown>]> = [
    ["bash", { command: "ls", description: "List", timeout: 5000 }, { command: "ls", description: "List", timeout: 5000 }],
    ["read", { filePath: "/a.txt", offset: 1, limit: 10 }, { file_path: "/a.txt", offset: 1, limit: 10 }],
    ["write", { filePath: "/a.txt", content: "x" }, { file_path: "/a.txt", content: "x" }],
    [
      "edit",
      { filePath: "/a.txt", oldString: "a", newString: "b", replaceAll: true },
      { file_path: "/a.txt", old_string: "a", new_string: "b", replace_all: true }
    ],
    ["glob", { pattern: "**/*.ts", path: "src" }, { pattern: "**/*.ts", path: "src" }],
    ["grep", { pattern: "TODO", include: "*.ts" }, { pattern: "TODO", glob: "*.ts" }],
    ["task", { description: "d", prompt: "p", subagent_type: "general" }, { description: "d", prompt: "p", subagent_type: "general" }]
  ]
  for (const [tool, ours, claude] of cases) {
    it(tool, () => {
      expect(ClaudeNames.toClaudeInput(tool, ours)).toEqual(claude)
      expect(ClaudeNames.fromClaudeInput(tool, claude)).toEqual(ours)
    })
  }
  it("leaves what is not an object as it is", () => {
    expect(ClaudeNames.toClaudeInput("bash", "ls")).toBe("ls")
    expect(ClaudeNames.fromClaudeInput("bash", null)).toBe(null)
  })
})

describe("ClaudeNames.toClaudeResponse", () => {
  const result = { output: "hi\n", title: "echo", metadata: { exit: 0 } }
  it("bash: stdout as Claude Code's Bash reports it", () =>
    expect(ClaudeNames.toClaudeResponse("bash", { command: "echo hi" }, result)).toMatchObject({ stdout: "hi\n", stderr: "", interrupted: false, output: "hi\n" }))
  it("write: the file's path and content", () =>
    expect(ClaudeNames.toClaudeResponse("write", { filePath: "/a", content: "x" }, result)).toMatchObject({ filePath: "/a", content: "x", success: true }))
  it("other tools: output, title, metadata", () =>
    expect(ClaudeNames.toClaudeResponse("glob", {}, result)).toEqual({ output: "hi\n", title: "echo", metadata: { exit: 0 } }))
})
