import { describe, expect, it } from "@effect/vitest"
import * as HookMatcher from "../../src/hooks/HookMatcher.js"

describe("HookMatcher.matches", () => {
  /** [matcher, value, matches] */
  const cases: ReadonlyArray<readonly [string | undefined, string | undefined, boolean]> = [
    [undefined, "Bash", true],
    ["", "Bash", true],
    ["*", "Write", true],
    ["Bash", "Bash", true],
    // A list of names is exact: no substring, no case folding.
    ["Bash", "BashOutput", false],
    ["bash", "Bash", false],
    ["Write|Edit", "Edit", true],
    ["Write|Edit", "MultiEdit", false],
    ["Write|Edit", "Read", false],
    ["mcp__github__create_issue", "mcp__github__create_issue", true],
    // Anything else is an unanchored regex.
    ["Edit.*", "MultiEdit", true],
    ["Edit.*", "Edit", true],
    ["^Edit$", "MultiEdit", false],
    ["mcp__github__.*", "mcp__github__list_issues", true],
    ["mcp__.*__write.*", "mcp__fs__write_file", true],
    ["Notebook.*|Write", "Write", true],
    ["Web(Fetch|Search)", "WebFetch", true],
    ["web(fetch)", "WebFetch", false],
    // A regex that does not compile matches nothing.
    ["(", "(", false],
    // Events without a value to match (Stop, UserPromptSubmit) run every handler.
    ["Bash", undefined, true],
    ["startup", "startup", true],
    ["startup", "resume", false],
    ["auto", "manual", false]
  ]
  for (const [matcher, value, expected] of cases) {
    it(`${JSON.stringify(matcher)} against ${JSON.stringify(value)}: ${expected}`, () => expect(HookMatcher.matches(matcher, value)).toBe(expected))
  }

  it("says why a regex does not compile", () => {
    const compiled = HookMatcher.compile("Bash(")
    expect(compiled._tag).toBe("Invalid")
  })
})
