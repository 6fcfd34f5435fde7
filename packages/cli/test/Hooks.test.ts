import { MockOpenAIServer, ScriptedModel, type TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { agent, events, project } from "./AgentProcess.js"
import { on, pythonHook, runsOf, shellHook } from "./HookScripts.js"

const { toolCall } = ScriptedModel

const bash = (command: string) => toolCall("bash", { command, description: "Runs a command" })
/** The user's own config file: its hooks run without trust. */
const setHooks = (box: TestInstance.Sandbox, hooks: object) => box.write("home/.config/agent/agent.json", JSON.stringify({ hooks }))
const toolParts = (stdout: string) => events(stdout).filter((line) => line.type === "tool_use").map((line) => line.part)
const hookLines = (stdout: string) => events(stdout).filter((line) => line.type === "hook")

describe("PreToolUse hooks through agent run", () => {
  it.scopedLive("a shell hook's exit 2 blocks the call with its stderr; it sees Claude Code's names, fields and environment", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[bash("echo hi > out.txt")], "Blocked."])
      const box = yield* project(server.url, { permission: { bash: "allow" } })
      const hook = shellHook(box, "guard", "echo 'writing files is not allowed' >&2\nexit 2")
      setHooks(box, on("PreToolUse", hook, "Bash"))
      const result = yield* agent(box, ["run", "--format", "json", "write a file"])
      expect(result.code, result.stderr).toBe(0)
      const [part] = toolParts(result.stdout)
      expect(part.state.status).toBe("error")
      expect(part.state.error).toBe("Blocked by a PreToolUse hook: writing files is not allowed")
      expect(fs.existsSync(box.path("project/out.txt"))).toBe(false)
      // The model is told why.
      expect(JSON.stringify(server.requests[1]!.messages)).toContain("writing files is not allowed")
      const [input] = runsOf(box, "guard")
      expect(input).toMatchObject({
        hook_event_name: "PreToolUse",
        tool_name: "Bash",
        tool_input: { command: "echo hi > out.txt", description: "Runs a command" },
        cwd: box.path("project"),
        permission_mode: "default"
      })
      expect(input!.session_id).toMatch(/^ses_/)
      expect(input!.tool_use_id).toBe(part.callID)
      expect(fs.existsSync(input!.transcript_path)).toBe(true)
      expect(fs.readFileSync(box.path("home/hooks/guard.log.env"), "utf8").trim()).toBe(`${box.path("project")}|${box.path("project")}`)
      expect(hookLines(result.stdout)).toEqual([
        expect.objectContaining({ event: "PreToolUse", command: hook, exitCode: 2, decision: "deny", durationMs: expect.any(Number) })
      ])
    }), 60_000)

  it.scopedLive("a Python hook's allow answers the ask a rule makes, and its updatedInput (Claude's field names) is what runs", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[toolCall("write", { filePath: "a.txt", content: "original" })], "Done."])
      const box = yield* project(server.url, { permission: { edit: "ask" } })
      const hook = pythonHook(box, "rewrite", [
        "assert data['tool_input']['file_path'].endswith('a.txt')",
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', 'permissionDecision': 'allow',",
        "  'permissionDecisionReason': 'trusted path', 'updatedInput': {'file_path': data['tool_input']['file_path'], 'content': 'rewritten'}}}))"
      ].join("\n"))
      setHooks(box, on("PreToolUse", hook, "Write|Edit"))
      // Without a terminal an ask is rejected (exit 3); the hook's allow answers it instead.
      const result = yield* agent(box, ["run", "--format", "json", "write a.txt"])
      expect(result.code, result.stderr).toBe(0)
      expect(toolParts(result.stdout)[0].state.status).toBe("completed")
      expect(fs.readFileSync(box.path("project/a.txt"), "utf8")).toBe("rewritten")
      expect(runsOf(box, "rewrite")[0]).toMatchObject({ tool_name: "Write", tool_input: { content: "original" } })
      expect(hookLines(result.stdout)[0]).toMatchObject({ event: "PreToolUse", exitCode: 0, decision: "allow" })
    }), 60_000)

  it.scopedLive("a hook's allow never overrides a deny rule; exit 2 blocks even when its JSON says allow", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[bash("rm victim.txt")], "Kept.", [bash("touch made.txt")], "Blocked."])
      const box = yield* project(server.url, { permission: { bash: { "*": "allow", "rm *": "deny" } } }, { "project/victim.txt": "keep" })
      const allow = shellHook(box, "allow", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'`)
      setHooks(box, on("PreToolUse", allow))
      const denied = yield* agent(box, ["run", "--auto-approve", "--format", "json", "delete victim.txt"])
      expect(denied.code, denied.stderr).toBe(0)
      expect(toolParts(denied.stdout)[0].state.error).toMatch(/Blocked/)
      expect(fs.readFileSync(box.path("project/victim.txt"), "utf8")).toBe("keep")

      const both = shellHook(box, "both", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'\necho 'exit 2 wins' >&2\nexit 2`)
      setHooks(box, on("PreToolUse", both))
      const blocked = yield* agent(box, ["run", "--format", "json", "make a file"])
      expect(toolParts(blocked.stdout)[0].state.error).toBe("Blocked by a PreToolUse hook: exit 2 wins")
      expect(fs.existsSync(box.path("project/made.txt"))).toBe(false)
    }), 60_000)

  it.scopedLive("a JSON deny's reason reaches the model; a hook's deny wins over an allow rule", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[bash("ls")], "ok"])
      const box = yield* project(server.url, { permission: { bash: "allow" } })
      const deny = pythonHook(box, "deny", "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', 'permissionDecision': 'deny', 'permissionDecisionReason': 'use the list tool'}}))")
      setHooks(box, on("PreToolUse", deny, "Bash"))
      const result = yield* agent(box, ["run", "--format", "json", "list"])
      expect(toolParts(result.stdout)[0].state.error).toBe("Blocked by a PreToolUse hook: use the list tool")
      expect(JSON.stringify(server.requests[1]!.messages)).toContain("use the list tool")
    }), 60_000)
})
