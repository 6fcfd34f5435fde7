import type {
  ConfigSource,
  PermissionAction,
  PermissionConfig,
  PermissionRule,
  PermissionRuleset,
  RuleLayer,
  RuleSource
} from "@agent/domain"
import * as os from "node:os"
import * as Wildcard from "../runtime/Wildcard.js"

/**
 * The permission rule engine: pure functions over ordered rulesets. Rules are evaluated in
 * order and the last matching rule wins; nothing is sorted by specificity.
 */

export interface FromConfigOptions {
  /** Which layer these rules belong to (default `config`). */
  readonly layer?: RuleLayer
  /** Free text recorded on every rule, e.g. `agent plan`. */
  readonly note?: string
  /** Looks up the file that set `permission.<key>[.<pattern>]`, relative to `root`. */
  readonly origin?: (path: ReadonlyArray<string>) => ConfigSource | undefined
  /** Key path of the permission object inside the config (default `["permission"]`). */
  readonly root?: ReadonlyArray<string>
  readonly home?: string
}

/** `~`, `~/…`, `$HOME` and `$HOME/…` at the start of a pattern mean the home directory. */
export const expandHome = (pattern: string, home: string = os.homedir()): string => {
  if (pattern === "~" || pattern === "$HOME") return home
  if (pattern.startsWith("~/")) return home + pattern.slice(1)
  if (pattern.startsWith("$HOME/")) return home + pattern.slice(5)
  return pattern
}

/** Config `permission` value → ordered rules, in the order the user wrote the keys. */
export const fromConfig = (config: PermissionConfig | undefined, options: FromConfigOptions = {}): PermissionRuleset => {
  if (config === undefined) return []
  const root = options.root ?? ["permission"]
  const home = options.home ?? os.homedir()
  const sourceOf = (path: ReadonlyArray<string>): RuleSource => {
    const origin = options.origin?.([...root, ...path])
    return {
      layer: options.layer ?? "config",
      ...(origin ? { file: origin.file, key: origin.key } : {}),
      ...(options.note ? { note: options.note } : {})
    }
  }
  if (typeof config === "string") {
    return [{ permission: "*", pattern: "*", action: config, source: sourceOf([]) }]
  }
  const rules: Array<PermissionRule> = []
  for (const [permission, value] of Object.entries(config)) {
    if (typeof value === "string") {
      rules.push({ permission, pattern: "*", action: value, source: sourceOf([permission]) })
      continue
    }
    for (const [pattern, action] of Object.entries(value)) {
      rules.push({ permission, pattern: expandHome(pattern, home), action, source: sourceOf([permission, pattern]) })
    }
  }
  return rules
}

/** Build rules from code (defaults, built-in agents), tagged with their layer. */
export const rules = (
  layer: RuleLayer,
  note: string,
  config: Exclude<PermissionConfig, PermissionAction>,
  home?: string
): PermissionRuleset => fromConfig(config, { layer, note, ...(home ? { home } : {}) })

export const merge = (...rulesets: ReadonlyArray<PermissionRuleset>): PermissionRuleset => rulesets.flat()

/**
 * Rules that came with a session (over the API, or carried from a parent session) as the engine
 * must see them: whatever source they claim, an allow or ask among them is a `session` rule, so it
 * cannot pass for the user's config (see `evaluate`). A deny keeps its source: it can only tighten.
 */
export const asSession = (rules: PermissionRuleset, note?: string): PermissionRuleset =>
  rules.map((rule) => {
    if (rule.action === "deny" && rule.source !== undefined) return rule
    const text = note ?? rule.source?.note
    return { ...rule, source: { layer: "session", ...(text !== undefined ? { note: text } : {}) } }
  })

/**
 * The rules a session's tool calls are decided by (the enterprise policy comes after them, added
 * by every ask): the agent's built-in defaults, then `defaults` (e.g. skill folders, which the
 * agent's and the user's rules may override), the rest of the agent's rules, the session's rules.
 */
export const forSession = (
  agent: PermissionRuleset,
  session: PermissionRuleset | undefined,
  defaults: PermissionRuleset = []
): PermissionRuleset => {
  const afterDefaults = agent.findIndex((rule) => rule.source?.layer !== "default")
  const split = afterDefaults < 0 ? agent.length : afterDefaults
  return merge(agent.slice(0, split), defaults, agent.slice(split), asSession(session ?? []))
}

/** An allow or ask that came with a session: it loosens anything but a deny from config. */
const sessionLoosens = (rule: PermissionRule) => rule.source?.layer === "session" && rule.action !== "deny"
const configDenies = (rule: PermissionRule) => rule.source?.layer === "config" && rule.action === "deny"

/**
 * The last matching rule, except that a session's allow or ask yields to a deny from the user's or
 * project's config that decides without the session's rules: rules that arrive over the API may
 * tighten the config but never loosen its denies (as stored "always" approvals cannot).
 */
const findLast = (
  permission: string,
  pattern: string,
  rulesets: ReadonlyArray<PermissionRuleset>
): PermissionRule | undefined => {
  let loosening: PermissionRule | undefined
  for (let set = rulesets.length - 1; set >= 0; set--) {
    const ruleset = rulesets[set]!
    for (let index = ruleset.length - 1; index >= 0; index--) {
      const rule = ruleset[index]!
      if (!Wildcard.match(permission, rule.permission) || !Wildcard.match(pattern, rule.pattern)) continue
      if (loosening === undefined) {
        if (!sessionLoosens(rule)) return rule
        loosening = rule
      } else if (rule.source?.layer !== "session") {
        // The decision without the session's rules.
        return configDenies(rule) ? rule : loosening
      }
    }
  }
  return loosening
}

/** The rule that decides `permission` for `pattern`, or the default ask. */
export const evaluate = (
  permission: string,
  pattern: string,
  ...rulesets: ReadonlyArray<PermissionRuleset>
): PermissionRule => findLast(permission, pattern, rulesets) ?? { permission, pattern: "*", action: "ask" }

/** The pattern that matches every call running in the OS sandbox, and none outside it. */
export const SANDBOXED = "sandboxed"

/**
 * The rules as they apply to one call: a rule whose pattern is `sandboxed` matches every
 * pattern of a call that runs in the sandbox (as `*` would, at its place in the order, so later
 * rules still override it) and nothing of a call that does not. `{"*": "ask", "sandboxed":
 * "allow", "rm *": "deny"}` runs sandboxed commands without asking, asks for unsandboxed ones,
 * and denies `rm` everywhere. The same array comes back when no rule names `sandboxed`.
 */
export const forSandbox = (ruleset: PermissionRuleset, sandboxed: boolean): PermissionRuleset => {
  if (!ruleset.some((rule) => rule.pattern === SANDBOXED)) return ruleset
  return ruleset.flatMap((rule) => rule.pattern !== SANDBOXED ? [rule] : sandboxed ? [{ ...rule, pattern: "*" }] : [])
}

/** A pattern that names everything (`*`): it says nothing about any command in particular. */
const isCatchAll = (pattern: string) => /^\*+$/.test(pattern)
/** Only wildcards and spaces (`* *`): matching it is not naming the command on purpose. */
const isBroad = (pattern: string) => /^[*?\s]*$/.test(pattern)
const STRICTNESS: Readonly<Record<PermissionAction, number>> = { allow: 0, ask: 1, deny: 2 }

/**
 * The decision for a pattern the rules cannot read: a command whose name is only known when it
 * runs (`$R x`) could be any command, so every rule that could be the last match for some
 * command counts, and the strictest of them decides. Those are the rules from the last
 * catch-all `*` on, or from the last rule that names this very text (not only wildcards),
 * which is how a user allows such a command on purpose. With no catch-all, the default ask
 * counts too. Later rulesets (the enterprise policy) come after, so they still count.
 */
export const evaluateOpaque = (
  permission: string,
  pattern: string,
  ...rulesets: ReadonlyArray<PermissionRuleset>
): PermissionRule => {
  const relevant = rulesets.flat().filter((rule) => Wildcard.match(permission, rule.permission))
  let start = -1
  for (let index = relevant.length - 1; index >= 0 && start === -1; index--) {
    const rule = relevant[index]!
    if (isCatchAll(rule.pattern) || (!isBroad(rule.pattern) && Wildcard.match(pattern, rule.pattern))) start = index
  }
  const tail = start === -1 ? relevant : relevant.slice(start)
  // A session's allow or ask cannot cut off the config's denies before it (see `findLast`).
  const heldDenies = start > 0 && tail.some(sessionLoosens) ? relevant.slice(0, start).filter(configDenies) : []
  const candidates: Array<PermissionRule> = [
    ...(start === -1 ? [{ permission, pattern: "*", action: "ask" as const }] : []),
    ...heldDenies,
    ...tail
  ]
  return candidates.reduce((strictest, rule) => (STRICTNESS[rule.action] >= STRICTNESS[strictest.action] ? rule : strictest))
}

/**
 * A test for "the rules deny `permission` for this pattern", decided as an ask would decide it
 * (approvals never lift a deny), for tools that must check without asking. Undefined when no
 * pattern can be denied: no deny rule for the permission follows its last catch-all (`*`) rule,
 * so a caller can skip the check entirely.
 */
export const denier = (
  permission: string,
  ...rulesets: ReadonlyArray<PermissionRuleset>
): ((pattern: string) => boolean) | undefined => {
  const relevant = rulesets.flat().filter((rule) => Wildcard.match(permission, rule.permission))
  let from = 0
  for (let index = relevant.length - 1; index >= 0; index--) {
    // A session's catch-all allow does not lift the config's denies before it (see `findLast`).
    if (isCatchAll(relevant[index]!.pattern) && !sessionLoosens(relevant[index]!)) {
      from = index
      break
    }
  }
  if (!relevant.slice(from).some((rule) => rule.action === "deny")) return undefined
  return (pattern) => findLast(permission, pattern, [relevant])?.action === "deny"
}

export interface Explanation {
  readonly permission: string
  readonly pattern: string
  /** The deciding rule (with its source), or the default ask. */
  readonly rule: PermissionRule
  /** False when no rule matched and the default ask applies. */
  readonly matched: boolean
  /** Every rule whose permission matches, in evaluation order, and whether its pattern matched. */
  readonly considered: ReadonlyArray<{ readonly rule: PermissionRule; readonly matches: boolean }>
}

export const explain = (
  permission: string,
  pattern: string,
  ...rulesets: ReadonlyArray<PermissionRuleset>
): Explanation => {
  const considered = rulesets
    .flat()
    .filter((rule) => Wildcard.match(permission, rule.permission))
    .map((rule) => ({ rule, matches: Wildcard.match(pattern, rule.pattern) }))
  const decided = findLast(permission, pattern, rulesets)
  return {
    permission,
    pattern,
    rule: decided ?? { permission, pattern: "*", action: "ask", source: { layer: "default", note: "no rule matched" } },
    matched: decided !== undefined,
    considered
  }
}

/** Tools that share one permission key. */
const PERMISSION_OF_TOOL: Readonly<Record<string, string>> = {
  edit: "edit",
  write: "edit",
  patch: "edit",
  apply_patch: "edit",
  multiedit: "edit",
  list_mcp_resources: "read",
  list_mcp_resource_templates: "read",
  read_mcp_resource: "read"
}

export const permissionOfTool = (tool: string): string => PERMISSION_OF_TOOL[tool] ?? tool

/**
 * Tools to hide from the model: those whose last matching rule denies every pattern
 * (`pattern: "*"`, `action: "deny"`), also when that rule is a config deny with only session
 * rules after it (they cannot loosen it). A tool denied only for some patterns stays visible.
 */
export const disabled = (toolIds: Iterable<string>, ruleset: PermissionRuleset): Set<string> => {
  const result = new Set<string>()
  const deniesAll = (rule: PermissionRule | undefined) => rule !== undefined && rule.pattern === "*" && rule.action === "deny"
  for (const tool of toolIds) {
    const permission = permissionOfTool(tool)
    let last: PermissionRule | undefined
    let beforeSession: PermissionRule | undefined
    for (let index = ruleset.length - 1; index >= 0; index--) {
      const rule = ruleset[index]!
      if (!Wildcard.match(permission, rule.permission)) continue
      if (last === undefined) {
        last = rule
        if (rule.source?.layer !== "session") break
      } else if (rule.source?.layer !== "session") {
        beforeSession = rule
        break
      }
    }
    if (deniesAll(last) || (beforeSession !== undefined && configDenies(beforeSession) && deniesAll(beforeSession))) {
      result.add(tool)
    }
  }
  return result
}

/** Drop provenance, for storage or the wire. */
export const strip = (ruleset: PermissionRuleset): PermissionRuleset =>
  ruleset.map(({ action, pattern, permission }) => ({ permission, pattern, action }))
