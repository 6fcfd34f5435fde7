import type { Agent, PermissionRuleset } from "@agent/domain"
import { Context, Effect, Layer, Schema, type Scope } from "effect"
import { INVALID_TOOL } from "../llm/LLMService.js"
import { type ModelInfo } from "../llm/ProviderRegistry.js"
import * as Permission from "../permission/Permission.js"
import * as Tool from "./Tool.js"

/** Receives calls the model got wrong (unknown tool, unparseable arguments) and says why. */
export const invalidTool = Tool.make({
  id: INVALID_TOOL,
  description: "Do not use.",
  fileEffects: "none",
  parameters: Schema.Struct({ tool: Schema.String, error: Schema.String }),
  execute: (params) =>
    Effect.succeed({
      title: "Invalid tool call",
      output: `The arguments provided to the tool are invalid: ${params.error}`,
      metadata: { tool: params.tool }
    })
})

/** `apply_patch` suits GPT models; everyone else gets `edit` and `write` (OpenCode's rule). */
const usesApplyPatch = (model: ModelInfo) =>
  model.modelID.includes("gpt-") && !model.modelID.includes("oss") && !model.modelID.includes("gpt-4")

export interface ToolRegistryShape {
  /** Every registered tool, `invalid` included. */
  readonly all: () => Effect.Effect<ReadonlyArray<Tool.Tool>>
  readonly get: (id: string) => Effect.Effect<Tool.Tool | undefined>
  /** The tools offered to `agent` on `model`: minus those its rules deny outright. */
  readonly forAgent: (input: {
    readonly agent: Agent
    readonly model: ModelInfo
    /** The agent's rules plus the session's. */
    readonly ruleset: PermissionRuleset
    /** Tools the user switched off for this message (`tools: {name: false}`). */
    readonly disabled?: ReadonlyArray<string>
  }) => Effect.Effect<ReadonlyArray<Tool.Tool>>
  /** Adds tools (custom, MCP); registering an id again replaces the tool. Scoped: removed again on close. */
  readonly register: (tools: ReadonlyArray<Tool.AnyTool>) => Effect.Effect<void, never, Scope.Scope>
}

/** The registry of the built-in tools is `BuiltinTools.layer` (tools/), which builds them and calls `make`. */
export class ToolRegistry extends Context.Tag("@agent/core/ToolRegistry")<ToolRegistry, ToolRegistryShape>() {
  /** A registry holding `invalid` plus the given tools, in order. */
  static readonly make = (tools: ReadonlyArray<Tool.AnyTool>): Layer.Layer<ToolRegistry> =>
    Layer.sync(ToolRegistry, () => makeRegistry(tools))
}

const makeRegistry = (initial: ReadonlyArray<Tool.AnyTool>): ToolRegistryShape => {
  const tools = new Map<string, Tool.Tool>([[invalidTool.id, invalidTool as Tool.Tool]])
  for (const tool of initial) tools.set(tool.id, tool)

  return {
    all: Effect.fn("ToolRegistry.all")(function*() {
      return [...tools.values()]
    }),
    get: Effect.fn("ToolRegistry.get")(function*(id: string) {
      return tools.get(id)
    }),
    // Called every step (or every tool call): untraced, a span would cost more than the call.
    forAgent: Effect.fnUntraced(function*(input) {
      const offered = [...tools.values()].filter((tool) => {
        if (tool.id === INVALID_TOOL) return false
        if (tool.id === "apply_patch") return usesApplyPatch(input.model)
        if (tool.id === "edit" || tool.id === "write") return !usesApplyPatch(input.model) || !tools.has("apply_patch")
        return true
      })
      const hidden = Permission.disabled(offered.map((tool) => tool.id), input.ruleset)
      for (const id of input.disabled ?? []) hidden.add(id)
      return offered.filter((tool) => !hidden.has(tool.id))
    }),
    register: Effect.fn("ToolRegistry.register")((added: ReadonlyArray<Tool.AnyTool>) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          const replaced = added.map((tool) => [tool.id, tools.get(tool.id)] as const)
          for (const tool of added) tools.set(tool.id, tool)
          return replaced
        }),
        (replaced) =>
          Effect.sync(() => {
            for (const [id, previous] of replaced) {
              if (previous) tools.set(id, previous)
              else tools.delete(id)
            }
          })
      ).pipe(Effect.asVoid))
  }
}
