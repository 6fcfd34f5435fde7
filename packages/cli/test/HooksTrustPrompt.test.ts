import type { ListedHook } from "@agent/core"
import { MockOpenAIServer } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { agent, project, terminal } from "./AgentProcess.js"
import { runsOf, shellHook } from "./HookScripts.js"
import { heldForTrust, parseTrustAnswer, trustQuestion } from "../src/TrustQuestion.js"

const group = (command: string) => [{ hooks: [{ type: "command", command }] }]

const hook = (over: Partial<ListedHook>): ListedHook => ({
  event: "PreToolUse",
  matcher: "Bash",
  type: "command",
  command: "./guard.sh",
  timeout: undefined,
  file: "/p/.claude/settings.json",
  scope: "project",
  runs: false,
  ...over
})

describe("the trust question: pure parts", () => {
  it("asks only about a project's hooks held for want of trust", () => {
    const project = hook({})
    const user = hook({ scope: "user", runs: true, command: "mine.sh" })
    const managed = hook({ scope: "managed", runs: true, command: "policy.sh" })
    const cases: Array<[string, ReadonlyArray<ListedHook>, boolean, boolean, ReadonlyArray<ListedHook>]> = [
      ["untrusted project hooks", [project, user, managed], false, false, [project]],
      ["already trusted", [hook({ runs: true }), user], true, false, []],
      ["disableAllHooks: trust would not make them run", [project], false, true, []],
      ["only the user's and the managed dir's", [user, managed], false, false, []]
    ]
    for (const [name, hooks, trusted, disabled, expected] of cases) {
      expect(heldForTrust(hooks, trusted, disabled), name).toEqual(expected)
    }
  })

  it("shows every held command with its event, matcher and file", () => {
    const text = trustQuestion("/p", [hook({}), hook({ event: "Stop", matcher: undefined, command: "notify-send done", file: "/p/agent.json" })])
    expect(text).toContain("This project (/p) brings 2 hooks")
    expect(text).toMatch(/PreToolUse\s+Bash\s+\.\/guard\.sh\s+\/p\/\.claude\/settings\.json/)
    expect(text).toMatch(/Stop\s+\*\s+notify-send done\s+\/p\/agent\.json/)
    expect(text.endsWith("[y/N] ")).toBe(true)
  })

  it("only a yes trusts", () => {
    const cases: Array<[string | undefined, boolean]> = [["y", true], ["Yes\n", true], [" Y ", true], ["", false], ["n", false], ["no", false], ["yeah", false], [undefined, false]]
    for (const [answer, expected] of cases) expect(parseTrustAnswer(answer), JSON.stringify(answer)).toBe(expected)
  })
})

describe("agent run in a terminal asks once whether to trust a project's hooks", () => {
  it.scopedLive("y: the commands are shown, the project is trusted as by agent trust, its hooks run, and the next run does not ask", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["first answer", "second answer"])
      const box = yield* project(server.url)
      const fromClaude = shellHook(box, "claude-project", "true")
      const fromConfig = shellHook(box, "config-project", "true")
      const fromUser = shellHook(box, "user", "true")
      box.write("project/.claude/settings.json", { hooks: { UserPromptSubmit: group(fromClaude) } })
      box.write("project/.agent/agent.json", { hooks: { UserPromptSubmit: group(fromConfig) } })
      box.write("home/.claude/settings.json", { hooks: { UserPromptSubmit: group(fromUser) } })

      const user = yield* terminal(box, ["run", "hello"])
      const question = yield* user.waitFor(/brings 2 hooks[\s\S]*?\[y\/N\] /)
      // The user's own hook is not part of the question: it runs anyway.
      expect(question).toContain(fromClaude)
      expect(question).toContain(fromConfig)
      expect(question).not.toContain(fromUser)
      expect(question).toContain(box.path("project/.claude/settings.json"))
      // Nothing has run before the answer.
      expect(runsOf(box, "user")).toHaveLength(0)
      yield* user.type("y\r")
      yield* user.waitFor(/is trusted: its hooks run\./)
      yield* user.waitFor(/first answer/)
      expect(yield* user.exited).toBe(0)
      expect(runsOf(box, "claude-project")).toHaveLength(1)
      expect(runsOf(box, "config-project")).toHaveLength(1)
      expect(user.screen()).not.toMatch(/do not run: the project .* is not trusted/)

      // Stored as `agent trust` stores it.
      const listed = yield* agent(box, ["hooks", "list", "--format", "json"])
      expect(JSON.parse(listed.stdout).trusted).toBe(true)

      const again = yield* terminal(box, ["run", "hello again"])
      yield* again.waitFor(/second answer/)
      expect(yield* again.exited).toBe(0)
      expect(again.screen()).not.toContain("[y/N]")
      expect(runsOf(box, "claude-project")).toHaveLength(2)
    }), 120_000)

  it.scopedLive("Enter (no): the hooks are held with the usual warning, nothing is stored, and the next terminal run asks again; without a terminal nothing is asked", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["first answer", "piped answer", "third answer"])
      const box = yield* project(server.url)
      const fromClaude = shellHook(box, "claude-project", "true")
      box.write("project/.claude/settings.json", { hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: fromClaude }] }] } })

      const user = yield* terminal(box, ["run", "hello"])
      const question = yield* user.waitFor(/brings a hook[\s\S]*?\[y\/N\] /)
      expect(question).toMatch(new RegExp(`PreToolUse\\s+Bash\\s+${fromClaude.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}`))
      yield* user.type("\r")
      yield* user.waitFor(/is not trusted: its hooks do not run/)
      yield* user.waitFor(/first answer/)
      expect(yield* user.exited).toBe(0)
      expect(user.screen()).toMatch(/hooks in .*\.claude\/settings\.json.* do not run: the project .* is not trusted/)
      const listed = yield* agent(box, ["hooks", "list", "--format", "json"])
      expect(JSON.parse(listed.stdout).trusted).toBe(false)

      // No terminal: no question (the run does not wait for one), the hook is held with the warning.
      const piped = yield* agent(box, ["run", "hello from a script"])
      expect(piped.code, piped.stderr).toBe(0)
      expect(piped.stdout).toContain("piped answer")
      expect(piped.stderr + piped.stdout).not.toContain("[y/N]")
      expect(piped.stderr).toMatch(/do not run: the project .* is not trusted/)

      const again = yield* terminal(box, ["run", "hello again"])
      yield* again.waitFor(/brings a hook[\s\S]*?\[y\/N\] /)
      yield* again.type("n\r")
      yield* again.waitFor(/third answer/)
      expect(yield* again.exited).toBe(0)
      expect(runsOf(box, "claude-project")).toHaveLength(0)
    }), 120_000)
})
