import { MockOpenAIServer, ScriptedModel, type TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { agent, events, project } from "./AgentProcess.js"
import { runsOf, shellHook } from "./HookScripts.js"

const { toolCall } = ScriptedModel

const group = (command: string, matcher?: string) => [{ ...(matcher === undefined ? {} : { matcher }), hooks: [{ type: "command", command }] }]
const setHooks = (box: TestInstance.Sandbox, hooks: object) => box.write("home/.config/agent/agent.json", JSON.stringify({ hooks }))

describe("hooks in loops and subagents", () => {
  it.scopedLive("a Stop hook that always blocks is overridden at its 8th block: the agent answered 8 times and stopped", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(Array.from({ length: 12 }, (_, index) => `answer ${index + 1}`))
      const box = yield* project(server.url)
      setHooks(box, { Stop: group(shellHook(box, "nag", "echo 'keep going' >&2\nexit 2")) })
      const result = yield* agent(box, ["run", "--format", "json", "work"])
      expect(result.code, result.stderr).toBe(0)
      // The first answer, then 7 more the hook asked for; its 8th block is overridden.
      expect(server.requests).toHaveLength(8)
      expect(runsOf(box, "nag").map((input) => input.stop_hook_active)).toEqual([false, true, true, true, true, true, true, true])
      expect(result.stderr).toContain("a Stop hook blocked the agent from stopping 8 times in a row; it stops now")
      expect(JSON.stringify(server.requests[7]!.messages)).toContain("keep going")
    }), 60_000)

  it.scopedLive("a subagent's tool calls run the tool hooks, its end runs SubagentStop (not Stop), and its prompt runs no UserPromptSubmit", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [toolCall("task", { description: "Check", prompt: "check the notes", subagent_type: "general" })],
        // the subagent's turns
        [toolCall("read", { filePath: "notes.txt" })],
        "child done",
        "parent done"
      ])
      const box = yield* project(server.url, { permission: { "*": "allow" } }, { "project/notes.txt": "hello\n" })
      const pre = shellHook(box, "pre", "true")
      const stop = shellHook(box, "stop", "true")
      const subStop = shellHook(box, "substop", "true")
      const submit = shellHook(box, "submit", "true")
      setHooks(box, { PreToolUse: group(pre), Stop: group(stop), SubagentStop: group(subStop), UserPromptSubmit: group(submit) })
      const result = yield* agent(box, ["run", "--format", "json", "delegate"])
      expect(result.code, result.stderr).toBe(0)
      expect(runsOf(box, "pre").map((input) => input.tool_name)).toEqual(["Task", "Read"])
      const parent = events(result.stdout).at(-1)!.sessionID
      const [task, read] = runsOf(box, "pre")
      expect(task!.session_id).toBe(parent)
      expect(task!.tool_input).toMatchObject({ prompt: "check the notes", subagent_type: "general" })
      expect(read!.session_id).not.toBe(parent)
      expect(read!.tool_input).toMatchObject({ file_path: "notes.txt" })
      expect(runsOf(box, "substop")).toEqual([expect.objectContaining({ hook_event_name: "SubagentStop", session_id: read!.session_id, stop_hook_active: false })])
      expect(runsOf(box, "stop")).toEqual([expect.objectContaining({ hook_event_name: "Stop", session_id: parent })])
      expect(runsOf(box, "submit").map((input) => input.prompt)).toEqual(["delegate"])
    }), 60_000)

  it.scopedLive("a PreToolUse ask sends a call the rules allow to a person: with no terminal it is rejected and does not run", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[toolCall("bash", { command: "touch asked.txt", description: "Touch" })], "never"])
      const box = yield* project(server.url, { permission: { bash: "allow" } })
      const ask = shellHook(box, "ask", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"a person should look"}}'`)
      setHooks(box, { PreToolUse: group(ask, "Bash") })
      const result = yield* agent(box, ["run", "--format", "json", "touch it"])
      expect(result.code).toBe(3)
      expect(result.stderr).toContain("rejected (no terminal to ask")
      expect(runsOf(box, "ask")).toHaveLength(1)
      expect(fs.existsSync(box.path("project/asked.txt"))).toBe(false)
    }), 60_000)
})
