import { TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { agent } from "./AgentProcess.js"

/** A small stdio MCP server (core's test fixture). */
const mcpFixture = fileURLToPath(new URL("../../core/test/mcp/fixtures/server.mjs", import.meta.url))

describe("agent agent list", () => {
  it.scopedLive("lists visible agents with mode, description and source; --all adds hidden ones; json", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({
        files: {
          "project/.opencode/agent/review.md": "---\ndescription: Reviews diffs\nmode: subagent\n---\nReview the diff.\n",
          "project/agent.json": { agent: { plan: { description: "Plans, never edits" }, secret: { hidden: true, description: "Hidden helper" } } }
        }
      })
      const result = yield* agent(box, ["agent", "list"])
      expect(result.code, result.stderr).toBe(0)
      const rows = result.stdout.trim().split("\n").map((line) => line.split(/\s{2,}/))
      expect(rows[0]).toEqual(["NAME", "MODE", "DESCRIPTION", "SOURCE"])
      expect(rows.slice(1).map((row) => row[0])).toEqual(["build", "explore", "general", "plan", "review"])
      expect(rows.find((row) => row[0] === "review")).toEqual(["review", "subagent", "Reviews diffs", ".opencode/agent/review.md"])
      expect(rows.find((row) => row[0] === "plan")).toEqual(["plan", "primary", "Plans, never edits", "agent.json"])
      expect(rows.find((row) => row[0] === "build")).toEqual(["build", "primary", expect.stringMatching(/^The default agent/), "built-in"])

      const all = yield* agent(box, ["agent", "list", "--all", "--format", "json"])
      expect(all.code, all.stderr).toBe(0)
      const listed = JSON.parse(all.stdout) as Array<{ name: string; hidden: boolean; mode: string; source: string }>
      expect(listed.map((entry) => entry.name)).toEqual(["build", "compaction", "explore", "general", "plan", "review", "secret", "summary", "title"])
      expect(listed.find((entry) => entry.name === "secret")).toMatchObject({ hidden: true, mode: "all", source: box.path("project/agent.json") })
      expect(listed.find((entry) => entry.name === "title")).toMatchObject({ hidden: true, source: "built-in" })
    }))
})

describe("agent models", () => {
  it.scopedLive("lists built-in and configured providers, their models, and whether each has what it needs", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({
        env: { ANTHROPIC_API_KEY: "sk-test" },
        files: {
          "project/agent.json": {
            model: "local/qwen",
            small_model: "anthropic/claude-haiku-4-5",
            provider: {
              local: {
                npm: "@ai-sdk/openai-compatible",
                name: "Local server",
                options: { baseURL: "http://127.0.0.1:9/v1" },
                models: { qwen: { limit: { context: 32768, output: 8192 } } }
              },
              nourl: { npm: "@ai-sdk/openai-compatible", models: { m: {} } },
              keyed: { npm: "@ai-sdk/openai", env: ["KEYED_TOKEN"], models: { "gpt-5-mini": {} } }
            }
          }
        }
      })
      const json = yield* agent(box, ["models", "--format", "json"])
      expect(json.code, json.stderr).toBe(0)
      const data = JSON.parse(json.stdout)
      expect(data.model).toBe("local/qwen")
      const byId = Object.fromEntries(data.providers.map((provider: { id: string }) => [provider.id, provider]))
      expect(Object.keys(byId)).toEqual(["anthropic", "openai", "local", "nourl", "keyed"])
      expect(byId.anthropic).toMatchObject({ builtIn: true, credentials: "ANTHROPIC_API_KEY" })
      expect(byId.anthropic.problem).toBeUndefined()
      expect(byId.anthropic.models.map((model: { modelID: string }) => model.modelID)).toEqual(["claude-sonnet-4-5", "claude-haiku-4-5"])
      expect(byId.openai.problem).toMatch(/no API key for provider "openai": set OPENAI_API_KEY/)
      expect(byId.local).toMatchObject({ name: "Local server", configured: true, builtIn: false })
      expect(byId.local.problem).toBeUndefined()
      expect(byId.local.models[0]).toMatchObject({ modelID: "qwen", limit: { context: 32768, output: 8192 } })
      expect(byId.nourl.problem).toMatch(/needs options.baseURL/)
      expect(byId.keyed.problem).toMatch(/no API key for provider "keyed"/)

      const text = yield* agent(box, ["models"])
      expect(text.code, text.stderr).toBe(0)
      expect(text.stdout).toMatch(/^local\/qwen\s+yes\s+33k\/8k\s+-\s+default$/m)
      expect(text.stdout).toMatch(/^anthropic\/claude-haiku-4-5\s+yes\s+200k\/64k\s+\$1\/\$5\s+small$/m)
      expect(text.stdout).toMatch(/^openai\/gpt-5\s+no\s/m)
      expect(text.stdout).toContain("anthropic (Anthropic; built-in; @ai-sdk/anthropic): key from ANTHROPIC_API_KEY")
      expect(text.stdout).toContain("local (Local server; configured; @ai-sdk/openai-compatible): no key needed")
    }))
})

describe("agent mcp list", () => {
  it.scopedLive("shows each server's type, whether it is enabled and its status after connecting", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({
        env: { AGENT_MCP_GRACE_MS: "20000" },
        files: {
          "project/agent.json": {
            mcp: {
              good: { type: "local", command: ["node", mcpFixture] },
              broken: { type: "local", command: ["node", mcpFixture, "--exit", "3"] },
              off: { type: "local", command: ["node", mcpFixture], enabled: false },
              away: { type: "remote", url: "http://127.0.0.1:9/mcp", oauth: false }
            }
          }
        }
      })
      const json = yield* agent(box, ["mcp", "list", "--format", "json"])
      expect(json.code, json.stderr).toBe(0)
      const servers = JSON.parse(json.stdout) as Array<{ name: string; type: string; enabled: boolean; status: string; error?: string }>
      expect(servers.map(({ name, type, enabled, status }) => [name, type, enabled, status])).toEqual([
        ["good", "local", true, "connected"],
        ["broken", "local", true, "failed"],
        ["off", "local", false, "disabled"],
        ["away", "remote", true, "failed"]
      ])
      expect(servers[1]!.error).toContain("fatal: the fixture was told to exit")

      const text = yield* agent(box, ["mcp", "list"])
      expect(text.code, text.stderr).toBe(0)
      expect(text.stdout).toMatch(/^NAME\s+TYPE\s+ENABLED\s+STATUS\s+COMMAND OR URL$/m)
      expect(text.stdout).toMatch(new RegExp(`^good\\s+local\\s+yes\\s+connected\\s+node ${mcpFixture}$`, "m"))
      expect(text.stdout).toMatch(/^off\s+local\s+no\s+disabled\s/m)
      expect(text.stdout).toMatch(/^away\s+remote\s+yes\s+failed\s+http:\/\/127\.0\.0\.1:9\/mcp$/m)
      expect(text.stdout).toMatch(/^broken: .*fatal: the fixture was told to exit/m)
    }), 60_000)

  it.scopedLive("says so when nothing is configured", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const result = yield* agent(box, ["mcp", "list"])
      expect(result.code).toBe(0)
      expect(result.stderr).toContain("no MCP servers are configured")
    }))
})

describe("agent completion", () => {
  /** What bash offers after `words` with the completion script loaded. */
  const complete = (script: string, words: ReadonlyArray<string>) =>
    execFileSync("bash", ["-c", `${script}\nCOMP_WORDS=(${words.map((word) => `'${word}'`).join(" ")}); COMP_CWORD=${words.length - 1}; ` +
      `_agent_bash_completions agent; printf '%s\\n' "\${COMPREPLY[@]}"`], { encoding: "utf8" }).trim().split("\n")

  it.scopedLive("bash completes commands and subcommands; zsh and fish scripts are printed", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const bash = yield* agent(box, ["completion", "bash"])
      expect(bash.code, bash.stderr).toBe(0)
      expect(complete(bash.stdout, ["agent", ""])).toEqual(expect.arrayContaining(["run", "session", "agent", "permission", "models", "mcp", "debug", "completion"]))
      expect(complete(bash.stdout, ["agent", "session", ""])).toEqual(expect.arrayContaining(["list", "show", "export", "import", "delete"]))
      expect(complete(bash.stdout, ["agent", "agent", ""])).toContain("list")
      expect(complete(bash.stdout, ["agent", "run", "--fo"])).toEqual(["--fork", "--format"])

      const zsh = yield* agent(box, ["completion", "zsh"])
      expect(zsh.stdout).toMatch(/^#compdef agent/)
      expect(zsh.stdout).toContain("session")
      const fish = yield* agent(box, ["completion", "fish"])
      expect(fish.stdout).toContain("complete -c agent")
      expect(fish.stdout).toContain("permission")

      const wrong = yield* agent(box, ["completion", "powershell"])
      expect(wrong.code).toBe(2)
    }))
})
