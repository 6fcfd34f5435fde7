// Module by module, so the bundle's chunk for this command holds only what it uses.
import { AgentRegistry } from "@agent/core/agent/AgentRegistry"
import type { Agent } from "@agent/domain"
import { Console, Effect, Option } from "effect"
import { describeSource } from "./Explain.js"
import * as Layers from "./Layers.js"
import { clip, shortPath, table } from "./Format.js"

/** Where an agent was defined: its config file, or built in. */
const sourceOf = (agent: Agent) => agent.source ?? (agent.native ? "built-in" : "config")

const summary = (agent: Agent) => ({
  name: agent.name,
  mode: agent.mode,
  hidden: agent.hidden ?? false,
  native: agent.native,
  description: agent.description,
  model: agent.model ? `${agent.model.providerID}/${agent.model.modelID}` : undefined,
  steps: agent.steps,
  source: sourceOf(agent)
})

export const list = (input: { readonly all: boolean; readonly format: "default" | "json" }) =>
  Effect.gen(function*() {
    const agents = (yield* (yield* AgentRegistry).list()).filter((agent) => input.all || !agent.hidden)
    if (input.format === "json") return yield* Console.log(JSON.stringify(agents.map(summary), null, 2))
    const rows = agents.map((agent) => [
      agent.name,
      agent.mode,
      `${agent.hidden ? "(hidden) " : ""}${clip((agent.description ?? "").split("\n")[0] ?? "", 60)}`,
      agent.source ? shortPath(agent.source) : sourceOf(agent)
    ])
    yield* Console.log(table([["NAME", "MODE", "DESCRIPTION", "SOURCE"], ...rows]))
  }).pipe(Effect.provide(Layers.configured))

export const debugAgent = (input: { readonly name: Option.Option<string> }) =>
  Effect.gen(function*() {
    const registry = yield* AgentRegistry
    if (Option.isNone(input.name)) {
      for (const agent of yield* registry.list()) {
        yield* Console.log(`${agent.name.padEnd(20)} ${agent.mode}${agent.hidden ? " (hidden)" : ""}`)
      }
      return
    }
    const found = yield* registry.get(input.name.value)
    yield* Console.log(JSON.stringify(resolved(found), null, 2))
  }).pipe(Effect.provide(Layers.configured))

/**
 * The agent as OpenCode's `debug agent` prints it, field for field (unset fields left out), each
 * permission rule with the file or default that set it, then this runtime's own fields.
 */
const resolved = (agent: Agent) => ({
  name: agent.name,
  description: agent.description,
  mode: agent.mode,
  native: agent.native,
  hidden: agent.hidden,
  topP: agent.topP,
  temperature: agent.temperature,
  color: agent.color,
  permission: agent.permission.map((rule) => ({
    permission: rule.permission,
    pattern: rule.pattern,
    action: rule.action,
    from: describeSource(rule)
  })),
  model: agent.model ? { providerID: agent.model.providerID, modelID: agent.model.modelID } : undefined,
  variant: agent.variant,
  prompt: agent.prompt,
  options: agent.options,
  steps: agent.steps,
  limits: agent.limits,
  sandbox: agent.sandbox,
  source: sourceOf(agent)
})
