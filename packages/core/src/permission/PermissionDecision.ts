import type { PermissionRule, PermissionRuleset } from "@agent/domain"
import * as Permission from "./Permission.js"

// What the rules say about one ask, before anybody is asked: a pure decision over the rules in force.

export interface DecisionInput {
  readonly permission: string
  readonly patterns: ReadonlyArray<string>
  /** Patterns the rules cannot read, with why (see `AskInput.opaque`). */
  readonly opaque?: ReadonlyArray<{ readonly pattern: string; readonly reason: string }>
  /** The agent's and session's rules, already narrowed for the sandbox. */
  readonly ruleset: PermissionRuleset
  /** Set by the caller when only a person may answer an ask for this call. */
  readonly requiresPerson?: string
}

export type Decision =
  | {
    readonly _tag: "Deny"
    readonly rule: PermissionRule
    readonly pattern: string
    /** Why the rules could not read the pattern, when they could not. */
    readonly unreadable: string | undefined
  }
  /** Every pattern is allowed, by this rule last (none when no pattern needed one). */
  | { readonly _tag: "Allow"; readonly rule: PermissionRule | undefined }
  | { readonly _tag: "Ask"; readonly requiresPerson: string | undefined }

/**
 * Rules first (the caller's, then the enterprise policy's, which no approval overrides), then the
 * stored "always" approvals and rejections. A deny of any pattern is final; an ask the policy insists on, or one
 * about a pattern the rules cannot read, is for a person only.
 */
export const decide = (
  input: DecisionInput,
  policyRules: PermissionRuleset,
  approvals: PermissionRuleset
): Decision => {
  let needsAsk = false
  let requiresPerson = input.requiresPerson
  let decidingRule: PermissionRule | undefined
  const unreadable = new Map((input.opaque ?? []).map((entry) => [entry.pattern, entry.reason]))
  for (const pattern of input.patterns) {
    const reason = unreadable.get(pattern)
    const rule = reason === undefined
      ? Permission.evaluate(input.permission, pattern, input.ruleset, policyRules)
      : Permission.evaluateOpaque(input.permission, pattern, input.ruleset, policyRules)
    if (rule.action === "deny") return { _tag: "Deny", rule, pattern, unreadable: reason }
    if (rule.action === "allow") {
      decidingRule = rule
      continue
    }
    // A stored "always" answers a question from the user's own rules, not one the policy insists on.
    if (policyRules.includes(rule)) {
      needsAsk = true
      requiresPerson ??= "the enterprise policy asks a person to approve it"
      continue
    }
    const approval = reason === undefined
      ? Permission.evaluate(input.permission, pattern, approvals)
      : Permission.evaluateOpaque(input.permission, pattern, approvals)
    if (approval.action === "allow") decidingRule = approval
    // A stored "reject always" (an editor's answer) is a deny like a rule's.
    else if (approval.action === "deny") return { _tag: "Deny", rule: approval, pattern, unreadable: reason }
    else {
      needsAsk = true
      if (reason !== undefined) requiresPerson ??= `the rules cannot check it: ${reason}`
    }
  }
  return needsAsk ? { _tag: "Ask", requiresPerson } : { _tag: "Allow", rule: decidingRule }
}
