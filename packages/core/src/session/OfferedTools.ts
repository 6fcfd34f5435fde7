// Which tools a step offers the model, answered in one place: the registry's built-ins (by the
// agent's rules and the model), the task tool when a subagent may be started, and the MCP
// servers' tools connected by now; each heeds the rules and the prompt's `{tool: false}` switches.
import type { Agent, PermissionRuleset, UserMessage } from "@agent/domain"
import { Effect } from "effect"
import type { ResolvedModel } from "../llm/ProviderRegistry.js"
import * as Permission from "../permission/Permission.js"
import type * as Tool from "../tool/Tool.js"
import type { LoopDeps } from "./LoopDeps.js"
import { subagentsFor } from "./Subagent.js"

export const offeredTools = (deps: LoopDeps, input: {
  readonly agent: Agent
  readonly model: ResolvedModel
  readonly user: UserMessage
  readonly step: number
  /** The agent's and the session's rules with the enterprise policy's last. */
  readonly rules: PermissionRuleset
  readonly task: Tool.Tool
}): Effect.Effect<ReadonlyArray<Tool.Tool>> =>
  Effect.gen(function*() {
    const { agent, rules } = input
    const disabled = Object.entries(input.user.tools ?? {}).filter(([, on]) => !on).map(([id]) => id)
    const registered = yield* deps.registry.forAgent({ agent, model: input.model.info, ruleset: rules, disabled })
    const offerTask = !Permission.disabled(["task"], rules).has("task") && !disabled.includes("task") &&
      (yield* subagentsFor(deps, agent)).length > 0
    const visibleSkills = yield* deps.skills.forAgent(agent)
    // MCP servers get a short grace period on the first step; later ones join on later steps.
    if (input.step === 1) yield* deps.mcp.ready()
    const fromServers = yield* deps.mcp.tools()
    const mcpTools = fromServers.length > 0 ? [...fromServers, ...deps.mcpResourceTools] : []
    const hiddenMcp = Permission.disabled(mcpTools.map((tool) => tool.id), rules)
    const offered = [
      ...registered.filter((tool) => tool.id !== "skill" || visibleSkills.length > 0),
      ...mcpTools.filter((tool) => !hiddenMcp.has(tool.id) && !disabled.includes(tool.id))
    ]
    return offerTask ? [...offered, input.task] : offered
  })
