import {
  Agent,
  type AgentConfig,
  AgentNotFound,
  DefaultAgentError,
  parseModelRef,
  type PermissionConfig,
  type PermissionRuleset
} from "@agent/domain"
import { Context, Effect, Layer } from "effect"
import * as path from "node:path"
import { ConfigService } from "../config/ConfigService.js"
import * as Prompts from "../runtime/Prompts.js"
import { Instance, type InstanceInfo } from "../runtime/Instance.js"
import * as Permission from "../permission/Permission.js"
import { mergeOptions } from "../llm/ProviderOptions.js"
import { toolOutputDirectory } from "../tool/Truncation.js"

/** Where large tool outputs are saved; every agent may read them back. */
export const toolOutputGlob = (instance: InstanceInfo) => path.join(toolOutputDirectory(instance), "*")

/** The ruleset every agent starts from. */
export const defaultRules = (instance: InstanceInfo): PermissionRuleset =>
  Permission.rules(
    "default",
    "built-in defaults",
    {
      "*": "allow",
      doom_loop: "ask",
      // Leaving the OS sandbox is asked of a person unless a rule says otherwise (docs/sandbox.md).
      sandbox_escape: "ask",
      external_directory: {
        "*": "ask",
        [toolOutputGlob(instance)]: "allow",
        [path.join(instance.paths.tmp, "*")]: "allow"
      },
      question: "deny",
      plan_enter: "deny",
      plan_exit: "deny",
      read: { "*": "allow", "*.env": "ask", "*.env.*": "ask", "*.env.example": "allow" }
    },
    instance.home
  )

interface BuiltIn {
  readonly name: string
  readonly description?: string
  readonly mode: Agent["mode"]
  readonly hidden?: boolean
  readonly prompt?: string
  readonly temperature?: number
  readonly rules: Exclude<PermissionConfig, string>
}

const builtIns = (instance: InstanceInfo): ReadonlyArray<BuiltIn> => {
  const plans = path.join(instance.paths.data, "plans")
  const externalWhitelist = {
    "*": "ask",
    [toolOutputGlob(instance)]: "allow",
    [path.join(instance.paths.tmp, "*")]: "allow"
  } as const
  return [
    {
      name: "build",
      description: "The default agent. Executes tools based on configured permissions.",
      mode: "primary",
      rules: { question: "allow", plan_enter: "allow" }
    },
    {
      name: "plan",
      description: "Plan mode. Disallows all edit tools.",
      mode: "primary",
      rules: {
        question: "allow",
        plan_exit: "allow",
        external_directory: { [path.join(plans, "*")]: "allow" },
        edit: {
          "*": "deny",
          ".opencode/plans/*.md": "allow",
          ".agent/plans/*.md": "allow",
          [path.join(path.relative(instance.worktree, plans), "*.md")]: "allow"
        },
        // general can edit files, which would defeat plan mode.
        task: { general: "deny" }
      }
    },
    {
      name: "general",
      description:
        "General-purpose agent for researching complex questions and executing multi-step tasks. Use it to run several units of work in parallel.",
      mode: "subagent",
      rules: { todowrite: "deny" }
    },
    {
      name: "explore",
      description:
        'Fast read-only agent for exploring codebases. Use it to find files by patterns (e.g. "src/components/**/*.tsx"), search code for keywords (e.g. "API endpoints"), or answer questions about how the codebase works. Say how thorough it should be: "quick", "medium" or "very thorough".',
      mode: "subagent",
      prompt: Prompts.read("agent/explore.txt"),
      rules: {
        "*": "deny",
        grep: "allow",
        glob: "allow",
        list: "allow",
        bash: "allow",
        webfetch: "allow",
        websearch: "allow",
        // Reading stays allowed, but secrets still ask, as for every other agent.
        read: { "*": "allow", "*.env": "ask", "*.env.*": "ask", "*.env.example": "allow" },
        external_directory: externalWhitelist
      }
    },
    { name: "compaction", mode: "primary", hidden: true, prompt: Prompts.read("agent/compaction.txt"), rules: { "*": "deny" } },
    {
      name: "title",
      mode: "primary",
      hidden: true,
      prompt: Prompts.read("agent/title.txt"),
      temperature: 0.5,
      rules: { "*": "deny" }
    },
    { name: "summary", mode: "primary", hidden: true, prompt: Prompts.read("agent/summary.txt"), rules: { "*": "deny" } }
  ]
}

const EDIT_TOOLS = new Set(["write", "edit", "patch", "apply_patch", "multiedit"])

/** Legacy `tools: {name: bool}` plus `permission`, with explicit permission keys on top. */
const agentPermissionConfig = (entry: AgentConfig): PermissionConfig | undefined => {
  if (!entry.tools) return entry.permission
  const fromTools: Record<string, "allow" | "deny"> = {}
  for (const [tool, enabled] of Object.entries(entry.tools)) {
    fromTools[EDIT_TOOLS.has(tool) ? "edit" : tool] = enabled ? "allow" : "deny"
  }
  const explicit = typeof entry.permission === "string" ? { "*": entry.permission } : entry.permission
  return Object.assign(fromTools, explicit)
}

export interface AgentRegistryShape {
  /** Every agent, hidden ones included: the default agent first, then by name. */
  readonly list: () => Effect.Effect<ReadonlyArray<Agent>>
  readonly get: (name: string) => Effect.Effect<Agent, AgentNotFound>
  /** `default_agent`, or the first primary, visible agent. */
  readonly defaultAgent: () => Effect.Effect<Agent, DefaultAgentError>
}

export class AgentRegistry extends Context.Tag("@agent/core/AgentRegistry")<AgentRegistry, AgentRegistryShape>() {
  static readonly layer: Layer.Layer<AgentRegistry, never, ConfigService | Instance> = Layer.effect(
    AgentRegistry,
    Effect.gen(function*() {
      const instance = yield* Instance
      const info = yield* (yield* ConfigService).info()
      return makeAgentRegistry(instance, info)
    })
  )
}

/** An agent a user may run at the top level: not a subagent, not an internal (hidden) one. */
export const isPrimary = (agent: Agent): boolean => agent.mode !== "subagent" && !agent.hidden

/** Built-in agents merged with the user's config; pure, so tests can call it directly. */
export const makeAgentRegistry = (
  instance: InstanceInfo,
  info: Pick<import("../config/ConfigInfo.js").ConfigInfo, "config" | "origin">
): AgentRegistryShape => {
  const { config } = info
  const defaults = defaultRules(instance)
  const user = Permission.fromConfig(config.permission, { origin: info.origin, home: instance.home })
  const agents = new Map<string, Agent>()

  for (const builtIn of builtIns(instance)) {
    agents.set(
      builtIn.name,
      new Agent({
        name: builtIn.name,
        mode: builtIn.mode,
        native: true,
        permission: Permission.merge(
          defaults,
          Permission.rules("agent", `agent ${builtIn.name}`, builtIn.rules, instance.home),
          user
        ),
        options: {},
        ...(config.limits ? { limits: config.limits } : {}),
        ...(config.sandbox ? { sandbox: config.sandbox } : {}),
        ...(builtIn.description ? { description: builtIn.description } : {}),
        ...(builtIn.hidden ? { hidden: true } : {}),
        ...(builtIn.prompt ? { prompt: builtIn.prompt } : {}),
        ...(builtIn.temperature !== undefined ? { temperature: builtIn.temperature } : {})
      })
    )
  }

  for (const [name, entry] of Object.entries(config.agent ?? {})) {
    if (entry.disable) {
      agents.delete(name)
      continue
    }
    const base =
      agents.get(name) ??
      new Agent({
        name,
        mode: "all",
        native: false,
        permission: Permission.merge(defaults, user),
        options: {},
        ...(config.limits ? { limits: config.limits } : {}),
        ...(config.sandbox ? { sandbox: config.sandbox } : {})
      })
    const model = entry.model === undefined ? undefined : parseModelRef(entry.model)
    const source = info.origin(["agent", name])?.file
    const permissionConfig = agentPermissionConfig(entry)
    const own = Permission.fromConfig(permissionConfig, {
      origin: info.origin,
      root: ["agent", name, "permission"],
      home: instance.home
    })
    agents.set(
      name,
      new Agent({
        ...base,
        name: entry.name ?? base.name,
        mode: entry.mode ?? base.mode,
        permission: Permission.merge(base.permission, own),
        options: mergeOptions(base.options, entry.options ?? {}),
        ...(model ? { model } : {}),
        ...(entry.variant !== undefined ? { variant: entry.variant } : {}),
        ...(entry.prompt !== undefined ? { prompt: entry.prompt } : {}),
        ...(entry.description !== undefined ? { description: entry.description } : {}),
        ...(entry.temperature !== undefined ? { temperature: entry.temperature } : {}),
        ...(entry.top_p !== undefined ? { topP: entry.top_p } : {}),
        ...(entry.color !== undefined ? { color: entry.color } : {}),
        ...(entry.hidden !== undefined ? { hidden: entry.hidden } : {}),
        ...((entry.steps ?? entry.maxSteps) !== undefined ? { steps: (entry.steps ?? entry.maxSteps)! } : {}),
        ...(entry.limits ? { limits: { ...base.limits, ...entry.limits } } : {}),
        ...(entry.sandbox ? { sandbox: { ...base.sandbox, ...entry.sandbox } } : {}),
        ...(source ? { source } : {})
      })
    )
  }

  // Truncated tool output must stay readable by every agent, unless one explicitly denies it.
  const truncated = toolOutputGlob(instance)
  for (const [name, agent] of agents) {
    const explicitDeny = agent.permission.some(
      (rule) => rule.permission === "external_directory" && rule.pattern === truncated && rule.action === "deny"
    )
    if (explicitDeny) continue
    agents.set(
      name,
      new Agent({
        ...agent,
        permission: [
          ...agent.permission,
          { permission: "external_directory", pattern: truncated, action: "allow", source: { layer: "default", note: "tool output" } }
        ]
      })
    )
  }

  const pickDefault = (): Agent | DefaultAgentError => {
    const wanted = config.default_agent
    if (wanted !== undefined) {
      const agent = agents.get(wanted)
      const reason = !agent ? "not_found" : agent.mode === "subagent" ? "subagent" : agent.hidden ? "hidden" : undefined
      if (reason === undefined) return agent!
      const origin = info.origin(["default_agent"])
      return new DefaultAgentError({
        name: wanted,
        reason,
        ...(origin ? { source: origin.line === undefined ? origin.file : `${origin.file}:${origin.line}` } : {}),
        primary: [...agents.values()].filter(isPrimary).map((agent) => agent.name)
      })
    }
    for (const agent of agents.values()) if (isPrimary(agent)) return agent
    return new DefaultAgentError({ reason: "none" })
  }

  const list = (): ReadonlyArray<Agent> => {
    const chosen = pickDefault()
    const first = chosen instanceof Agent ? chosen.name : "build"
    return [...agents.values()].sort((a, b) =>
      a.name === first ? -1 : b.name === first ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0
    )
  }

  return {
    list: Effect.fn("AgentRegistry.list")(function*() {
      return list()
    }),
    get: Effect.fn("AgentRegistry.get")(function*(name: string) {
      const agent = agents.get(name)
      if (!agent) return yield* new AgentNotFound({ name, available: [...agents.keys()] })
      return agent
    }),
    defaultAgent: Effect.fn("AgentRegistry.defaultAgent")(function*() {
      const chosen = pickDefault()
      if (chosen instanceof Agent) return chosen
      return yield* chosen
    })
  }
}
