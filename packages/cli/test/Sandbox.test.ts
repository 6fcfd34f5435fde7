import { TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { agent } from "./AgentProcess.js"

/** bubblewrap on this machine (CI installs it; there, its absence is a failure, not a skip). */
const bwrap = (process.env.PATH ?? "").split(path.delimiter).some((dir) => dir !== "" && fs.existsSync(path.join(dir, "bwrap")))
const real = bwrap || process.env.CI !== undefined

describe("agent sandbox check", () => {
  it.scopedLive.runIf(real)("says that commands run in the sandbox, and what is writable and protected", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({ files: { "project/agent.json": {} } })
      const result = yield* agent(box, ["sandbox", "check"])
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout).toMatch(/^bubblewrap\s+\S*bwrap \(/m)
      expect(result.stdout).toMatch(/^namespaces\s+user, mount, pid and ipc: works$/m)
      expect(result.stdout).toContain("Agent build: workspace-write, network: none; enforce: preferred (default).")
      expect(result.stdout).toContain("Commands run in the sandbox.")
      expect(result.stdout).toMatch(new RegExp(`^writable\\s+${box.path("project")}$`, "m"))
      expect(result.stdout).toMatch(new RegExp(`^read-only\\s+${box.path("project/agent.json")}$`, "m"))
      expect(result.stdout).toMatch(new RegExp(`^held absent\\s+${box.path("project/.agent")}$`, "m"))
    }))

  it.scopedLive("without bubblewrap: why not, what happens to commands, and exit 1; per agent; json", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({
        files: { "project/agent.json": { agent: { review: { mode: "subagent", sandbox: { mode: "read-only" } } } } }
      })
      const env = { PATH: box.path("empty-bin") }
      const result = yield* agent(box, ["sandbox", "check"], { env })
      expect(result.code).toBe(1)
      expect(result.stdout).toMatch(/^bubblewrap\s+not found on PATH$/m)
      expect(result.stdout).toContain("The sandbox cannot start here: bubblewrap (bwrap) is not installed or not on PATH")
      expect(result.stdout).toContain("Commands run UNSANDBOXED, with one warning per run")

      const review = yield* agent(box, ["sandbox", "check", "--agent", "review", "--format", "json"], { env })
      expect(review.code).toBe(1)
      expect(JSON.parse(review.stdout)).toMatchObject({
        agent: "review",
        usable: false,
        capabilities: { platform: "linux", works: false },
        plan: { active: false, settings: { mode: "read-only", enforce: "required", enforceSource: "default" } }
      })
    }))

})

describe("agent permission explain --sandboxed", () => {
  it.scopedLive("permission explain --sandboxed decides as for a sandboxed call; leaving the sandbox asks", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({
        files: { "project/agent.json": { permission: { bash: { "*": "ask", sandboxed: "allow", "rm *": "deny" } } } }
      })
      const outside = yield* agent(box, ["permission", "explain", "bash", "make test"])
      expect(outside.stdout.split("\n")[0]).toBe("ask  (agent build)")
      const inside = yield* agent(box, ["permission", "explain", "bash", "make test", "--sandboxed"])
      expect(inside.code, inside.stderr).toBe(0)
      expect(inside.stdout.split("\n")[0]).toBe("allow  (agent build, in the sandbox)")
      expect(inside.stdout).toContain("permission.bash.sandboxed")
      const rm = yield* agent(box, ["permission", "explain", "bash", "rm -rf x", "--sandboxed"])
      expect(rm.stdout.split("\n")[0]).toBe("deny  (agent build, in the sandbox)")
      const escape = yield* agent(box, ["permission", "explain", "sandbox_escape", "npm install"])
      expect(escape.stdout.split("\n")[0]).toBe("ask  (agent build)")
    }))
})
