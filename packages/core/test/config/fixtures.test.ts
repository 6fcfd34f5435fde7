import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { makeAgentRegistry } from "../../src/agent/AgentRegistry.js"
import { ConfigService, loadConfig } from "../../src/config/ConfigService.js"
import { Instance } from "../../src/runtime/Instance.js"
import * as Permission from "../../src/permission/Permission.js"
import { ProviderRegistry } from "../../src/llm/ProviderRegistry.js"
import { sandbox } from "./helpers.js"

/** Real-world OpenCode configs, copied unchanged into a temp git project. */
const fixtures = fileURLToPath(new URL("../fixtures/config/", import.meta.url))

const withFixture = (name: string, env: Readonly<Record<string, string>> = {}) =>
  Effect.gen(function*() {
    const box = yield* sandbox
    fs.cpSync(path.join(fixtures, name), box.project, { recursive: true })
    const info = yield* loadConfig(box.instance(env, box.project))
    return { box, info }
  })

describe("OpenCode config fixtures load unchanged", () => {
  it.live("opencode.jsonc with $schema, UI keys, providers, MCP, permissions, agents and commands", () =>
    Effect.scoped(Effect.gen(function*() {
      const { box, info } = yield* withFixture("opencode-jsonc", { ANTHROPIC_API_KEY: "sk-ant-test" })
      const { config } = info
      const file = path.join(box.project, "opencode.jsonc")
      expect(info.sources).toEqual([file])
      expect(config.$schema).toBe("https://opencode.ai/config.json")
      expect(config.model).toBe("anthropic/claude-sonnet-4-5")
      expect(config.provider?.ollama?.npm).toBe("@ai-sdk/openai-compatible")
      expect(config.provider?.ollama?.options?.baseURL).toBe("http://localhost:11434/v1")
      expect(config.provider?.ollama?.models?.["qwen2.5-coder:7b"]?.limit).toEqual({ context: 32768, output: 8192 })
      expect(config.provider?.anthropic?.options?.apiKey).toBe("sk-ant-test")
      expect(config.mcp?.context7).toMatchObject({ type: "remote", url: "https://mcp.context7.com/mcp" })
      expect(config.mcp?.filesystem).toMatchObject({ type: "local", timeout: 10000 })
      expect(config.permission).toEqual({
        edit: "ask",
        bash: {
          "*": "ask",
          "git status*": "allow",
          "git diff*": "allow",
          "git log*": "allow",
          "npm run test*": "allow",
          "rm -rf *": "deny"
        },
        webfetch: "allow"
      })
      expect(config.agent?.plan?.permission).toEqual({ bash: { "*": "deny", "git log*": "allow" } })
      expect(config.agent?.["code-reviewer"]?.prompt).toBe(
        `You are a code reviewer. Focus on:\n- correctness and "edge cases"\n- security (injection, secrets in code)\nDo not edit files.`
      )
      expect(config.agent?.["code-reviewer"]?.tools).toEqual({ write: false, edit: false })
      expect(config.command?.test?.agent).toBe("build")
      expect(config.instructions).toEqual(["CONTRIBUTING.md", "docs/guidelines.md", ".cursor/rules/*.md"])
      expect(info.warnings.map((w) => w.key)).toEqual(["theme", "autoupdate", "keybinds", "formatter"])
      expect(info.origin(["permission", "bash", "rm -rf *"])).toMatchObject({ file, line: 59 })
    })))

  it.live(".opencode/agent/*.md files with front matter like the OpenCode docs", () =>
    Effect.scoped(Effect.gen(function*() {
      const { box, info } = yield* withFixture("markdown-agents")
      const { config } = info
      const agentDir = path.join(box.project, ".opencode", "agent")
      expect(info.directories).toEqual([path.join(box.project, ".opencode")])
      expect(info.sources).toEqual([
        path.join(box.project, "opencode.json"),
        path.join(agentDir, "docs-writer.md"),
        path.join(agentDir, "review.md"),
        path.join(agentDir, "security", "auditor.md"),
        path.join(box.project, ".opencode", "mode", "focus.md")
      ])
      // The markdown agent in .opencode/ beats the project opencode.json.
      expect(config.agent?.review).toMatchObject({
        description: "Reviews code for quality and best practices",
        mode: "subagent",
        model: "anthropic/claude-sonnet-4-20250514",
        temperature: 0.1,
        tools: { write: false, edit: false, bash: false }
      })
      expect(config.agent?.review?.prompt).toMatch(/^You are in code review mode\.[\s\S]*without making direct changes\.$/)
      expect(config.agent?.["docs-writer"]?.permission).toEqual({
        edit: "allow",
        bash: { "git diff": "allow", "git log*": "allow", "*": "ask" },
        webfetch: "deny"
      })
      expect(config.agent?.["security/auditor"]).toMatchObject({
        description: "Use this agent when: you need a security audit of recent changes",
        color: "#FF5733",
        steps: 8,
        options: { reasoningEffort: "high" }
      })
      expect(config.agent?.focus).toMatchObject({ mode: "primary", temperature: 0.3 })
      expect(info.origin(["agent", "docs-writer", "permission", "bash", "*"])).toEqual({
        file: path.join(agentDir, "docs-writer.md"),
        key: "permission.bash.*",
        line: 9
      })
    })))

  it.live("enterprise config with legacy tools and mode", () =>
    Effect.scoped(Effect.gen(function*() {
      const { box, info } = yield* withFixture("enterprise", { CORP_LLM_KEY: "corp-key", JIRA_TOKEN: "jt" })
      const { config } = info
      const file = path.join(box.project, "opencode.json")
      expect(config.username).toBe("ci-bot")
      expect(config.share).toBe("disabled")
      expect(config.provider?.["corp-gateway"]?.options?.apiKey).toBe("corp-key")
      expect(config.provider?.["corp-gateway"]?.models?.["claude-sonnet"]?.cost).toEqual({
        input: 3,
        output: 15,
        cache_read: 0.3
      })
      expect(Object.entries(config.permission ?? {})).toEqual([
        ["edit", "deny"],
        ["bash", { "*": "ask", "git *": "allow", "curl *": "deny" }],
        ["webfetch", "deny"]
      ])
      expect(info.origin(["permission", "webfetch"])).toEqual({ file, key: "tools.webfetch", line: 32 })
      expect("mode" in config).toBe(false)
      expect(config.agent?.review).toMatchObject({ mode: "primary", temperature: 0.1, description: "Read-only review mode" })
      expect(config.agent?.architect).toMatchObject({ mode: "primary", steps: 25 })
      expect(config.agent?.architect?.prompt).toMatch(/^# Architect\n\nPropose designs/)
      expect(config.agent?.build?.steps).toBe(50)
      expect(config.mcp?.jira).toMatchObject({ oauth: false, headers: { Authorization: "Bearer jt" } })
      expect(config.mcp?.["legacy-search"]).toEqual({ enabled: false })
      expect(config.experimental).toEqual({ mcp_timeout: 30000 })
      expect(info.warnings.map((w) => w.key)).toEqual([
        "autoshare",
        "enterprise",
        "layout",
        "logLevel",
        "experimental.openTelemetry"
      ])
    })))

  it.live("local and gateway models with OpenCode's models.dev fields, an agent on a variant", () =>
    Effect.scoped(Effect.gen(function*() {
      const { box, info } = yield* withFixture("local-models", { OPENROUTER_API_KEY: "sk-or-test" })
      const { config } = info
      expect(info.warnings).toEqual([])
      const qwen = config.provider?.lmstudio?.models?.["qwen3-coder-30b"]
      expect(qwen).toMatchObject({ family: "qwen3", release_date: "2025-07-31", modalities: { input: ["text"], output: ["text"] } })
      const r1 = config.provider?.openrouter?.models?.["deepseek/deepseek-r1"]
      expect(r1?.variants?.high).toEqual({ reasoningEffort: "high" })
      expect(r1?.cost?.context_over_200k).toEqual({ input: 0.8, output: 4 })

      // the agents and their decisions
      const instance = box.instance({ OPENROUTER_API_KEY: "sk-or-test" }, box.project)
      const agents = makeAgentRegistry(instance, info)
      const deep = yield* agents.get("deep-think")
      expect(deep).toMatchObject({ mode: "subagent", variant: "high", model: { providerID: "openrouter", modelID: "deepseek/deepseek-r1" } })
      expect(Permission.evaluate("edit", "src/a.ts", deep.permission).action).toBe("deny")
      expect(Permission.evaluate("bash", "git log --oneline", deep.permission).action).toBe("allow")
      expect(Permission.evaluate("bash", "make", deep.permission).action).toBe("ask")
      const build = yield* agents.get("build")
      expect(Permission.evaluate("bash", "git push origin main", build.permission).action).toBe("ask")
      expect(Permission.evaluate("external_directory", path.join(instance.home, "src", "lib", "x.ts"), build.permission).action).toBe("allow")

      // the configured local model resolves with its limits
      const providers = yield* Effect.provide(
        ProviderRegistry,
        ProviderRegistry.layer.pipe(Layer.provide(ConfigService.layerFromInfo(info)), Layer.provide(Layer.succeed(Instance, instance)))
      )
      const model = yield* providers.resolve(yield* providers.defaultModel())
      expect(model.info).toMatchObject({ providerID: "lmstudio", modelID: "qwen3-coder-30b", name: "Qwen3 Coder 30B" })
      expect(model.info.limit).toEqual({ context: 262144, output: 65536 })
    })))
})
