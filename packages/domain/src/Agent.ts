import { Schema } from "effect"
import { PermissionRuleset } from "./Permission.js"
import { SandboxConfig } from "./Sandbox.js"

export const AgentMode = Schema.Literal("subagent", "primary", "all")
export type AgentMode = typeof AgentMode.Type

export const ModelRef = Schema.Struct({
  providerID: Schema.String,
  modelID: Schema.String
})
export type ModelRef = typeof ModelRef.Type

/** Parses `provider/model`; the model id may itself contain slashes (`openrouter/anthropic/claude`). */
export const parseModelRef = (value: string): ModelRef | undefined => {
  const slash = value.indexOf("/")
  if (slash <= 0 || slash === value.length - 1) return undefined
  return { providerID: value.slice(0, slash), modelID: value.slice(slash + 1) }
}

export class Agent extends Schema.Class<Agent>("Agent")({
  name: Schema.String,
  description: Schema.optional(Schema.String),
  mode: AgentMode,
  native: Schema.Boolean,
  hidden: Schema.optional(Schema.Boolean),
  topP: Schema.optional(Schema.Number),
  temperature: Schema.optional(Schema.Number),
  color: Schema.optional(Schema.String),
  permission: PermissionRuleset,
  model: Schema.optional(ModelRef),
  variant: Schema.optional(Schema.String),
  prompt: Schema.optional(Schema.String),
  options: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  steps: Schema.optional(Schema.Number),
  /** Run guards (wall clock, stall, tokens, cost), from config `limits` and `agent.<name>.limits`. */
  limits: Schema.optional(
    Schema.Struct({
      duration: Schema.optional(Schema.Number),
      stall: Schema.optional(Schema.Number),
      tokens: Schema.optional(Schema.Number),
      cost: Schema.optional(Schema.Number)
    })
  ),
  /** The configured sandbox keys: the top-level `sandbox`, then `agent.<name>.sandbox` over it. */
  sandbox: Schema.optional(SandboxConfig),
  /** The file that defined or last changed this agent, when it came from configuration. */
  source: Schema.optional(Schema.String)
}) {}

export class AgentNotFound extends Schema.TaggedError<AgentNotFound>()("AgentNotFound", {
  name: Schema.String,
  available: Schema.Array(Schema.String)
}) {
  override get message() {
    return `Agent "${this.name}" not found. Available agents: ${this.available.join(", ")}`
  }
}

/** `default_agent` names something that cannot be the default, or no agent can be. */
export class DefaultAgentError extends Schema.TaggedError<DefaultAgentError>()("DefaultAgentError", {
  name: Schema.optional(Schema.String),
  reason: Schema.Literal("not_found", "subagent", "hidden", "none"),
  /** Where `default_agent` was set: `file:line`. */
  source: Schema.optional(Schema.String),
  /** The agents that could be the default. */
  primary: Schema.optional(Schema.Array(Schema.String))
}) {
  override get message() {
    const where = this.source === undefined ? "" : `${this.source}: `
    const choices = this.primary === undefined ? "" : ` (primary agents: ${this.primary.join(", ") || "none"})`
    switch (this.reason) {
      case "not_found":
        return `${where}default agent "${this.name}" not found${choices}`
      case "subagent":
        return `${where}default agent "${this.name}" is a subagent${choices}`
      case "hidden":
        return `${where}default agent "${this.name}" is hidden${choices}`
      case "none":
        return "no primary visible agent found"
    }
  }
}
