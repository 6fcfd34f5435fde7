import { Agent, AgentNotFound, DefaultAgentError, type ToolPart } from "@agent/domain"
import { ScriptedModel, TestInstance, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as path from "node:path"
import { AgentRegistry, toolOutputGlob } from "../src/agent/AgentRegistry.js"
import { ConfigService } from "../src/config/ConfigService.js"
import { Instance } from "../src/runtime/Instance.js"
import * as Permission from "../src/permission/Permission.js"
import { SessionLoop } from "../src/session/SessionLoop.js"
import { SessionStore } from "../src/store/SessionStore.js"

/** An AgentRegistry over a sandbox holding `files`, built from the real config loader. */
const registryWith = (files: TestInstance.TestInstanceOptions["files"] = {}) =>
  Effect.gen(function*() {
    const box = yield* TestInstance.sandbox({ files })
    const context = yield* Layer.build(
      AgentRegistry.layer.pipe(Layer.provideMerge(ConfigService.layer), Layer.provideMerge(Layer.succeed(Instance, box.instance)))
    )
    return { registry: Effect.runSync(Effect.provide(AgentRegistry, context)), box }
  })

const decide = (agent: Agent, permission: string, pattern: string) =>
  Permission.evaluate(permission, pattern, agent.permission).action

describe("AgentRegistry built-ins", () => {
  it.scoped("has the seven built-in agents with their modes", () =>
    Effect.gen(function*() {
      const { registry } = yield* registryWith()
      const agents = yield* registry.list()
      expect(agents.map((agent) => [agent.name, agent.mode, agent.hidden ?? false])).toEqual([
        ["build", "primary", false],
        ["compaction", "primary", true],
        ["explore", "subagent", false],
        ["general", "subagent", false],
        ["plan", "primary", false],
        ["summary", "primary", true],
        ["title", "primary", true]
      ])
      expect(agents.every((agent) => agent.native)).toBe(true)
      expect((yield* registry.get("title")).temperature).toBe(0.5)
      expect((yield* registry.get("explore")).prompt).toMatch(/read-only/)
      expect((yield* registry.get("compaction")).prompt?.length).toBeGreaterThan(100)
      expect((yield* registry.get("build")).prompt).toBeUndefined()
    }))

  it.scoped("build may do everything except the defaults' asks", () =>
    Effect.gen(function*() {
      const { box, registry } = yield* registryWith()
      const build = yield* registry.get("build")
      expect(decide(build, "bash", "rm -rf dist")).toBe("allow")
      expect(decide(build, "edit", "src/a.ts")).toBe("allow")
      expect(decide(build, "question", "*")).toBe("allow")
      expect(decide(build, "plan_exit", "*")).toBe("deny")
      expect(decide(build, "doom_loop", "read")).toBe("ask")
      expect(decide(build, "read", "/p/.env")).toBe("ask")
      expect(decide(build, "read", "/p/.env.local")).toBe("ask")
      expect(decide(build, "read", "/p/.env.example")).toBe("allow")
      expect(decide(build, "external_directory", "/etc/*")).toBe("ask")
      const saved = path.join(box.instance.paths.data, "tool-output", "tool_123")
      expect(decide(build, "external_directory", saved)).toBe("allow")
    }))

  it.scoped("plan may not edit, except plan files", () =>
    Effect.gen(function*() {
      const { box, registry } = yield* registryWith()
      const plan = yield* registry.get("plan")
      expect(decide(plan, "edit", "src/index.ts")).toBe("deny")
      expect(decide(plan, "edit", ".agent/plans/refactor.md")).toBe("allow")
      expect(decide(plan, "edit", ".opencode/plans/refactor.md")).toBe("allow")
      expect(decide(plan, "edit", ".agent/plans/refactor.txt")).toBe("deny")
      expect(decide(plan, "external_directory", path.join(box.instance.paths.data, "plans", "x.md"))).toBe("allow")
      expect(decide(plan, "task", "general")).toBe("deny")
      expect(decide(plan, "task", "explore")).toBe("allow")
      expect(decide(plan, "plan_exit", "*")).toBe("allow")
      expect(Permission.disabled(["edit", "write", "bash"], plan.permission)).toEqual(new Set())
    }))

  it.scoped("explore only reads, and hidden agents may do nothing", () =>
    Effect.gen(function*() {
      const { registry } = yield* registryWith()
      const explore = yield* registry.get("explore")
      expect(Permission.disabled(["bash", "read", "glob", "grep", "list", "edit", "write", "task", "todowrite"], explore.permission)).toEqual(
        new Set(["edit", "write", "task", "todowrite"])
      )
      expect(decide(explore, "read", "/p/.env")).toBe("ask")
      const general = yield* registry.get("general")
      expect(Permission.disabled(["todowrite", "bash"], general.permission)).toEqual(new Set(["todowrite"]))
      for (const name of ["compaction", "title", "summary"]) {
        const hidden = yield* registry.get(name)
        expect(Permission.disabled(["bash", "read", "edit"], hidden.permission).size).toBe(3)
      }
    }))
})

describe("AgentRegistry with user config", () => {
  it.scoped("user rules apply to every agent, after the agent's own", () =>
    Effect.gen(function*() {
      const { registry } = yield* registryWith({
        "project/agent.json": { permission: { edit: "ask", bash: { "*": "allow", "git push *": "deny" } } }
      })
      const plan = yield* registry.get("plan")
      // user's `edit: ask` comes after plan's own `edit: deny`, so it wins (OpenCode's order)
      expect(decide(plan, "edit", "src/a.ts")).toBe("ask")
      const build = yield* registry.get("build")
      expect(decide(build, "bash", "git push origin main")).toBe("deny")
      expect(decide(build, "bash", "git status")).toBe("allow")
    }))

  it.scoped("agent entries override field by field and add rules after the user's", () =>
    Effect.gen(function*() {
      const { registry } = yield* registryWith({
        "project/agent.json": {
          permission: { webfetch: "deny" },
          agent: {
            build: {
              model: "anthropic/claude-sonnet-4-5",
              temperature: 0.2,
              top_p: 0.9,
              steps: 25,
              color: "#ff8800",
              description: "My build",
              permission: { webfetch: "allow" },
              reasoningEffort: "high"
            },
            plan: { maxSteps: 7, options: { a: { b: 1 } } }
          }
        }
      })
      const build = yield* registry.get("build")
      expect(build.model).toEqual({ providerID: "anthropic", modelID: "claude-sonnet-4-5" })
      expect([build.temperature, build.topP, build.steps, build.color, build.description]).toEqual([0.2, 0.9, 25, "#ff8800", "My build"])
      expect(build.options).toEqual({ reasoningEffort: "high" })
      expect(build.native).toBe(true)
      expect(decide(build, "webfetch", "https://example.com")).toBe("allow")
      expect((yield* registry.get("general")).permission.some((rule) => rule.permission === "webfetch" && rule.action === "allow")).toBe(false)
      const plan = yield* registry.get("plan")
      expect(plan.steps).toBe(7)
      expect(plan.options).toEqual({ a: { b: 1 } })
      expect(plan.mode).toBe("primary")
    }))

  it.scoped("new agents default to mode all; disable removes an agent", () =>
    Effect.gen(function*() {
      const { registry } = yield* registryWith({
        "project/agent.json": {
          agent: { reviewer: { description: "Reviews code", prompt: "Review carefully." }, general: { disable: true } }
        }
      })
      const reviewer = yield* registry.get("reviewer")
      expect(reviewer).toMatchObject({ name: "reviewer", mode: "all", native: false, prompt: "Review carefully." })
      expect(decide(reviewer, "bash", "ls")).toBe("allow")
      expect(decide(reviewer, "read", ".env")).toBe("ask")
      const error = yield* Effect.flip(registry.get("general"))
      expect(error).toBeInstanceOf(AgentNotFound)
      expect(error.message).toContain('Agent "general" not found')
    }))

  it.scoped("legacy tools become permissions, and explicit permission keys win", () =>
    Effect.gen(function*() {
      const { registry } = yield* registryWith({
        "project/agent.json": {
          agent: {
            docs: {
              mode: "subagent",
              tools: { write: false, bash: false, webfetch: true },
              permission: { bash: { "*": "deny", "ls *": "allow" } }
            }
          }
        }
      })
      const docs = yield* registry.get("docs")
      expect(Permission.disabled(["edit", "write", "bash", "webfetch"], docs.permission)).toEqual(new Set(["edit", "write"]))
      expect(decide(docs, "bash", "ls -la")).toBe("allow")
      expect(decide(docs, "bash", "cat x")).toBe("deny")
    }))

  it.scoped("markdown agents, nested names, and provenance of their rules", () =>
    Effect.gen(function*() {
      const { box, registry } = yield* registryWith({
        "project/.agent/agents/frontend/react.md": [
          "---",
          "description: React specialist",
          "mode: subagent",
          "model: openai/gpt-5",
          "permission:",
          "  edit:",
          "    \"src/**\": allow",
          "    \"*\": deny",
          "---",
          "You write React components.",
          ""
        ].join("\n")
      })
      const react = yield* registry.get("frontend/react")
      expect(react).toMatchObject({ name: "frontend/react", mode: "subagent", description: "React specialist", prompt: "You write React components." })
      expect(react.model).toEqual({ providerID: "openai", modelID: "gpt-5" })
      const explanation = Permission.explain("edit", "src/App.tsx", react.permission)
      // `*: deny` was written last, so it wins even for src/
      expect(explanation.rule.action).toBe("deny")
      expect(explanation.rule.source?.file).toBe(box.path("project/.agent/agents/frontend/react.md"))
      expect(react.source).toBe(box.path("project/.agent/agents/frontend/react.md"))
    }))

  it.scoped("the tool-output allow is appended unless the agent denies exactly it", () =>
    Effect.gen(function*() {
      const { box, registry } = yield* registryWith({
        "project/agent.json": {
          agent: { locked: { permission: { external_directory: { "{env:XDG_DATA_HOME}/agent/tool-output/*": "deny" } } } }
        }
      })
      const saved = path.join(box.instance.paths.data, "tool-output", "tool_1")
      const locked = yield* registry.get("locked")
      expect(locked.permission.at(-1)).toMatchObject({ pattern: toolOutputGlob(box.instance), action: "deny" })
      expect(decide(locked, "external_directory", saved)).toBe("deny")
      const build = yield* registry.get("build")
      expect(build.permission.at(-1)).toMatchObject({ pattern: toolOutputGlob(box.instance), action: "allow" })
      expect(decide(build, "external_directory", saved)).toBe("allow")
    }))
})

describe("default agent", () => {
  it.scoped("is build unless configured, and comes first in list()", () =>
    Effect.gen(function*() {
      const { registry } = yield* registryWith({ "project/agent.json": { default_agent: "plan" } })
      expect((yield* registry.defaultAgent()).name).toBe("plan")
      expect((yield* registry.list()).map((agent) => agent.name).slice(0, 2)).toEqual(["plan", "build"])
      const plain = yield* registryWith()
      expect((yield* plain.registry.defaultAgent()).name).toBe("build")
    }))

  it.scoped("OpenCode's three errors: not found, subagent, hidden", () =>
    Effect.gen(function*() {
      const cases = [
        ["nope", 'default agent "nope" not found'],
        ["explore", 'default agent "explore" is a subagent'],
        ["title", 'default agent "title" is hidden']
      ] as const
      for (const [name, message] of cases) {
        const { box, registry } = yield* registryWith({ "project/agent.json": { default_agent: name } })
        const error = yield* Effect.flip(registry.defaultAgent())
        expect(error).toBeInstanceOf(DefaultAgentError)
        // Where it was set, and what could be the default instead.
        expect(error.message).toBe(`${box.path("project/agent.json")}:2: ${message} (primary agents: build, plan)`)
      }
    }))

  it.scoped("without default_agent, the first primary visible agent; none is an error", () =>
    Effect.gen(function*() {
      const { registry } = yield* registryWith({ "project/agent.json": { agent: { build: { disable: true } } } })
      expect((yield* registry.defaultAgent()).name).toBe("plan")
      const none = yield* registryWith({
        "project/agent.json": { agent: { build: { disable: true }, plan: { mode: "subagent" } } }
      })
      const error = yield* Effect.flip(none.registry.defaultAgent())
      expect(error.message).toBe("no primary visible agent found")
    }))
})

describe("defaults in a run", () => {
  const skillFiles = {
    "home/.agents/skills/deploy/SKILL.md": "---\nname: deploy\ndescription: How we deploy\n---\n\nRun the script.\n",
    "home/.agents/skills/deploy/checklist.md": "1. tag\n2. push\n"
  }

  /** The model reads a file of a skill in the home directory, outside the project. */
  const readSkillFile = (files: TestInstance.TestInstanceOptions["files"] = {}) =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        [ScriptedModel.toolCall("read", { filePath: "../home/.agents/skills/deploy/checklist.md" })],
        "Done."
      ])
      const { layer } = yield* TestRuntime.make({ model, files: { ...skillFiles, ...files } })
      return yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({})
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "check" }] })
        expect(outcome.reason).toBe("completed")
        const parts = (yield* store.messages(session.id)).flatMap((message) => message.parts)
        return parts.find((part): part is ToolPart => part.type === "tool")!.state
      }).pipe(Effect.provide(layer))
    })

  it.scopedLive("a skill's folder is readable without a question, unless the user denies outside directories", () =>
    Effect.gen(function*() {
      const allowed = yield* readSkillFile()
      expect(allowed.status).toBe("completed")
      expect(allowed.status === "completed" && allowed.output).toContain("2. push")
      // the skill allow is a default: the user's rule comes after it and wins, as in OpenCode
      const denied = yield* readSkillFile({ "project/agent.json": { permission: { external_directory: "deny" } } })
      expect(denied.status).toBe("error")
      expect(denied.status === "error" && denied.error).toMatch(/^Blocked by the user's permission rules: external_directory/)
    }))
})
