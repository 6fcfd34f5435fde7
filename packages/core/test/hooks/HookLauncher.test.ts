import { SessionLoop, SessionStore, Tool } from "@agent/core"
import { ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as fs from "node:fs"

const echo = Tool.make({
  id: "echo",
  description: "Repeats the given text.",
  parameters: Schema.Struct({ text: Schema.String }),
  execute: (params) => Effect.succeed({ title: "echo", output: params.text })
})

const CALLS = 8

/** The launchers this process started that run now (`agent-launcher` children of this process). */
const launchers = () =>
  fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).filter((pid) => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
      return stat[1] === String(process.pid) && stat[0] !== "Z" && fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith("agent-launcher")
    } catch {
      return false
    }
  })

/** A run of CALLS tool calls, each with a PreToolUse hook that logs its parent pid, its cwd, its env and its input. */
const runWithHooks = (env: Record<string, string>, hooks: (command: string) => object) =>
  Effect.gen(function*() {
    const model = ScriptedModel.make([...Array.from({ length: CALLS }, (_, n) => [ScriptedModel.toolCall("echo", { text: `call ${n}` })]), "done"])
    const runtime = yield* TestRuntime.make({ model, tools: [echo], env })
    const log = runtime.box.path("home/hooks.log")
    // Inline, so `$PPID` is the pid of what started the hook's shell.
    const command = `input=$(cat); sleep 0.25; printf '%s\\t%s\\t%s\\t%s\\n' "$PPID" "$(pwd)" "$CLAUDE_PROJECT_DIR" "$input" >> '${log}'`
    runtime.box.write("home/.config/agent/agent.json", { hooks: hooks(command) })
    return yield* Effect.gen(function*() {
      const session = yield* (yield* SessionStore).create({ title: "hooks" })
      const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }], autoApprove: true })
      const running = launchers()
      const lines = fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n").map((line) => line.split("\t")) : []
      return { outcome, lines, running, directory: runtime.box.instance.directory, worktree: runtime.box.instance.worktree }
    }).pipe(Effect.provide(runtime.layer), Effect.scoped)
  })

const preToolUse = (command: string) => ({ PreToolUse: [{ matcher: "echo", hooks: [{ type: "command", command }] }] })

describe("command hooks through the launcher (in the runtime)", () => {
  it.scopedLive("the first hook starts from the runtime, the later ones through the launcher, alike; the launcher ends with the runtime", () =>
    Effect.gen(function*() {
      const run = yield* runWithHooks({}, preToolUse)
      expect(run.outcome.reason).toBe("completed")
      expect(run.lines).toHaveLength(CALLS)
      for (const [index, [, cwd, projectDir, input]] of run.lines.entries()) {
        expect(cwd).toBe(run.directory)
        expect(projectDir).toBe(run.worktree)
        expect(JSON.parse(input!)).toMatchObject({ hook_event_name: "PreToolUse", tool_name: "echo", tool_input: { text: `call ${index}` } })
      }
      const parents = run.lines.map(([parent]) => Number(parent))
      expect(parents[0]).toBe(process.pid)
      // The last hooks ran through the one launcher, which ran while the runtime did.
      expect(run.running).toHaveLength(1)
      expect(parents.at(-1)).toBe(Number(run.running[0]))
      // And ended with it.
      for (let attempt = 0; attempt < 100 && launchers().length > 0; attempt++) yield* Effect.sleep("20 millis")
      expect(launchers()).toEqual([])
    }), 60_000)

  it.scopedLive("AGENT_HOOK_LAUNCHER=off: every hook starts from the runtime, and no launcher runs", () =>
    Effect.gen(function*() {
      const run = yield* runWithHooks({ AGENT_HOOK_LAUNCHER: "off" }, preToolUse)
      expect(run.outcome.reason).toBe("completed")
      expect(run.lines.map(([parent]) => Number(parent))).toEqual(Array.from({ length: CALLS }, () => process.pid))
      expect(run.running).toEqual([])
    }), 60_000)

  it.scopedLive("command hooks that no step reaches start no launcher", () =>
    Effect.gen(function*() {
      const run = yield* runWithHooks({}, (command) => ({ PreCompact: [{ hooks: [{ type: "command", command }] }] }))
      expect(run.outcome.reason).toBe("completed")
      expect(run.lines).toEqual([])
      expect(run.running).toEqual([])
    }), 60_000)
})
