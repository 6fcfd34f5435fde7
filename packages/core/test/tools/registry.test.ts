import { ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { AgentRegistry } from "../../src/agent/AgentRegistry.js"
import type { PermissionConfig } from "@agent/domain"
import * as Permission from "../../src/permission/Permission.js"
import type { ModelInfo } from "../../src/llm/ProviderRegistry.js"
import { ToolRegistry } from "../../src/tool/ToolRegistry.js"

const model = (modelID: string, providerID = "openai"): ModelInfo => ({
  providerID,
  modelID,
  name: modelID,
  limit: { context: 200_000, output: 8_000 }
})

/** The tools the build agent (built-in rules plus `rules`) is offered on `modelID`. */
const offered = (modelID: string, rules: PermissionConfig = {}) =>
  Effect.gen(function*() {
    const registry = yield* ToolRegistry
    const agent = yield* (yield* AgentRegistry).get("build")
    const ruleset = Permission.merge(agent.permission, Permission.fromConfig(rules))
    return (yield* registry.forAgent({ agent, model: model(modelID), ruleset })).map((tool) => tool.id)
  })

describe("ToolRegistry: the built-in tools offered to a model", () => {
  it.scopedLive("GPT models get apply_patch instead of edit and write; others (gpt-4*, gpt-oss, non-GPT) get edit and write", () =>
    Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model: ScriptedModel.make([]) })
      yield* Effect.gen(function*() {
        for (const id of ["gpt-5", "gpt-5-codex", "gpt-5.1-mini", "openai/gpt-5"]) {
          const tools = yield* offered(id)
          expect({ id, apply_patch: tools.includes("apply_patch"), edit: tools.includes("edit"), write: tools.includes("write") })
            .toEqual({ id, apply_patch: true, edit: false, write: false })
        }
        for (const id of ["gpt-4o", "gpt-4.1", "gpt-oss-120b", "claude-sonnet-4-5", "o3", "qwen3-coder"]) {
          const tools = yield* offered(id)
          expect({ id, apply_patch: tools.includes("apply_patch"), edit: tools.includes("edit"), write: tools.includes("write") })
            .toEqual({ id, apply_patch: false, edit: true, write: true })
        }
      }).pipe(Effect.provide(runtime.layer))
    }))

  it.scopedLive("built-ins come in OpenCode's order; `invalid` is never offered; a blanket deny hides a tool", () =>
    Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model: ScriptedModel.make([]) })
      yield* Effect.gen(function*() {
        const all = (yield* (yield* ToolRegistry).all()).map((tool) => tool.id)
        expect(all[0]).toBe("invalid")
        expect(all).toEqual(expect.arrayContaining(["bash", "read", "glob", "grep", "list", "edit", "write", "apply_patch"]))

        const tools = yield* offered("claude-sonnet-4-5")
        expect(tools).not.toContain("invalid")
        const order = ["question", "bash", "read", "glob", "grep", "edit", "write", "webfetch", "todowrite"]
        expect(tools.filter((id) => order.includes(id))).toEqual(order)
        // `edit` covers write and apply_patch too; a deny on one pattern only does not hide anything
        const noEdits = yield* offered("gpt-5", { edit: "deny" })
        expect(noEdits.filter((id) => ["edit", "write", "apply_patch"].includes(id))).toEqual([])
        const noClaudeEdits = yield* offered("claude-sonnet-4-5", { edit: "deny" })
        expect(noClaudeEdits.filter((id) => ["edit", "write", "apply_patch"].includes(id))).toEqual([])
        expect(yield* offered("claude-sonnet-4-5", { bash: { "*": "allow", "rm *": "deny" } })).toContain("bash")
        expect(yield* offered("claude-sonnet-4-5", { bash: "deny" })).not.toContain("bash")
      }).pipe(Effect.provide(runtime.layer))
    }))
})
