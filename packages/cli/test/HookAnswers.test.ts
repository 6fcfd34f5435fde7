// The answer shapes of the hook contract that HookEvents/Hooks tests leave out, through `agent run`
// with real shell and Python hooks and the scripted model: Claude Code's older decision spelling,
// systemMessage, continue:false, exit 2 on Stop and SessionStart, PreCompact on an automatic
// compaction, and the PermissionRequest hook in front of the remote approver (answer, timeout, fallback).
import { MockOpenAIServer, ScriptedModel, type TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { agent, events, project } from "./AgentProcess.js"
import { httpServer, recordingServer } from "./ApprovalSupport.js"
import { pythonHook, runsOf, shellHook } from "./HookScripts.js"

const { finish, text, toolCall } = ScriptedModel

const bash = (command: string) => toolCall("bash", { command, description: "Runs a command" })
const group = (command: string, matcher?: string, extra: object = {}) => ({
  ...(matcher === undefined ? {} : { matcher }),
  hooks: [{ type: "command", command, ...extra }]
})
const setHooks = (box: TestInstance.Sandbox, hooks: object) => box.write("home/.config/agent/agent.json", JSON.stringify({ hooks }))
const hookLines = (stdout: string) => events(stdout).filter((line) => line.type === "hook")
const toolParts = (stdout: string) => events(stdout).filter((line) => line.type === "tool_use").map((line) => line.part)
const requestText = (server: { requests: ReadonlyArray<{ messages: unknown }> }, index: number) => JSON.stringify(server.requests[index]?.messages)

describe("hook answers through agent run", () => {
  it.scopedLive("PreToolUse: the older decision approve answers an ask and block refuses with its reason; systemMessage is shown; continue:false ends the run with its stopReason", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[bash("echo one > one.txt")], [bash("echo two > two.txt")], [bash("echo three > three.txt")], "never"])
      const box = yield* project(server.url, { permission: { bash: "ask" } })
      const guard = pythonHook(
        box,
        "guard",
        [
          "command = data['tool_input']['command']",
          "if 'one' in command: print(json.dumps({'decision': 'approve', 'systemMessage': 'approved by the policy bot'}))",
          "elif 'two' in command: print(json.dumps({'decision': 'block', 'reason': 'two is not allowed'}))",
          "else: print(json.dumps({'continue': False, 'stopReason': 'enough for today'}))"
        ].join("\n")
      )
      setHooks(box, { PreToolUse: [group(guard, "Bash")] })
      const result = yield* agent(box, ["run", "--format", "json", "count"])
      // The first call ran without anyone being asked (no terminal: an ask would have been rejected).
      expect(fs.readFileSync(box.path("project/one.txt"), "utf8").trim()).toBe("one")
      expect(result.stderr).toContain("approved by the policy bot")
      expect(fs.existsSync(box.path("project/two.txt"))).toBe(false)
      expect(requestText(server, 2)).toContain("two is not allowed")
      // continue:false: the run ends after this call, as rejected; the model is not called again.
      expect(result.code, result.stderr).toBe(3)
      expect(fs.existsSync(box.path("project/three.txt"))).toBe(false)
      expect(result.stdout + result.stderr).toContain("enough for today")
      expect(server.requests).toHaveLength(3)
      expect(hookLines(result.stdout).map((line) => line.decision)).toEqual(["allow", "deny", "stop"])
    }), 60_000)

  it.scopedLive("Stop's exit 2 keeps the agent going with its stderr; SessionStart's exit 2 is only shown to the user", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["first answer", "tests checked"])
      const box = yield* project(server.url)
      const start = shellHook(box, "start", "echo 'no context from me' >&2\nexit 2")
      const stop = shellHook(box, "stop", `if printf '%s' "$input" | grep -q '"stop_hook_active":false'; then echo 'run the tests first' >&2; exit 2; fi`)
      setHooks(box, { SessionStart: [group(start)], Stop: [group(stop)] })
      const result = yield* agent(box, ["run", "--format", "json", "finish up"])
      expect(result.code, result.stderr).toBe(0)
      expect(result.stderr).toContain("no context from me")
      expect(requestText(server, 0)).not.toContain("no context from me")
      expect(server.requests).toHaveLength(2)
      expect(requestText(server, 1)).toContain("run the tests first")
      expect(events(result.stdout).at(-1)).toMatchObject({ type: "result", text: "tests checked" })
      expect(runsOf(box, "stop").map((input) => input.stop_hook_active)).toEqual([false, true])
    }), 60_000)

  it.scopedLive("PreCompact runs before an automatic compaction, matched on trigger auto", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [bash("echo big"), finish("tool-calls", { input: 7_500, output: 10 })],
        [text("SUMMARY: ran echo big"), finish("stop", { input: 3_000, output: 10 })],
        "done after the summary"
      ])
      const box = yield* project(server.url, { permission: { bash: "allow" } })
      // The model's window: 8000 tokens, 1000 kept for output; the first step reports 7500 used.
      const config = JSON.parse(fs.readFileSync(box.path("project/agent.json"), "utf8"))
      config.provider.mock.models["model-a"] = { limit: { context: 8_000, output: 1_000 } }
      box.write("project/agent.json", config)
      const auto = shellHook(box, "auto", "true")
      const manual = shellHook(box, "manual", "true")
      setHooks(box, { PreCompact: [group(auto, "auto"), group(manual, "manual")] })
      const result = yield* agent(box, ["run", "--format", "json", "make it big"])
      expect(result.code, result.stderr).toBe(0)
      expect(runsOf(box, "auto")).toEqual([expect.objectContaining({ hook_event_name: "PreCompact", trigger: "auto", custom_instructions: "" })])
      expect(runsOf(box, "manual")).toHaveLength(0)
      expect(requestText(server, 2)).toContain("SUMMARY: ran echo big")
      expect(hookLines(result.stdout)).toEqual([expect.objectContaining({ event: "PreCompact", decision: "none" })])
    }), 60_000)
})

describe("the PermissionRequest hook in front of the approver", () => {
  it.scopedLive("a PermissionRequest hook that times out fails open: the ask goes on to the approver, whose answer runs the call", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[bash("echo approved > ok.txt")], "Done."])
      const webhook = yield* recordingServer(200, { reply: "once" })
      const asks = webhook.bodies
      const box = yield* project(server.url, { permission: { bash: "ask", approver: { webhook: webhook.url, timeout: 30 } } })
      setHooks(box, { PermissionRequest: [group(shellHook(box, "slow", "sleep 5"), "Bash", { timeout: 1 })] })
      const result = yield* agent(box, ["run", "--format", "json", "approve it"])
      expect(result.code, result.stderr).toBe(0)
      expect(fs.readFileSync(box.path("project/ok.txt"), "utf8").trim()).toBe("approved")
      expect(hookLines(result.stdout)).toEqual([expect.objectContaining({ event: "PermissionRequest", decision: "timeout" })])
      expect(asks).toHaveLength(1)
      expect(asks[0]).toMatchObject({ permission: "bash", patterns: ["echo approved > ok.txt"] })
    }), 60_000)

  it.scopedLive("a PermissionRequest hook with no answer leaves the ask to the approver; nobody answers in time: the fallback (deny by default, allow when set)", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[bash("echo denied > no.txt")], [bash("echo allowed > yes.txt")], "Done."])
      // Takes every ask and never answers.
      const webhook = yield* httpServer(() => undefined)
      const box = yield* project(server.url, { permission: { bash: "ask", approver: { webhook: webhook.url } } })
      const silent = shellHook(box, "silent", "exit 0")
      setHooks(box, { PermissionRequest: [group(silent, "Bash")] })

      const denied = yield* agent(box, ["run", "--format", "json", "--approver-timeout", "1", "try it"])
      expect(denied.code, denied.stderr).toBe(3)
      expect(runsOf(box, "silent")).toHaveLength(1)
      expect(denied.stderr).toMatch(/no answer from the approver \(webhook http:\/\/127\.0\.0\.1:\d+\) within 1 s; fallback: deny/)
      expect(fs.existsSync(box.path("project/no.txt"))).toBe(false)
      expect(events(denied.stdout).at(-1)!.permission_denials).toMatchObject([{ tool: "bash", decidedBy: { type: "timeout", seconds: 1 } }])

      const allowed = yield* agent(box, ["run", "--format", "json", "--approver-timeout", "1", "--approver-fallback", "allow", "try again"])
      expect(allowed.code, allowed.stderr).toBe(0)
      expect(runsOf(box, "silent")).toHaveLength(2)
      expect(fs.readFileSync(box.path("project/yes.txt"), "utf8").trim()).toBe("allowed")
      expect(toolParts(allowed.stdout)[0].state.status).toBe("completed")
    }), 60_000)
})
