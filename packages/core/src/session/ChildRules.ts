// A child session's rules (a subagent's), as plain functions: what the parent may not do, the
// child may not do either. Table tests: test/session/ChildRules.test.ts.
import type { Agent, PermissionRuleset } from "@agent/domain"
import * as Wildcard from "../runtime/Wildcard.js"

/**
 * The parent's denies as they hold in the parent (and rules `keep` names, in place). A deny
 * on one permission is carried whole (as OpenCode carries edit denies). A wildcard deny that
 * later rules partly undo (`"*": deny` then `read: allow`) would lock the child out of what
 * the parent may do, so it is carried as one deny per known permission that no later allow
 * or ask gives back.
 */
export const parentDenies = (
  rules: PermissionRuleset,
  permissions: ReadonlyArray<string>,
  keep: (rule: PermissionRuleset[number]) => boolean = () => false
): PermissionRuleset =>
  rules.flatMap((rule, index) => {
    if (keep(rule)) return [rule]
    if (rule.action !== "deny" || rule.source?.layer === "default") return []
    if (!/[*?]/.test(rule.permission)) return [rule]
    const undone = rules.slice(index + 1).filter((later) => later.action !== "deny")
    if (!undone.some((later) => Wildcard.match(later.permission, rule.permission))) return [rule]
    return permissions
      .filter((name) => Wildcard.match(name, rule.permission) && !undone.some((later) => Wildcard.match(name, later.permission)))
      .map((name) => ({ ...rule, permission: name }))
  })

/**
 * The child session's rules: the parent's denies (its agent's and its session's, and the parent
 * session's external-directory answers); todo and task are off unless the subagent's own config
 * mentions them; no task at all past the nesting limit; no tool of `experimental.primary_tools` (tools for
 * primary agents only). `permissions`: every known permission.
 */
export const childRules = (input: {
  readonly parent: Agent
  readonly parentSession: PermissionRuleset
  readonly subagent: Agent
  readonly childDepth: number
  readonly subagentDepth: number
  readonly permissions: ReadonlyArray<string>
  /** `experimental.primary_tools`: permissions only primary agents have. */
  readonly primaryTools?: ReadonlyArray<string>
}): PermissionRuleset => {
  const { subagent, permissions } = input
  const own = (permission: string) =>
    subagent.permission.some((rule) => rule.permission === permission && rule.source?.layer !== "default")
  const carried = [
    ...parentDenies(input.parent.permission, permissions),
    ...parentDenies(input.parentSession, permissions, (rule) => rule.permission === "external_directory")
  ]
  const note = (text: string) => ({ layer: "session" as const, note: text })
  return [
    ...carried,
    ...(own("todowrite") ? [] : [{ permission: "todowrite", pattern: "*", action: "deny" as const, source: note("subagent default") }]),
    ...(own("task") && input.childDepth < input.subagentDepth
      ? []
      : [{ permission: "task", pattern: "*", action: "deny" as const, source: note(`subagent depth limit ${input.subagentDepth}`) }]),
    ...(input.primaryTools ?? []).map((permission) => ({
      permission,
      pattern: "*",
      action: "deny" as const,
      source: note("experimental.primary_tools")
    }))
  ]
}
