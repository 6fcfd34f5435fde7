import { MockOpenAIServer } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { agent, project } from "./AgentProcess.js"
import { runsOf, shellHook } from "./HookScripts.js"

const group = (command: string) => [{ hooks: [{ type: "command", command }] }]

describe("hooks that come with a project run only once it is trusted", () => {
  it.scopedLive("untrusted: listed with a warning, never run; agent trust: they run; --revoke: they stop; the user's and the managed dir's always run", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["one", "two", "three"])
      const box = yield* project(server.url, {}, {})
      const fromClaude = shellHook(box, "claude-project", "true")
      const fromConfig = shellHook(box, "config-project", "true")
      const fromManaged = shellHook(box, "managed", "true")
      const fromUser = shellHook(box, "user", "true")
      box.write("project/.claude/settings.json", { hooks: { UserPromptSubmit: group(fromClaude) } })
      box.write("project/.agent/agent.json", { hooks: { UserPromptSubmit: group(fromConfig) } })
      box.write("managed/agent.json", { hooks: { UserPromptSubmit: group(fromManaged) } })
      box.write("home/.claude/settings.json", { hooks: { UserPromptSubmit: group(fromUser) } })

      const listed = yield* agent(box, ["hooks", "list", "--format", "json"])
      expect(listed.code, listed.stderr).toBe(0)
      const before = JSON.parse(listed.stdout)
      expect(before.trusted).toBe(false)
      const runs = (hooks: Array<any>) => Object.fromEntries(hooks.map((hook) => [hook.command, [hook.scope, hook.runs]]))
      expect(runs(before.hooks)).toEqual({
        [fromClaude]: ["project", false],
        [fromConfig]: ["project", false],
        [fromManaged]: ["managed", true],
        [fromUser]: ["user", true]
      })
      const text = yield* agent(box, ["hooks", "list"])
      expect(text.stdout).toContain("the project is not trusted (agent trust)")
      expect(text.stdout).toContain(box.path("project/.claude/settings.json"))

      const untrusted = yield* agent(box, ["run", "hello"])
      expect(untrusted.code, untrusted.stderr).toBe(0)
      expect(untrusted.stderr).toMatch(/hooks in .*\.claude\/settings\.json.* do not run: the project .* is not trusted/)
      expect(runsOf(box, "claude-project")).toHaveLength(0)
      expect(runsOf(box, "config-project")).toHaveLength(0)
      expect(runsOf(box, "managed")).toHaveLength(1)
      expect(runsOf(box, "user")).toHaveLength(1)

      const trusted = yield* agent(box, ["trust"])
      expect(trusted.code, trusted.stderr).toBe(0)
      expect(trusted.stdout).toContain(`${box.path("project")} is trusted`)
      yield* agent(box, ["run", "hello again"])
      expect(runsOf(box, "claude-project")).toHaveLength(1)
      expect(runsOf(box, "config-project")).toHaveLength(1)

      const revoked = yield* agent(box, ["trust", "--revoke"])
      expect(revoked.code, revoked.stderr).toBe(0)
      yield* agent(box, ["run", "and again"])
      expect(runsOf(box, "claude-project")).toHaveLength(1)
      expect(runsOf(box, "managed")).toHaveLength(3)
    }), 90_000)

  it.scopedLive("trust is the git root's: agent trust <directory> from elsewhere, then a run in a subdirectory runs the hooks; AGENT_DISABLE_PROJECT_CONFIG leaves them out; disableAllHooks stops every hook", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["one", "two", "three"])
      const box = yield* project(server.url, {}, {})
      const fromClaude = shellHook(box, "claude-project", "true")
      const fromUser = shellHook(box, "user", "true")
      box.write("project/.claude/settings.json", { hooks: { UserPromptSubmit: group(fromClaude) } })
      box.write("home/.claude/settings.json", { hooks: { UserPromptSubmit: group(fromUser) } })
      box.write("project/sub/readme.txt", "a subdirectory\n")

      // Trusted by naming it from outside the project: the git root is recorded.
      const trusted = yield* agent(box, ["trust", box.path("project/sub")], { cwd: box.path("home") })
      expect(trusted.code, trusted.stderr).toBe(0)
      expect(trusted.stdout).toContain(`${box.path("project")} is trusted`)
      const inSub = yield* agent(box, ["run", "hello"], { cwd: box.path("project/sub") })
      expect(inSub.code, inSub.stderr).toBe(0)
      expect(runsOf(box, "claude-project")).toHaveLength(1)

      // The project's files are off (the model's config comes from the environment): its hooks are not even listed.
      const offEnv = { AGENT_DISABLE_PROJECT_CONFIG: "1", AGENT_CONFIG_CONTENT: fs.readFileSync(box.path("project/agent.json"), "utf8") }
      const off = yield* agent(box, ["run", "hello"], { env: offEnv })
      expect(off.code, off.stderr).toBe(0)
      expect(runsOf(box, "claude-project")).toHaveLength(1)
      expect(runsOf(box, "user")).toHaveLength(2)
      const listedOff = yield* agent(box, ["hooks", "list", "--format", "json"], { env: offEnv })
      expect(JSON.parse(listedOff.stdout).hooks.map((hook: any) => hook.command)).toEqual([fromUser])

      // disableAllHooks in a settings file: no hook runs, the user's included; the list says why.
      box.write("project/.claude/settings.local.json", { disableAllHooks: true })
      const disabled = yield* agent(box, ["run", "hello"])
      expect(disabled.code, disabled.stderr).toBe(0)
      expect(runsOf(box, "claude-project")).toHaveLength(1)
      expect(runsOf(box, "user")).toHaveLength(2)
      const listed = JSON.parse((yield* agent(box, ["hooks", "list", "--format", "json"])).stdout)
      expect(listed.hooks.map((hook: any) => [hook.command, hook.runs, hook.reason])).toEqual([
        [fromUser, false, "disableAllHooks is set"],
        [fromClaude, false, "disableAllHooks is set"]
      ])
    }), 90_000)

  it.scopedLive("a hooks key that is not Claude Code's shape is a configuration error naming the file", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([])
      const box = yield* project(server.url)
      box.write("home/.config/agent/agent.json", { hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command" }] }] } })
      const result = yield* agent(box, ["run", "hi"])
      expect(result.code).toBe(2)
      expect(result.stderr).toContain(box.path("home/.config/agent/agent.json"))
      expect(result.stderr).toContain("hooks.PreToolUse.0.hooks.0")
    }), 60_000)
})
