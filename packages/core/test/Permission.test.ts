import type { PermissionRuleset } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import * as Permission from "../src/permission/Permission.js"

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

describe("session rules cannot loosen a config deny", () => {
  const defaults = Permission.rules("default", "built-in defaults", { "*": "allow", read: { "*": "allow", "*.env": "ask" } })
  const config = Permission.fromConfig({ bash: { "*": "ask", "rm *": "deny", "git *": "allow", "git push *": "deny" }, webfetch: "deny" })
  const agent = Permission.rules("agent", "agent plan", { edit: "deny" })
  const policy = Permission.rules("policy", "managed", { bash: { "curl *": "deny" } })
  const session = (config: Exclude<Parameters<typeof Permission.fromConfig>[0], string | undefined>) =>
    Permission.fromConfig(config, { layer: "session" })
  const rules = (sessionRules: PermissionRuleset) => Permission.forSession(Permission.merge(defaults, agent, config), sessionRules)

  // [what the session says, permission, pattern, the decision]
  const table: ReadonlyArray<readonly [string, PermissionRuleset, string, string, "allow" | "deny" | "ask"]> = [
    ["no session rules: the config decides", [], "bash", "rm -rf x", "deny"],
    ["a session allow of the denied pattern", session({ bash: { "rm *": "allow" } }), "bash", "rm -rf x", "deny"],
    ["a session allow of everything", session({ "*": "allow" }), "bash", "rm -rf x", "deny"],
    ["a session ask of the denied pattern", session({ bash: { "rm *": "ask" } }), "bash", "rm x", "deny"],
    ["a whole-permission config deny", session({ webfetch: "allow" }), "webfetch", "https://x.dev", "deny"],
    ["a config deny the config itself undoes later stays undone", session({ bash: { "*": "allow" } }), "bash", "git status", "allow"],
    ["a deny nested in a config allow holds", session({ bash: { "*": "allow" } }), "bash", "git push origin", "deny"],
    ["a session allow loosens a config ask", session({ bash: { "*": "allow" } }), "bash", "ls", "allow"],
    ["a session deny tightens a config allow", session({ bash: { "git *": "deny" } }), "bash", "git status", "deny"],
    ["a session ask tightens a config allow", session({ bash: { "git *": "ask" } }), "bash", "git status", "ask"],
    ["a session allow loosens a built-in agent deny", session({ edit: "allow" }), "edit", "a.ts", "allow"],
    ["a session allow loosens a built-in ask", session({ read: "allow" }), "read", "x/.env", "allow"],
    ["a session deny, then a session allow, over a config deny", session({ bash: { "rm *": "deny", "*": "allow" } }), "bash", "rm x", "deny"],
    // rules from the API without a source, or claiming the config's, are session rules all the same
    ["an allow without a source", [rule("bash", "rm *", "allow")], "bash", "rm x", "deny"],
    ["an allow claiming to be config", [{ ...rule("bash", "rm *", "allow"), source: { layer: "config" as const } }], "bash", "rm x", "deny"]
  ]

  for (const [name, sessionRules, permission, pattern, expected] of table) {
    it(name, () => {
      expect(decide(permission, pattern, rules(sessionRules), policy)).toBe(expected)
    })
  }

  it("the enterprise policy still has the last word", () => {
    expect(decide("bash", "curl x", rules(session({ bash: "allow" })), policy)).toBe("deny")
  })

  it("explain names the config deny that held", () => {
    const explanation = Permission.explain("bash", "rm x", rules(session({ bash: { "rm *": "allow" } })))
    expect(explanation.rule.source?.layer).toBe("config")
    expect(explanation.rule.action).toBe("deny")
  })

  it("a tool the config denies outright stays hidden whatever the session allows", () => {
    const hidden = Permission.disabled(["webfetch", "bash", "edit"], rules(session({ "*": "allow", bash: { "ls *": "deny" } })))
    expect(hidden).toEqual(new Set(["webfetch"]))
    expect(Permission.disabled(["bash"], rules(session({ bash: "deny" })))).toEqual(new Set(["bash"]))
  })

  it("asSession marks allows and asks as session rules, keeps a deny's source", () => {
    const marked = Permission.asSession([
      { ...rule("bash", "*", "allow"), source: { layer: "config" as const, file: "agent.json" } },
      rule("read", "*", "ask"),
      { ...rule("edit", "*", "deny"), source: { layer: "config" as const, file: "agent.json" } }
    ], "set over the API")
    expect(marked.map((r) => r.source)).toEqual([
      { layer: "session", note: "set over the API" },
      { layer: "session", note: "set over the API" },
      { layer: "config", file: "agent.json" }
    ])
  })
})

describe("Permission.evaluateOpaque: a command the rules cannot read", () => {
  const config = Permission.fromConfig({ bash: { "*": "allow", "rm *": "deny" } })
  const opaque = (...rulesets: Array<PermissionRuleset>) => Permission.evaluateOpaque("bash", "$R x", ...rulesets).action

  it("is decided by the strictest rule from the last catch-all on", () => {
    expect(opaque(config)).toBe("deny")
    expect(opaque(Permission.fromConfig({ bash: { "*": "allow", "git push *": "ask" } }))).toBe("ask")
    expect(opaque(Permission.fromConfig({ bash: "allow" }))).toBe("allow")
    // a deny before a later catch-all is shadowed for every command, so it does not count
    expect(opaque(Permission.fromConfig({ bash: { "rm *": "deny", "*": "allow" } }))).toBe("allow")
    // no catch-all: the default ask counts
    expect(opaque(Permission.fromConfig({ bash: { "ls *": "allow" } }))).toBe("ask")
  })

  it("a rule naming the exact text, after the denies, allows it on purpose; one of only wildcards does not", () => {
    expect(opaque(Permission.fromConfig({ bash: { "*": "allow", "rm *": "deny", "$R x": "allow" } }))).toBe("allow")
    expect(opaque(Permission.fromConfig({ bash: { "*": "allow", "rm *": "deny", "* *": "allow" } }))).toBe("deny")
    expect(opaque(Permission.fromConfig({ bash: { "*": "allow", "$R x": "allow", "rm *": "deny" } }))).toBe("deny")
  })

  it("the enterprise policy's rules count, and a session's catch-all allow does not cut off the config's deny", () => {
    expect(opaque(Permission.fromConfig({ bash: "allow" }), Permission.rules("policy", "managed", { bash: { "rm *": "deny" } }))).toBe("deny")
    const session = Permission.asSession([rule("bash", "*", "allow")])
    expect(opaque(Permission.forSession(config, session))).toBe("deny")
    expect(opaque(Permission.forSession(Permission.fromConfig({ bash: "ask" }), session))).toBe("allow")
  })
})

describe("Permission.denier under session rules", () => {
  it("a session's catch-all allow does not turn the check off while a config deny holds", () => {
    const config = Permission.fromConfig({ read: { "*": "allow", "*secret*": "deny" } })
    const denied = Permission.denier("read", Permission.forSession(config, Permission.asSession([rule("read", "*", "allow")])))
    expect(denied).toBeDefined()
    expect(denied!("secret.txt")).toBe(true)
    expect(denied!("notes.txt")).toBe(false)
  })
})

