// Module by module, so the bundle's chunk for this command holds only what it uses.
import * as Permission from "@agent/core/Permission"
import { AgentRegistry } from "@agent/core/AgentRegistry"
import { ApprovalStore } from "@agent/core/ApprovalStore"
import { Instance } from "@agent/core/Instance"
import { PermissionPolicy } from "@agent/core/PermissionPolicy"
import type { PermissionAction, PermissionRule } from "@agent/domain"
import { Console, Effect, Option } from "effect"
import * as Layers from "./Layers.js"
import type { ExplainInput } from "./PermissionCommand.js"

/** Where a rule came from: the layer, then the file and key (or the note of a rule made by code). */
export const describeSource = (rule: PermissionRule) => {
  const source = rule.source
  if (!source) return ""
  const where = source.file ? `${source.file}${source.key ? ` (${source.key})` : ""}` : (source.note ?? "")
  return `${source.layer}${where ? `: ${where}` : ""}`
}

const describeRule = (rule: PermissionRule) => {
  const source = describeSource(rule)
  return `${rule.permission} ${JSON.stringify(rule.pattern)} → ${rule.action}${source ? `  [${source}]` : ""}`
}

export interface Decision {
  readonly agent: string
  /** The permission asked for (a tool name given on the command line is mapped to its permission). */
  readonly permission: string
  readonly pattern: string
  /** What happens: allow and deny without asking, or ask the user. */
  readonly action: PermissionAction
  /** The rule that decided, or the default ask when `matched` is false. */
  readonly rule: PermissionRule
  readonly matched: boolean
  /** A stored "always" approval that turns the rules' ask into an allow. */
  readonly approval?: PermissionRule
  /** Rules for this permission, in evaluation order (last match wins). */
  readonly considered: ReadonlyArray<{ readonly rule: PermissionRule; readonly matches: boolean }>
}

/**
 * The decision `PermissionService.ask` makes for one pattern: the agent's rules then the
 * enterprise policy (last match wins, deny is final), then the project's stored approvals.
 */
export const decide = (input: { readonly permission: string; readonly pattern: string; readonly agent: Option.Option<string> }) =>
  Effect.gen(function*() {
    const registry = yield* AgentRegistry
    const policy = yield* PermissionPolicy
    const instance = yield* Instance
    const chosen = Option.isSome(input.agent) ? yield* registry.get(input.agent.value) : yield* registry.defaultAgent()
    const permission = Permission.permissionOfTool(input.permission)
    const explanation = Permission.explain(permission, input.pattern, chosen.permission, policy.rules)
    let approval: PermissionRule | undefined
    // An ask the policy itself decided is not answered by a stored approval (PermissionService.ask).
    if (explanation.rule.action === "ask" && !policy.rules.includes(explanation.rule)) {
      const approvals = yield* (yield* ApprovalStore).load(instance.projectID)
      const allowed = Permission.evaluate(permission, input.pattern, approvals)
      if (allowed.action === "allow") approval = allowed
    }
    const decision: Decision = {
      agent: chosen.name,
      permission,
      pattern: input.pattern,
      action: approval ? "allow" : explanation.rule.action,
      rule: explanation.rule,
      matched: explanation.matched,
      ...(approval ? { approval } : {}),
      considered: explanation.considered
    }
    return decision
  })

export const explain = (input: ExplainInput) =>
  Effect.gen(function*() {
    const decision = yield* decide(input)
    if (input.format === "json") return yield* Console.log(JSON.stringify(decision, null, 2))
    const lines = [`${decision.action}  (agent ${decision.agent})`]
    if (decision.permission !== input.permission) lines.push(`the ${input.permission} tool asks for the ${decision.permission} permission`)
    lines.push(decision.matched ? `decided by: ${describeRule(decision.rule)}` : "no rule matched: the default is to ask")
    if (decision.approval) lines.push(`the rules ask, but a stored "always" approval allows it: ${describeRule(decision.approval)}`)
    if (decision.considered.length > 0) lines.push("rules considered, in order (last match wins):")
    for (const { matches, rule } of decision.considered) lines.push(`  ${matches ? "✓" : " "} ${describeRule(rule)}`)
    yield* Console.log(lines.join("\n"))
  }).pipe(Effect.provide(Layers.decisions))
