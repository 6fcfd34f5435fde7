import type { PermissionRuleset } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import * as Permission from "../src/Permission.js"

const home = "/home/tester"
const rule = (permission: string, pattern: string, action: "allow" | "deny" | "ask") => ({ permission, pattern, action })
const decide = (permission: string, pattern: string, ...rulesets: Array<PermissionRuleset>) =>
  Permission.evaluate(permission, pattern, ...rulesets).action

describe("Permission.fromConfig", () => {
  it("keeps the user's key order, one rule per sub-key", () => {
    const rules = Permission.fromConfig(
      { edit: "deny", bash: { "*": "ask", "git *": "allow", "git push *": "deny" }, read: "allow" },
      { home }
    )
    expect(Permission.strip(rules)).toEqual([
      rule("edit", "*", "deny"),
      rule("bash", "*", "ask"),
      rule("bash", "git *", "allow"),
      rule("bash", "git push *", "deny"),
      rule("read", "*", "allow")
    ])
  })

  it("a bare action applies to everything", () => {
    expect(Permission.strip(Permission.fromConfig("deny"))).toEqual([rule("*", "*", "deny")])
  })

  it("nothing configured, no rules", () => {
    expect(Permission.fromConfig(undefined)).toEqual([])
    expect(Permission.fromConfig({})).toEqual([])
  })

  it("expands the home directory at the start of a pattern only", () => {
    const rules = Permission.fromConfig(
      {
        external_directory: {
          "~/projects/*": "allow",
          "~": "deny",
          "$HOME/.ssh/*": "deny",
          $HOME: "ask",
          "/tmp/~/x": "allow",
          "~other/*": "ask"
        }
      },
      { home }
    )
    expect(rules.map((r) => r.pattern)).toEqual([
      "/home/tester/projects/*",
      "/home/tester",
      "/home/tester/.ssh/*",
      "/home/tester",
      "/tmp/~/x",
      "~other/*"
    ])
  })

  it("records where each rule came from", () => {
    const rules = Permission.fromConfig(
      { bash: { "rm *": "deny" } },
      { origin: (path) => ({ file: "/etc/agent/agent.json", key: path.join("."), line: 3 }) }
    )
    expect(rules[0]?.source).toEqual({ layer: "config", file: "/etc/agent/agent.json", key: "permission.bash.rm *" })
  })
})

describe("Permission.evaluate", () => {
  it("the last matching rule wins, regardless of specificity", () => {
    const rules = Permission.fromConfig({ bash: { "git push *": "deny", "*": "allow" } })
    expect(decide("bash", "git push origin", rules)).toBe("allow")
    const reversed = Permission.fromConfig({ bash: { "*": "allow", "git push *": "deny" } })
    expect(decide("bash", "git push origin", reversed)).toBe("deny")
    expect(decide("bash", "git status", reversed)).toBe("allow")
  })

  it("later rulesets override earlier ones", () => {
    const defaults = Permission.fromConfig({ "*": "allow" })
    const user = Permission.fromConfig({ webfetch: "deny" })
    expect(decide("webfetch", "https://x.dev", defaults, user)).toBe("deny")
    expect(decide("webfetch", "https://x.dev", user, defaults)).toBe("allow")
  })

  it("asks when nothing matches, with a catch-all pattern", () => {
    expect(Permission.evaluate("bash", "ls", [])).toEqual({ permission: "bash", pattern: "*", action: "ask" })
    expect(Permission.evaluate("bash", "ls")).toEqual({ permission: "bash", pattern: "*", action: "ask" })
    expect(decide("edit", "a.ts", Permission.fromConfig({ bash: "allow" }))).toBe("ask")
  })

  it("permission names are wildcards too (MCP servers)", () => {
    const rules = Permission.fromConfig({ "github_*": "deny", github_search: "allow" })
    expect(decide("github_create_issue", "*", rules)).toBe("deny")
    expect(decide("github_search", "*", rules)).toBe("allow")
  })

  it("returns the deciding rule itself", () => {
    const rules = Permission.fromConfig({ read: { "*": "allow", "*.env": "ask" } })
    expect(Permission.evaluate("read", "/p/.env", rules)).toBe(rules[1])
  })

  it("matches bash commands with the optional trailing argument list", () => {
    const rules = Permission.fromConfig({ bash: { "*": "ask", "npm test *": "allow" } })
    expect(decide("bash", "npm test", rules)).toBe("allow")
    expect(decide("bash", "npm test --watch", rules)).toBe("allow")
    expect(decide("bash", "npm tester", rules)).toBe("ask")
  })

  it("matches Windows paths written with either slash", () => {
    const rules = Permission.fromConfig({ edit: { "C:\\work\\*": "allow" } })
    expect(decide("edit", "C:/work/a.ts", rules)).toBe("allow")
  })
})

describe("Permission.merge", () => {
  it("concatenates in order", () => {
    const a = [rule("a", "*", "allow")]
    const b = [rule("b", "*", "deny"), rule("c", "*", "ask")]
    expect(Permission.merge(a, b)).toEqual([...a, ...b])
    expect(Permission.merge()).toEqual([])
  })
})

describe("Permission.disabled", () => {
  const tools = ["bash", "read", "edit", "write", "apply_patch", "webfetch", "todowrite"]

  it("hides a tool whose last matching rule denies every pattern", () => {
    const rules = Permission.fromConfig({ "*": "allow", webfetch: "deny", todowrite: { "*": "deny" } })
    expect(Permission.disabled(tools, rules)).toEqual(new Set(["webfetch", "todowrite"]))
  })

  it("keeps a tool denied only for some patterns", () => {
    const rules = Permission.fromConfig({ bash: { "*": "allow", "rm *": "deny" } })
    expect(Permission.disabled(tools, rules).has("bash")).toBe(false)
  })

  it("a later allow re-enables it", () => {
    const rules = Permission.fromConfig({ "*": "deny", read: "allow" })
    const hidden = Permission.disabled(tools, rules)
    expect(hidden.has("read")).toBe(false)
    expect(hidden.has("bash")).toBe(true)
  })

  it("edit, write and apply_patch share the edit permission", () => {
    const rules = Permission.fromConfig({ edit: "deny" })
    expect(Permission.disabled(tools, rules)).toEqual(new Set(["edit", "write", "apply_patch"]))
  })

  it("looks only at the last rule whose permission matches", () => {
    const rules = Permission.fromConfig({ edit: { "*": "deny", "docs/*": "allow" } })
    expect(Permission.disabled(["edit"], rules).size).toBe(0)
  })

  it("no rules, nothing hidden", () => {
    expect(Permission.disabled(tools, []).size).toBe(0)
  })
})

describe("Permission.denier", () => {
  const cases: ReadonlyArray<readonly [string, PermissionRuleset, ReadonlyArray<readonly [string, boolean]> | undefined]> = [
    ["no rules: nothing can be denied", [], undefined],
    ["allow everything", [rule("*", "*", "allow")], undefined],
    ["asks never count as denies", [rule("read", "*", "allow"), rule("read", "*.env", "ask")], undefined],
    ["a deny overridden by a later catch-all allow", [rule("read", "*secret*", "deny"), rule("read", "*", "allow")], undefined],
    ["a deny of another permission", [rule("edit", "*", "deny")], undefined],
    ["a catch-all deny then an allowed area", [rule("*", "*", "deny"), rule("read", "src/*", "allow")], [["src/a.ts", false], ["b.ts", true]]],
    [
      "a pattern deny after the catch-all",
      [rule("*", "*", "allow"), rule("read", "*secret*", "deny"), rule("read", "docs/secret.md", "allow")],
      [["secret.txt", true], ["docs/secret.md", false], ["a.ts", false]]
    ],
    ["a wildcard permission deny", [rule("re*", "*.pem", "deny")], [["key.pem", true], ["key.pub", false]]]
  ]
  for (const [name, rules, expected] of cases) {
    it(name, () => {
      const denies = Permission.denier("read", rules)
      if (expected === undefined) return expect(denies).toBeUndefined()
      expect(denies).toBeDefined()
      for (const [pattern, denied] of expected) {
        expect(denies!(pattern), pattern).toBe(denied)
        expect(denied, pattern).toBe(decide("read", pattern, rules) === "deny")
      }
    })
  }

  it("the policy's rules come last, as in an ask", () => {
    const denies = Permission.denier("read", [rule("read", "*", "allow")], [rule("read", "*.key", "deny")])
    expect(denies?.("a.key")).toBe(true)
    expect(Permission.denier("read", [rule("read", "*.key", "deny")], [rule("read", "*", "allow")])).toBeUndefined()
  })
})

describe("Permission.explain", () => {
  it("names the deciding rule, its source and every candidate", () => {
    const defaults = Permission.rules("default", "built-in defaults", { "*": "allow" })
    const user = Permission.fromConfig(
      { bash: { "*": "ask", "git *": "allow" }, edit: "deny" },
      { origin: (path) => ({ file: "/p/agent.json", key: path.join(".") }) }
    )
    const explanation = Permission.explain("bash", "git status", defaults, user)
    expect(explanation.matched).toBe(true)
    expect(explanation.rule.action).toBe("allow")
    expect(explanation.rule.source).toEqual({ layer: "config", file: "/p/agent.json", key: "permission.bash.git *" })
    expect(explanation.considered.map((c) => [c.rule.permission, c.rule.pattern, c.matches])).toEqual([
      ["*", "*", true],
      ["bash", "*", true],
      ["bash", "git *", true]
    ])
  })

  it("says when the default ask applies", () => {
    const explanation = Permission.explain("bash", "ls", Permission.fromConfig({ edit: "deny" }))
    expect(explanation.matched).toBe(false)
    expect(explanation.rule.action).toBe("ask")
    expect(explanation.considered).toEqual([])
  })
})
