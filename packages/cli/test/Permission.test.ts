import { AgentRegistry, ApprovalStore, ConfigService, Database, Instance, Permission, PermissionPolicy } from "@agent/core"
import { TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { agent } from "./AgentProcess.js"

/**
 * A user whose config overrides the built-in `build` and `plan` agents, adds agents of its own
 * (in JSON and in markdown), has a global file and a managed policy.
 */
const files = {
  "home/.config/agent/agent.json": { permission: { webfetch: "deny" } },
  "project/opencode.json": {
    permission: { bash: { "*": "ask", "git status *": "allow", "git push *": "deny" }, edit: "ask" },
    agent: {
      build: { permission: { bash: { "rm *": "deny", "git push *": "ask" }, edit: { "src/*": "allow" } } },
      plan: { permission: { edit: { "docs/*": "allow" } } },
      reviewer: { mode: "subagent", description: "Reviews diffs", permission: { "*": "deny", read: "allow", grep: "allow" } }
    }
  },
  "project/.opencode/agent/docs.md": "---\ndescription: Writes docs\nmode: primary\npermission:\n  edit:\n    \"*\": deny\n    \"*.md\": allow\n---\nWrite docs.\n",
  "managed/agent.json": { permission: { bash: { "curl *": "deny" } } }
}

/** [agent (default when absent), permission, pattern] */
const cases: ReadonlyArray<readonly [string | undefined, string, string]> = [
  [undefined, "bash", "git status --short"],
  [undefined, "bash", "git push origin main"], // the user's deny, then build's own ask: last match wins
  [undefined, "bash", "rm -rf build"],
  [undefined, "bash", "curl https://example.com"], // the managed policy wins over everything
  [undefined, "edit", "src/index.ts"],
  [undefined, "edit", "README.md"],
  [undefined, "webfetch", "https://example.com"],
  [undefined, "read", ".env"],
  ["plan", "edit", "src/index.ts"],
  ["plan", "edit", "docs/guide.md"],
  ["plan", "bash", "git push origin main"],
  ["explore", "edit", "src/index.ts"], // explore denies everything, but the user's edit rule comes after it
  ["explore", "glob", "src/**"],
  ["plan", "plan_exit", "*"],
  ["reviewer", "bash", "ls"],
  ["reviewer", "grep", "TODO"],
  ["docs", "edit", "guide.md"],
  ["docs", "edit", "src/index.ts"]
]

/** The same configuration, read in this process through the services the runtime uses. */
const inProcess = <A, E>(box: TestInstance.Sandbox, use: Effect.Effect<A, E, AgentRegistry | PermissionPolicy | ApprovalStore>) =>
  use.pipe(
    Effect.provide(
      Layer.mergeAll(AgentRegistry.layer, PermissionPolicy.layer, ApprovalStore.layerSql).pipe(
        Layer.provideMerge(Database.layer),
        Layer.provideMerge(ConfigService.layer),
        Layer.provide(Layer.succeed(Instance, box.instance))
      )
    )
  )

describe("agent permission explain", () => {
  it.scopedLive("agrees with AgentRegistry and Permission.evaluate on every case, naming the rule's file", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({ files })
      const expected = yield* inProcess(box, Effect.gen(function*() {
        const registry = yield* AgentRegistry
        const policy = yield* PermissionPolicy
        return yield* Effect.forEach(cases, ([name, permission, pattern]) =>
          Effect.gen(function*() {
            const chosen = name ? yield* registry.get(name) : yield* registry.defaultAgent()
            return { agent: chosen.name, rule: Permission.evaluate(permission, pattern, chosen.permission, policy.rules) }
          }))
      }))
      // The table covers every action and every layer a rule can come from.
      expect(new Set(expected.map(({ rule }) => rule.action))).toEqual(new Set(["allow", "ask", "deny"]))
      expect(new Set(expected.map(({ rule }) => rule.source?.layer))).toEqual(new Set(["default", "agent", "config", "policy"]))

      const answers = yield* Effect.forEach(
        cases,
        ([name, permission, pattern]) =>
          agent(box, ["permission", "explain", permission, pattern, "--format", "json", ...(name ? ["--agent", name] : [])]),
        { concurrency: 2 }
      )
      for (const [index, answer] of answers.entries()) {
        expect(answer.code, answer.stderr).toBe(0)
        const decision = JSON.parse(answer.stdout)
        const { agent: name, rule } = expected[index]!
        expect({ case: cases[index], agent: decision.agent, action: decision.action, rule: decision.rule }).toEqual({
          case: cases[index],
          agent: name,
          action: rule.action,
          rule
        })
      }

      // The readable form names the file and key that decided.
      const text = yield* agent(box, ["permission", "explain", "bash", "rm -rf build"])
      expect(text.stdout.split("\n")[0]).toBe("deny  (agent build)")
      expect(text.stdout).toContain(`decided by: bash "rm *" → deny  [config: ${box.path("project/opencode.json")} (agent.build.permission.bash.rm *)]`)
      const policy = yield* agent(box, ["permission", "explain", "bash", "curl https://example.com"])
      expect(policy.stdout).toContain(`[policy: ${box.path("managed/agent.json")} (permission.bash.curl *)]`)
      // `agent debug permission` is the same command.
      const alias = yield* agent(box, ["debug", "permission", "bash", "rm -rf build"])
      expect(alias.stdout).toBe(text.stdout)
    }), 180_000)

  it.scopedLive("agent debug agent shows the rules AgentRegistry resolved, overrides included", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({ files })
      const rules = yield* inProcess(box, Effect.flatMap(AgentRegistry, (registry) => registry.get("build")))
      const result = yield* agent(box, ["debug", "agent", "build"])
      expect(result.code, result.stderr).toBe(0)
      const shown = JSON.parse(result.stdout)
      expect(shown.permission.map((rule: { permission: string; pattern: string; action: string }) => [rule.permission, rule.pattern, rule.action]))
        .toEqual(rules.permission.map((rule) => [rule.permission, rule.pattern, rule.action]))
      expect(shown.permission).toContainEqual({
        permission: "bash",
        pattern: "rm *",
        action: "deny",
        from: `config: ${box.path("project/opencode.json")} (agent.build.permission.bash.rm *)`
      })
    }), 60_000)

  it.scopedLive("a stored \"always\" approval turns the rules' ask into allow; tool names map to their permission", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({ files })
      yield* inProcess(box, Effect.flatMap(ApprovalStore, (store) =>
        store.add(box.instance.projectID, ["npm test *", "git push *"].map((pattern) => ({
          permission: "bash",
          pattern,
          action: "allow" as const,
        })))))
      const approved = yield* agent(box, ["permission", "explain", "bash", "npm test --watch"])
      expect(approved.code, approved.stderr).toBe(0)
      expect(approved.stdout.split("\n")[0]).toBe("allow  (agent build)")
      expect(approved.stdout).toContain(`decided by: bash "*" → ask  [config: ${box.path("project/opencode.json")} (permission.bash.*)]`)
      expect(approved.stdout).toContain('the rules ask, but a stored "always" approval allows it: bash "npm test *" → allow\n')
      // A deny is final: plan keeps the user's deny of git push, approval or not; build asks, so the approval counts.
      const denied = yield* agent(box, ["permission", "explain", "bash", "git push origin main", "--agent", "plan", "--format", "json"])
      expect(JSON.parse(denied.stdout)).toMatchObject({ action: "deny", rule: { pattern: "git push *", action: "deny" } })
      expect(JSON.parse(denied.stdout).approval).toBeUndefined()
      const pushed = yield* agent(box, ["permission", "explain", "bash", "git push origin main", "--format", "json"])
      expect(JSON.parse(pushed.stdout)).toMatchObject({ action: "allow", rule: { action: "ask" }, approval: { pattern: "git push *" } })

      const write = yield* agent(box, ["permission", "explain", "write", "src/a.ts", "--format", "json"])
      expect(JSON.parse(write.stdout)).toMatchObject({ permission: "edit", action: "allow", rule: { pattern: "src/*" } })
      const unknown = yield* agent(box, ["permission", "explain", "bash", "ls", "--agent", "ghost"])
      expect(unknown.code).toBe(2)
      expect(unknown.stderr).toContain('Agent "ghost" not found')
    }), 60_000)

  it.scopedLive("an ask the managed policy decides is not answered by a stored approval", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({ files: { "managed/agent.json": { permission: { bash: { "deploy *": "ask" } } } } })
      yield* inProcess(box, Effect.flatMap(ApprovalStore, (store) =>
        store.add(box.instance.projectID, [{ permission: "bash", pattern: "deploy *", action: "allow" as const }])))
      const result = yield* agent(box, ["permission", "explain", "bash", "deploy prod", "--format", "json"])
      expect(result.code, result.stderr).toBe(0)
      const decision = JSON.parse(result.stdout)
      expect(decision).toMatchObject({ action: "ask", rule: { pattern: "deploy *", action: "ask", source: { layer: "policy" } } })
      expect(decision.approval).toBeUndefined()
    }), 60_000)
})
