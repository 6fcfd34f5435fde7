import { ScriptedModel, type ScriptedTurn, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { AgentGenerator } from "../src/agent/AgentGenerator.js"
import { makeAgentRegistry } from "../src/agent/AgentRegistry.js"
import { loadConfig } from "../src/config/ConfigService.js"
import * as Permission from "../src/permission/Permission.js"

const { text, toolCall } = ScriptedModel

const definition = {
  identifier: "Test Writer!",
  whenToUse: "Use this agent when new code needs unit tests: after a function or module is written.",
  systemPrompt: "You are a test engineer.\n\nYou will: read the code under test; write focused tests.\n"
}

const runtimeWith = (turns: ReadonlyArray<ScriptedTurn>, files: Record<string, string | object> = {}) =>
  Effect.gen(function*() {
    const model = ScriptedModel.make(turns)
    const runtime = yield* TestRuntime.make({ model, files })
    return { model, runtime }
  })

/** The agents as the next start of the runtime sees them. */
const reload = (runtime: TestRuntime.TestRuntime) =>
  Effect.map(loadConfig(runtime.box.instance), (info) => makeAgentRegistry(runtime.box.instance, info))

describe("agent generation", () => {
  it.scopedLive("writes a markdown agent with the chosen mode and tools that the registry then loads", () =>
    Effect.gen(function*() {
      const { model, runtime } = yield* runtimeWith([[toolCall("agent_definition", definition)]])
      const created = yield* Effect.flatMap(AgentGenerator, (generator) =>
        generator.create({ description: "writes unit tests for new code", mode: "subagent", tools: ["read", "grep", "glob", "edit"] })
      ).pipe(Effect.provide(runtime.layer))

      const file = runtime.box.path("project/.agent/agent/test-writer.md")
      expect(created).toEqual({
        name: "test-writer",
        file,
        description: definition.whenToUse,
        mode: "subagent",
        prompt: definition.systemPrompt.trim(),
        denied: ["bash", "list", "webfetch", "task", "todowrite", "todoread", "skill"]
      })
      expect(fs.readFileSync(file, "utf8")).toBe(
        "---\n" +
          "description: \"Use this agent when new code needs unit tests: after a function or module is written.\"\n" +
          "mode: subagent\n" +
          "permission:\n  bash: deny\n  list: deny\n  webfetch: deny\n  task: deny\n  todowrite: deny\n  todoread: deny\n  skill: deny\n" +
          "---\n\n" +
          "You are a test engineer.\n\nYou will: read the code under test; write focused tests.\n"
      )

      const agent = yield* (yield* reload(runtime)).get("test-writer")
      expect(agent).toMatchObject({ mode: "subagent", description: definition.whenToUse, prompt: definition.systemPrompt.trim(), source: file })
      expect(Permission.evaluate("bash", "ls", agent.permission).action).toBe("deny")
      expect(Permission.evaluate("edit", "src/a.ts", agent.permission).action).toBe("allow")
      expect(Permission.evaluate("read", "src/a.ts", agent.permission).action).toBe("allow")

      // The model was made to answer through the tool, knowing which names are taken.
      const call = model.calls[0]!
      expect(call.toolChoice).toEqual({ type: "required" })
      expect(call.tools?.map((tool) => tool.name)).toEqual(["agent_definition"])
      const request = ScriptedModel.lastUserText(call)
      expect(request).toContain("writes unit tests for new code")
      expect(request).toMatch(/must not be used as the identifier: build, .*explore.*general.*plan/)
    }))

  it.scopedLive("a name that is taken gets a number; an existing file is never overwritten", () =>
    Effect.gen(function*() {
      const existing = "---\ndescription: mine\n---\nMy reviewer.\n"
      const { runtime } = yield* runtimeWith(
        [[toolCall("agent_definition", { ...definition, identifier: "explore" })], [toolCall("agent_definition", { ...definition, identifier: "reviewer" })]],
        { "project/.agent/agent/reviewer.md": existing }
      )
      const [first, second] = yield* Effect.flatMap(AgentGenerator, (generator) =>
        Effect.all([generator.create({ description: "explores" }), generator.create({ description: "reviews" })])
      ).pipe(Effect.provide(runtime.layer))
      expect(first.name).toBe("explore-2")
      expect(second.name).toBe("reviewer-2")
      expect(fs.readFileSync(runtime.box.path("project/.agent/agent/reviewer.md"), "utf8")).toBe(existing)
      const registry = yield* reload(runtime)
      expect((yield* registry.get("explore-2")).mode).toBe("all")
      expect((yield* registry.get("explore")).native).toBe(true)
      // Without a tool choice the agent keeps every tool.
      expect(fs.readFileSync(second.file, "utf8")).not.toContain("permission")
    }))

  it.scopedLive("--global writes to the global config dir; a JSON answer in text is accepted", () =>
    Effect.gen(function*() {
      const { runtime } = yield* runtimeWith([[text("Here it is:\n```json\n" + JSON.stringify({ ...definition, identifier: "sql-checker" }) + "\n```")]])
      const created = yield* Effect.flatMap(AgentGenerator, (generator) =>
        generator.create({ description: "checks SQL migrations", global: true, mode: "primary" })
      ).pipe(Effect.provide(runtime.layer))
      expect(created.file).toBe(path.join(runtime.box.instance.paths.config, "agent", "sql-checker.md"))
      expect((yield* (yield* reload(runtime)).get("sql-checker")).mode).toBe("primary")
    }))

  it.scopedLive("an answer without a definition, or with an empty field, is an error and writes nothing", () =>
    Effect.gen(function*() {
      const { runtime } = yield* runtimeWith(["I would rather not.", [toolCall("agent_definition", { ...definition, systemPrompt: "  " })]])
      const [refused, empty] = yield* Effect.flatMap(AgentGenerator, (generator) =>
        Effect.all([Effect.flip(generator.create({ description: "a" })), Effect.flip(generator.create({ description: "b" }))])
      ).pipe(Effect.provide(runtime.layer))
      expect(refused.message).toBe("Agent generation failed: the model did not answer with an agent definition; it said: I would rather not.")
      expect(empty.message).toBe("Agent generation failed: the model left systemPrompt empty; try again with a more detailed description")
      expect(fs.existsSync(runtime.box.path("project/.agent/agent"))).toBe(false)
    }))

  it.scopedLive("unknown tools are refused before the model is asked", () =>
    Effect.gen(function*() {
      const { model, runtime } = yield* runtimeWith([])
      const error = yield* Effect.flatMap(AgentGenerator, (generator) =>
        Effect.flip(generator.create({ description: "x", tools: ["read", "shell", "net"] }))
      ).pipe(Effect.provide(runtime.layer))
      expect(error.message).toMatch(/^Agent generation failed: unknown tools shell, net; choose from bash, read, write, edit, apply_patch, glob/)
      expect(model.calls).toHaveLength(0)
    }))
})
