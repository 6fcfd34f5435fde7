// Module by module, so the bundle's chunk for this command holds only what it uses.
import * as Permission from "@agent/core/permission/Permission"
import { ApprovalStore } from "@agent/core/permission/ApprovalStore"
import { PermissionPolicy } from "@agent/core/permission/PermissionPolicy"
import { parseCommand } from "@agent/core/tool/BashParse"
import { AgentRegistry } from "@agent/core/agent/AgentRegistry"
import { Instance } from "@agent/core/runtime/Instance"
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
  /** The pattern that decided (for bash, the one of the command's patterns that decided). */
  readonly pattern: string
  /** What happens: allow and deny without asking, or ask the user. */
  readonly action: PermissionAction
  /** The rule that decided, or the default ask when `matched` is false. */
  readonly rule: PermissionRule
  readonly matched: boolean
  /** A stored "always" approval that turns the rules' ask into an allow. */
  readonly approval?: PermissionRule
  /** Why the rules cannot read this pattern (a command name computed at run time); decided by the strictest rule. */
  readonly unreadable?: string
  /** Rules for this permission, in evaluation order (last match wins). */
  readonly considered: ReadonlyArray<{ readonly rule: PermissionRule; readonly matches: boolean }>
  /** For a bash command that is checked by several patterns: each one's action. */
  readonly checks?: ReadonlyArray<{ readonly pattern: string; readonly action: PermissionAction; readonly unreadable?: string }>
}

/** The patterns the tool asks for: a bash command is parsed as the bash tool parses it. */
const patternsOf = (permission: string, input: string) =>
  permission !== "bash"
    ? Effect.succeed({ patterns: [input], opaque: new Map<string, string>() })
    : parseCommand(input).pipe(
      Effect.map((parsed) => ({
        patterns: parsed.patterns.length > 0 ? parsed.patterns : [input],
        opaque: new Map(parsed.opaque.map((entry) => [entry.text, entry.reason]))
      })),
      // The tool refuses a command it cannot parse; explained as unreadable, by the strictest rule.
      Effect.catchAll((error) => Effect.succeed({ patterns: [input], opaque: new Map([[input, error.message]]) }))
    )

const STRICTNESS: Readonly<Record<PermissionAction, number>> = { allow: 0, ask: 1, deny: 2 }

/**
 * The decision `PermissionService.ask` makes: for each pattern the agent's rules then the
 * enterprise policy (last match wins, deny is final; a pattern the rules cannot read by the
 * strictest rule that could apply), then the project's stored approvals; the first deny, else
 * the first ask, decides.
 */
export const decide = (input: {
  readonly permission: string
  readonly pattern: string
  readonly agent: Option.Option<string>
  readonly sandboxed?: boolean
}) =>
  Effect.gen(function*() {
    const registry = yield* AgentRegistry
    const found = yield* PermissionPolicy
    const instance = yield* Instance
    const agent = Option.isSome(input.agent) ? yield* registry.get(input.agent.value) : yield* registry.defaultAgent()
    // As PermissionService.ask sees a sandboxed call: the `sandboxed` pattern matches it (and nothing else).
    const sandboxed = input.sandboxed === true
    const chosen = { name: agent.name, permission: Permission.forSandbox(agent.permission, sandboxed) }
    const policy = { rules: Permission.forSandbox(found.rules, sandboxed) }
    const permission = Permission.permissionOfTool(input.permission)
    const approvals = yield* (yield* ApprovalStore).load(instance.projectID)
    const { opaque, patterns } = yield* patternsOf(permission, input.pattern)
    const decisions = patterns.map((pattern): Decision => {
      const unreadable = opaque.get(pattern)
      const explanation = Permission.explain(permission, pattern, chosen.permission, policy.rules)
      const rule = unreadable === undefined ? explanation.rule : Permission.evaluateOpaque(permission, pattern, chosen.permission, policy.rules)
      let approval: PermissionRule | undefined
      // An ask the policy itself decided is not answered by a stored approval (PermissionService.ask).
      if (rule.action === "ask" && !policy.rules.includes(rule)) {
        const allowed = unreadable === undefined
          ? Permission.evaluate(permission, pattern, approvals)
          : Permission.evaluateOpaque(permission, pattern, approvals)
        if (allowed.action === "allow") approval = allowed
      }
      return {
        agent: chosen.name,
        permission,
        pattern,
        action: approval ? "allow" : rule.action,
        rule,
        matched: unreadable !== undefined || explanation.matched,
        ...(approval ? { approval } : {}),
        ...(unreadable === undefined ? {} : { unreadable }),
        considered: explanation.considered
      }
    })
    const deciding = decisions.reduce((worst, decision) => (STRICTNESS[decision.action] > STRICTNESS[worst.action] ? decision : worst))
    if (decisions.length === 1) return deciding
    const checks = decisions.map(({ action, pattern, unreadable }) => ({ pattern, action, ...(unreadable === undefined ? {} : { unreadable }) }))
    return { ...deciding, checks } satisfies Decision
  })

export const explain = (input: ExplainInput) =>
  Effect.gen(function*() {
    const decision = yield* decide(input)
    if (input.format === "json") return yield* Console.log(JSON.stringify(decision, null, 2))
    const lines = [`${decision.action}  (agent ${decision.agent}${input.sandboxed ? ", in the sandbox" : ""})`]
    if (decision.permission !== input.permission) lines.push(`the ${input.permission} tool asks for the ${decision.permission} permission`)
    if (decision.checks) {
      lines.push("the command is checked as:")
      for (const check of decision.checks) lines.push(`  ${check.action.padEnd(5)} ${JSON.stringify(check.pattern)}`)
      lines.push(`deciding pattern: ${JSON.stringify(decision.pattern)}`)
    }
    if (decision.unreadable !== undefined) {
      lines.push(`the rules cannot read this command: ${decision.unreadable}; the strictest rule that could apply decides`)
      if (decision.action !== "allow") {
        lines.push(`to allow it on purpose, add ${JSON.stringify(decision.pattern)}: "allow" to permission.${decision.permission}, after its deny rules`)
      }
    }
    lines.push(decision.matched ? `decided by: ${describeRule(decision.rule)}` : "no rule matched: the default is to ask")
    if (decision.approval) lines.push(`the rules ask, but a stored "always" approval allows it: ${describeRule(decision.approval)}`)
    if (decision.considered.length > 0) lines.push("rules considered, in order (last match wins):")
    for (const { matches, rule } of decision.considered) lines.push(`  ${matches ? "✓" : " "} ${describeRule(rule)}`)
    yield* Console.log(lines.join("\n"))
  }).pipe(Effect.provide(Layers.decisions))
