import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { claudeSettingsFiles, collect, readClaudeSettings } from "../../src/hooks/HookConfig.js"
import { interpolateHeader, runCommand } from "../../src/hooks/HookRunner.js"
import { makeInstanceInfo } from "../../src/runtime/Instance.js"

const context = { cwd: os.tmpdir(), env: { PATH: process.env.PATH, GREETING: "hello" } }

describe("HookRunner.runCommand (a real shell)", () => {
  it.live("gives the input on stdin and the environment; reports exit code, stdout and stderr", () =>
    Effect.gen(function*() {
      const result = yield* runCommand({ type: "command", command: "read line; echo \"$GREETING $line\"; echo warn >&2; exit 3" }, "world\n", context)
      expect(result).toEqual({ _tag: "Exited", code: 3, stdout: "hello world\n", stderr: "warn\n" })
    }))

  it.live("a hook past its timeout is killed with what it started, and reported as timed out", () =>
    Effect.gen(function*() {
      const marker = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "hook-")), "late")
      const started = Date.now()
      const result = yield* runCommand({ type: "command", command: `(sleep 2; touch ${marker}) & wait`, timeout: 0.3 }, "", context)
      expect(result).toEqual({ _tag: "TimedOut", seconds: 0.3 })
      expect(Date.now() - started).toBeLessThan(1500)
      yield* Effect.sleep("2500 millis")
      expect(fs.existsSync(marker)).toBe(false)
    }), 10_000)

  it.live("a hook that does not read its input still answers", () =>
    Effect.gen(function*() {
      const result = yield* runCommand({ type: "command", command: "echo '{}'" }, "x".repeat(1024 * 1024), context)
      expect(result).toMatchObject({ _tag: "Exited", code: 0, stdout: "{}\n" })
    }))
})

describe("HookRunner.interpolateHeader", () => {
  const env = { TOKEN: "t0k", SECRET: "s3cret" }
  const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>, string]> = [
    ["Bearer $TOKEN", ["TOKEN"], "Bearer t0k"],
    ["Bearer ${TOKEN}", ["TOKEN"], "Bearer t0k"],
    // Only the variables the hook lists.
    ["Bearer $SECRET", ["TOKEN"], "Bearer $SECRET"],
    ["$MISSING", ["MISSING"], ""],
    ["plain", [], "plain"]
  ]
  for (const [value, allowed, expected] of cases) it(value, () => expect(interpolateHeader(value, allowed, env)).toBe(expected))
})

describe("HookConfig", () => {
  const dir = () => fs.mkdtempSync(path.join(os.tmpdir(), "hook-config-"))

  it("reads Claude Code's settings, skipping handler types and events it does not run, with warnings", () => {
    const file = path.join(dir(), "settings.json")
    fs.writeFileSync(file, JSON.stringify({
      model: "opus",
      permissions: { allow: ["Bash(ls)"] },
      hooks: {
        PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "guard.sh", timeout: 5 }, { type: "prompt", prompt: "is it safe?" }] }],
        SubagentStart: [{ hooks: [{ type: "command", command: "x" }] }]
      }
    }))
    const read = readClaudeSettings(file, "project")
    expect(read.source).toEqual({ file, scope: "project", hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "guard.sh", timeout: 5 }] }] } })
    expect(read.warnings).toEqual([
      `${file}: hooks.PreToolUse: a handler of type "prompt" is not run here (only "command" and "http")`,
      `${file}: hooks.SubagentStart: not an event this runtime has; skipped`
    ])
  })

  it("a missing file is no hooks; a file in another shape is a warning; disableAllHooks is read", () => {
    const root = dir()
    expect(readClaudeSettings(path.join(root, "none.json"), "user")).toEqual({ disableAll: false, warnings: [] })
    fs.writeFileSync(path.join(root, "bad.json"), JSON.stringify({ hooks: { PreToolUse: "guard.sh" } }))
    expect(readClaudeSettings(path.join(root, "bad.json"), "user").warnings[0]).toMatch(/not in Claude Code's settings shape/)
    fs.writeFileSync(path.join(root, "off.json"), JSON.stringify({ disableAllHooks: true }))
    expect(readClaudeSettings(path.join(root, "off.json"), "user").disableAll).toBe(true)
  })

  it("lists the user's file, then the project's (unless project config is off)", () => {
    const instance = makeInstanceInfo({ directory: os.tmpdir(), home: "/home/u", env: {} })
    expect(claudeSettingsFiles(instance, true).map((entry) => `${entry.scope}:${entry.file}`)).toEqual([
      "user:/home/u/.claude/settings.json",
      `project:${path.join(instance.worktree, ".claude/settings.json")}`,
      `project:${path.join(instance.worktree, ".claude/settings.local.json")}`
    ])
    expect(claudeSettingsFiles(instance, false)).toHaveLength(1)
  })

  it("collects every handler with its file and scope, and warns about a matcher that is not a regex", () => {
    const collected = collect([
      { file: "a.json", scope: "user", hooks: { Stop: [{ hooks: [{ type: "command", command: "s" }] }] } },
      { file: "b.json", scope: "managed", hooks: { PreToolUse: [{ matcher: "Bash(", hooks: [{ type: "http", url: "http://x" }] }] } }
    ])
    expect(collected.hooks.map((hook) => [hook.event, hook.file, hook.scope, hook.handler.type])).toEqual([
      ["Stop", "a.json", "user", "command"],
      ["PreToolUse", "b.json", "managed", "http"]
    ])
    expect(collected.warnings[0]).toMatch(/^b\.json: hooks\.PreToolUse: matcher "Bash\(" is not a valid regex/)
  })
})
