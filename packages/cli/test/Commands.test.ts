import { MockOpenAIServer, ScriptedModel, TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"

const bin = fileURLToPath(new URL("../dist/bin.js", import.meta.url))
const { toolCall } = ScriptedModel

interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the built CLI in the sandbox's project, with no terminal and a closed stdin. */
const agent = (box: TestInstance.Sandbox, args: ReadonlyArray<string>) =>
  Effect.async<Result>((resume) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: box.instance.directory,
      env: { ...box.instance.env } as NodeJS.ProcessEnv,
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.stdin.end()
    const timer = setTimeout(() => child.kill("SIGKILL"), 25_000)
    child.on("exit", (code) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code, stdout, stderr }))
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** A project whose model is the mock server (titles come from a second one). */
const project = (url: string, extra: object = {}, files: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const titles = yield* MockOpenAIServer.start(Array.from({ length: 10 }, () => "A title"))
    return yield* TestInstance.sandbox({
      files: {
        "project/agent.json": {
          model: "mock/model-a",
          small_model: "titles/small",
          provider: {
            mock: { npm: "@ai-sdk/openai-compatible", options: { baseURL: url }, models: { "model-a": {} } },
            titles: { npm: "@ai-sdk/openai-compatible", options: { baseURL: titles.url }, models: { small: {} } }
          },
          ...extra
        },
        ...files
      }
    })
  })

const lastUserText = (request: MockOpenAIServer.MockOpenAIServer["requests"][number]) => {
  const users = (request.messages as ReadonlyArray<{ role: string; content: unknown }>).filter((message) => message.role === "user")
  const content = users.at(-1)?.content
  return typeof content === "string"
    ? content
    : (content as ReadonlyArray<{ type: string; text?: string }>).map((part) => part.text ?? "").join("\n")
}

describe("agent run --command", () => {
  it.scopedLive("expands a markdown command with its arguments, shell output and files, and runs it", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["The parser looks fine."])
      const box = yield* project(server.url, {}, {
        "project/.agent/command/review.md": "---\ndescription: review one file\n---\nReview @$1 for $2.\nBranch files: !`ls src`\n",
        "project/src/parse.ts": "export const parse = () => 1\n"
      })
      const result = yield* agent(box, ["run", "--format", "json", "--command", "review", "src/parse.ts", "edge cases"])
      expect(result.code, result.stderr).toBe(0)
      const sent = lastUserText(server.requests[0]!)
      expect(sent).toContain("Review @src/parse.ts for edge cases.\nBranch files: parse.ts")
      expect(sent).toContain(`<file path="src/parse.ts">\nexport const parse = () => 1\n</file>`)
      const lines = result.stdout.trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>)
      expect(lines.at(-1)).toMatchObject({ type: "result", status: "completed", exitCode: 0, text: "The parser looks fine." })
    }))

  it.scopedLive("an unknown command is a usage error that names the commands there are", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([])
      const box = yield* project(server.url, { command: { hello: { template: "Say hello" } } })
      const result = yield* agent(box, ["run", "--command", "helo"])
      expect(result.code).toBe(2)
      expect(result.stderr).toBe(`agent: Command "helo" not found. Available commands: hello, init\n`)
      expect(server.requests).toHaveLength(0)
    }))
})

describe("agent agent create", () => {
  it.scopedLive("generates an agent file from the flags, which the runtime then loads", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[toolCall("agent_definition", {
        identifier: "changelog-writer",
        whenToUse: "Use this agent when a release needs its changelog written from the commits since the last tag.",
        systemPrompt: "You write changelogs.\n\nGroup changes by kind and link each to its commit."
      })]])
      const box = yield* project(server.url)
      const result = yield* agent(box, [
        "agent", "create", "--description", "writes changelogs for releases", "--mode", "subagent", "--tools", "read,grep,glob,bash"
      ])
      expect(result.code, result.stderr).toBe(0)
      const file = box.path("project/.agent/agent/changelog-writer.md")
      expect(result.stdout).toBe(
        `Created agent "changelog-writer" (subagent) in ${file}\n` +
          "Denied: edit, list, webfetch, task, todowrite, todoread, skill\n" +
          "When to use: Use this agent when a release needs its changelog written from the commits since the last tag.\n"
      )
      expect(fs.readFileSync(file, "utf8")).toContain("You write changelogs.\n\nGroup changes by kind and link each to its commit.\n")
      expect(JSON.stringify(server.requests[0]!)).toContain("writes changelogs for releases")

      const shown = yield* agent(box, ["debug", "agent", "changelog-writer"])
      expect(shown.code, shown.stderr).toBe(0)
      const summary = JSON.parse(shown.stdout) as { mode: string; permission: Array<{ permission: string; action: string }> }
      expect(summary.mode).toBe("subagent")
      expect(summary.permission).toContainEqual(expect.objectContaining({ permission: "edit", action: "deny" }))
    }))

  it.scopedLive("without a terminal, a missing description or an unknown tool is a usage error and the model is not called", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([])
      const box = yield* project(server.url)
      const missing = yield* agent(box, ["agent", "create"])
      expect(missing.code).toBe(2)
      expect(missing.stderr).toBe("agent: --description is required: say what the agent should do\n")
      const badTool = yield* agent(box, ["agent", "create", "--description", "x", "--tools", "read,shell"])
      expect(badTool.code).toBe(2)
      expect(badTool.stderr).toMatch(/^agent: unknown tool shell; choose from bash, read, write/)
      expect(server.requests).toHaveLength(0)
    }))
})
