import { Agent, type PermissionRuleset } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { childRules, parentDenies } from "../../src/session/ChildRules.js"

const rule = (permission: string, action: "allow" | "deny" | "ask", layer: "default" | "config" | "session" = "config") => ({
  permission,
  pattern: "*",
  action,
  source: { layer }
})

const agent = (name: string, permission: PermissionRuleset) =>
  new Agent({ name, mode: "subagent", native: true, permission, options: {} })

describe("parentDenies", () => {
  const known = ["read", "edit", "bash", "task"]
  const cases: Array<[string, PermissionRuleset, Array<string>]> = [
    ["allows are not carried", [rule("read", "allow")], []],
    ["a deny is carried whole", [rule("edit", "deny")], ["edit:deny"]],
    ["default denies stay behind", [rule("edit", "deny", "default")], []],
    ["a wildcard deny nothing undoes is carried whole", [rule("*", "deny")], ["*:deny"]],
    ["a wildcard deny partly undone becomes one deny per known permission", [rule("*", "deny"), rule("read", "allow")], [
      "edit:deny",
      "bash:deny",
      "task:deny"
    ]]
  ]
  for (const [name, rules, expected] of cases) {
    it(name, () => expect(parentDenies(rules, known).map((each) => `${each.permission}:${each.action}`)).toEqual(expected))
  }
  it("keep: the rules it names are carried in place, allows too", () => {
    const rules = [rule("external_directory", "allow", "session"), rule("edit", "deny")]
    expect(parentDenies(rules, known, (each) => each.permission === "external_directory")).toEqual(rules)
  })
})

describe("childRules", () => {
  const parent = agent("build", [rule("bash", "deny")])
  const base = { parent, parentSession: [], childDepth: 1, subagentDepth: 1, permissions: ["bash", "read", "task"] }
  const summary = (rules: PermissionRuleset) => rules.map((each) => `${each.permission}:${each.action}`)
  const cases: Array<[string, Parameters<typeof childRules>[0], Array<string>]> = [
    ["a plain subagent: the parent's denies, no todo, no task", { ...base, subagent: agent("explore", []) }, [
      "bash:deny",
      "todowrite:deny",
      "task:deny"
    ]],
    ["its own todowrite rule keeps todo", { ...base, subagent: agent("explore", [rule("todowrite", "allow")]) }, ["bash:deny", "task:deny"]],
    ["its own task rule, below the depth limit, keeps task", {
      ...base,
      subagentDepth: 2,
      subagent: agent("explore", [rule("task", "allow")])
    }, ["bash:deny", "todowrite:deny"]],
    ["its own task rule at the depth limit: no task", { ...base, subagent: agent("explore", [rule("task", "allow")]) }, [
      "bash:deny",
      "todowrite:deny",
      "task:deny"
    ]],
    ["a default task rule is not its own", { ...base, subagentDepth: 2, subagent: agent("explore", [rule("task", "allow", "default")]) }, [
      "bash:deny",
      "todowrite:deny",
      "task:deny"
    ]],
    ["the parent session's denies and directory answers", {
      ...base,
      parentSession: [rule("read", "deny", "session"), rule("external_directory", "allow", "session")],
      subagent: agent("explore", [])
    }, ["bash:deny", "read:deny", "external_directory:allow", "todowrite:deny", "task:deny"]],
    ["experimental.primary_tools: each is denied to the subagent, whatever its own rules", {
      ...base,
      primaryTools: ["webfetch", "edit"],
      subagent: agent("explore", [rule("webfetch", "allow")])
    }, ["bash:deny", "todowrite:deny", "task:deny", "webfetch:deny", "edit:deny"]]
  ]
  for (const [name, input, expected] of cases) {
    it(name, () => expect(summary(childRules(input))).toEqual(expected))
  }
})
