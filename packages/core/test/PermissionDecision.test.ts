import { describe, expect, it } from "@effect/vitest"
import * as Permission from "../src/permission/Permission.js"
import { decide } from "../src/permission/PermissionDecision.js"

const ruleset = Permission.fromConfig({ "*": "allow", bash: { "*": "ask", "ls *": "allow", "rm *": "deny" } })
const approvals = Permission.fromConfig({ bash: { "git *": "allow" } })
const policy = Permission.fromConfig({ bash: { "curl *": "ask" } })

describe("decide", () => {
  const cases: ReadonlyArray<{
    readonly name: string
    readonly patterns: ReadonlyArray<string>
    readonly opaque?: ReadonlyArray<{ pattern: string; reason: string }>
    readonly requiresPerson?: string
    readonly ruleset?: typeof ruleset
    readonly policy?: typeof policy
    readonly approvals?: typeof approvals
    readonly expected: { _tag: string; pattern?: string; requiresPerson?: string | undefined }
  }> = [
    { name: "an allowed pattern", patterns: ["ls -la"], expected: { _tag: "Allow" } },
    { name: "an approval answers the user's own ask", patterns: ["git status"], expected: { _tag: "Allow" } },
    {
      name: "a stored rejection denies the user's own ask",
      patterns: ["npm publish"],
      approvals: Permission.fromConfig({ bash: { "git *": "allow", "npm *": "deny" } }),
      expected: { _tag: "Deny", pattern: "npm publish" }
    },
    {
      name: "a stored rejection does not overrule an allow rule",
      patterns: ["ls -la"],
      approvals: Permission.fromConfig({ bash: { "ls *": "deny" } }),
      expected: { _tag: "Allow" }
    },
    { name: "no rule allows: ask", patterns: ["make"], expected: { _tag: "Ask", requiresPerson: undefined } },
    { name: "a deny of any pattern is final", patterns: ["make", "rm -rf /"], expected: { _tag: "Deny", pattern: "rm -rf /" } },
    {
      name: "the policy's ask is for a person, whatever the approvals",
      patterns: ["curl x"],
      expected: { _tag: "Ask", requiresPerson: "the enterprise policy asks a person to approve it" }
    },
    {
      name: "an unreadable pattern is for a person",
      patterns: ["$X"],
      opaque: [{ pattern: "$X", reason: "computed" }],
      ruleset: Permission.fromConfig({ "*": "allow", bash: "ask" }),
      policy: [],
      expected: { _tag: "Ask", requiresPerson: "the rules cannot check it: computed" }
    },
    {
      name: "an unreadable pattern could be one the policy asks about: the policy's ask",
      patterns: ["$X"],
      opaque: [{ pattern: "$X", reason: "computed" }],
      ruleset: Permission.fromConfig({ "*": "allow", bash: "ask" }),
      expected: { _tag: "Ask", requiresPerson: "the enterprise policy asks a person to approve it" }
    },
    {
      name: "an unreadable pattern meets the strictest rule it could: a deny",
      patterns: ["$X"],
      opaque: [{ pattern: "$X", reason: "computed" }],
      expected: { _tag: "Deny", pattern: "$X" }
    },
    {
      name: "the caller's reason comes first",
      patterns: ["make"],
      requiresPerson: "it leaves the sandbox",
      expected: { _tag: "Ask", requiresPerson: "it leaves the sandbox" }
    },
    { name: "the caller's reason does not matter when nothing is asked", patterns: ["ls"], requiresPerson: "x", expected: { _tag: "Allow" } }
  ]
  for (const testCase of cases) {
    it(testCase.name, () => {
      const decision = decide(
        {
          permission: "bash",
          patterns: testCase.patterns,
          ruleset: testCase.ruleset ?? ruleset,
          ...(testCase.opaque ? { opaque: testCase.opaque } : {}),
          ...(testCase.requiresPerson ? { requiresPerson: testCase.requiresPerson } : {})
        },
        testCase.policy ?? policy,
        testCase.approvals ?? approvals
      )
      expect(decision).toMatchObject(testCase.expected)
    })
  }
})
