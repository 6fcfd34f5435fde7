import { MockOpenAIServer, ScriptedModel, type TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import { agent, events, project } from "./AgentProcess.js"
import { pythonHook, runsOf, shellHook } from "./HookScripts.js"

const { toolCall } = ScriptedModel

const bash = (command: string) => toolCall("bash", { command, description: "Runs a command" })
const group = (command: string, matcher?: string, extra: object = {}) => ({
  ...(matcher === undefined ? {} : { matcher }),
  hooks: [{ type: "command", command, ...extra }]
})
const setHooks = (box: TestInstance.Sandbox, hooks: object) => box.write("home/.config/agent/agent.json", JSON.stringify({ hooks }))
const toolParts = (stdout: string) => events(stdout).filter((line) => line.type === "tool_use").map((line) => line.part)
const hookLines = (stdout: string) => events(stdout).filter((line) => line.type === "hook")
const requestText = (server: { requests: ReadonlyArray<{ messages: unknown }> }, index: number) => JSON.stringify(server.requests[index]?.messages)

/** A local HTTP hook endpoint answering every POST with `answer`; the bodies it got are kept. */
const httpHook = (answer: { status: number; body: string }) =>
  Effect.acquireRelease(
    Effect.async<{ url: string; bodies: Array<any>; server: http.Server }>((resume) => {
      const bodies: Array<any> = []
      const server = http.createServer((request, response) => {
        let text = ""
        request.on("data", (chunk) => (text += chunk))
        request.on("end", () => {
          bodies.push({ body: JSON.parse(text), auth: request.headers.authorization })
          response.writeHead(answer.status, { "content-type": "application/json" }).end(answer.body)
        })
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ url: `http://127.0.0.1:${(server.address() as any).port}/hook`, bodies, server })))
    }),
    ({ server }) => Effect.sync(() => server.close())
  )

describe("hook events through agent run", () => {
  it.scopedLive("SessionStart and UserPromptSubmit add context; PostToolUse blocks with a reason; PostToolUseFailure adds context; Stop keeps the agent going once; SessionEnd runs at the end", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[bash("echo out"), toolCall("read", { filePath: "missing.txt" })], "first done", "second done"])
      const box = yield* project(server.url, { permission: { "*": "allow" } })
      const start = shellHook(box, "start", "echo 'the build uses make'")
      const submit = pythonHook(box, "submit", "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'UserPromptSubmit', 'additionalContext': 'ticket ABC-1'}}))")
      const post = shellHook(box, "post", `echo '{"decision":"block","reason":"run the linter next"}'`)
      const lint = shellHook(box, "lint", "echo 'lint crashed' >&2\nexit 1")
      const failure = pythonHook(box, "failure", "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PostToolUseFailure', 'additionalContext': 'create the file first'}}))")
      // Blocks the first stop only (stop_hook_active is false then).
      const stop = pythonHook(box, "stop", "if not data['stop_hook_active']:\n  print(json.dumps({'decision': 'block', 'reason': 'also write a summary'}))")
      const end = shellHook(box, "end", "true")
      setHooks(box, {
        SessionStart: [group(start, "startup")],
        UserPromptSubmit: [group(submit)],
        PostToolUse: [group(post, "Bash"), group(lint, "Bash")],
        PostToolUseFailure: [group(failure, "Read")],
        Stop: [group(stop)],
        SessionEnd: [group(end)]
      })
      const result = yield* agent(box, ["run", "--format", "json", "build it"])
      expect(result.code, result.stderr).toBe(0)
      expect(runsOf(box, "start")[0]).toMatchObject({ hook_event_name: "SessionStart", source: "startup" })
      expect(runsOf(box, "submit")[0]).toMatchObject({ hook_event_name: "UserPromptSubmit", prompt: "build it" })
      expect(requestText(server, 0)).toContain("the build uses make")
      expect(requestText(server, 0)).toContain("ticket ABC-1")
      // The two calls run in parallel: each is found by its tool, whichever ended first.
      const parts = toolParts(result.stdout)
      const bashPart = parts.find((part) => part.tool === "bash")
      const readPart = parts.find((part) => part.tool === "read")
      expect(parts).toHaveLength(2)
      expect(bashPart.state.output).toContain("PostToolUse hook: run the linter next")
      expect(runsOf(box, "post")[0]).toMatchObject({ tool_name: "Bash", tool_response: { stdout: expect.stringContaining("out") } })
      // A non-blocking error is shown to the user; the run goes on.
      expect(result.stderr).toContain("lint crashed")
      expect(readPart.state.status).toBe("error")
      expect(readPart.state.error).toContain("create the file first")
      expect(runsOf(box, "failure")[0]).toMatchObject({ hook_event_name: "PostToolUseFailure", tool_name: "Read", error: expect.any(String) })
      expect(requestText(server, 1)).toContain("run the linter next")
      // The Stop hook's reason went to the model, which answered once more.
      expect(server.requests).toHaveLength(3)
      expect(requestText(server, 2)).toContain("also write a summary")
      expect(runsOf(box, "stop").map((input) => input.stop_hook_active)).toEqual([false, true])
      expect(runsOf(box, "end")[0]).toMatchObject({ hook_event_name: "SessionEnd", reason: "other" })
      // The transcript is Claude Code's JSONL: the user's prompt, the assistant's tool calls by Claude's names.
      const transcript = fs.readFileSync(runsOf(box, "stop")[1]!.transcript_path, "utf8").trim().split("\n").map((line) => JSON.parse(line))
      expect(transcript[0]).toMatchObject({ type: "user", message: { role: "user", content: "build it" } })
      expect(transcript[1].message.content).toEqual(expect.arrayContaining([expect.objectContaining({ type: "tool_use", name: "Bash" }), expect.objectContaining({ type: "tool_use", name: "Read", input: { file_path: "missing.txt" } })]))
      expect(transcript[2].message.content[0]).toMatchObject({ type: "tool_result" })
      expect(hookLines(result.stdout).map((line) => `${line.event}:${line.decision}`)).toEqual(expect.arrayContaining([
        "SessionStart:context",
        "UserPromptSubmit:context",
        "PostToolUse:block",
        "PostToolUse:error",
        "PostToolUseFailure:context",
        "Stop:block",
        "Stop:none"
      ]))
    }), 60_000)

  it.scopedLive("a UserPromptSubmit hook's exit 2 drops the prompt: the model is not called and the user sees why", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["never"])
      const box = yield* project(server.url)
      setHooks(box, { UserPromptSubmit: [group(shellHook(box, "secret", "echo 'the prompt contains a secret' >&2\nexit 2"))] })
      const result = yield* agent(box, ["run", "--format", "json", "my password is hunter2"])
      expect(result.code).toBe(3)
      expect(result.stderr).toContain("A UserPromptSubmit hook blocked the prompt: the prompt contains a secret")
      expect(server.requests).toHaveLength(0)
    }), 60_000)

  it.scopedLive("PermissionRequest answers an ask (allow); a hook that times out fails open; a handler in two files runs once", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[bash("echo approved > ok.txt")], "Done."])
      const box = yield* project(server.url, { permission: { bash: "ask" } })
      const approve = pythonHook(box, "approve", "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PermissionRequest', 'decision': {'behavior': 'allow'}}}))")
      const slow = shellHook(box, "slow", "sleep 5")
      const hooks = { PermissionRequest: [group(approve, "Bash")], PreToolUse: [group(slow, "Bash", { timeout: 1 })] }
      setHooks(box, hooks)
      // The same handler in Claude Code's user settings.
      box.write("home/.claude/settings.json", JSON.stringify({ hooks: { PermissionRequest: hooks.PermissionRequest }, model: "opus" }))
      const result = yield* agent(box, ["run", "--format", "json", "approve it"])
      expect(result.code, result.stderr).toBe(0)
      expect(fs.readFileSync(box.path("project/ok.txt"), "utf8").trim()).toBe("approved")
      expect(runsOf(box, "approve")).toHaveLength(1)
      expect(runsOf(box, "approve")[0]).toMatchObject({ hook_event_name: "PermissionRequest", tool_name: "Bash", tool_input: { command: "echo approved > ok.txt" } })
      expect(hookLines(result.stdout)).toEqual(expect.arrayContaining([
        expect.objectContaining({ event: "PreToolUse", decision: "timeout" }),
        expect.objectContaining({ event: "PermissionRequest", decision: "allow", exitCode: 0 })
      ]))
      expect(result.stderr).toContain("timed out after 1 s")
    }), 60_000)

  it.scopedLive("an HTTP PermissionRequest hook denies; under the managed policy a hook's allow does not answer, and Notification runs", () =>
    Effect.gen(function*() {
      const endpoint = yield* httpHook({ status: 200, body: JSON.stringify({ hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message: "not on Fridays" } } }) })
      const server = yield* MockOpenAIServer.start([[bash("deploy now")], "Understood."])
      const box = yield* project(server.url, { permission: { bash: "ask" } })
      setHooks(box, { PermissionRequest: [{ hooks: [{ type: "http", url: endpoint.url, headers: { Authorization: "Bearer $HOOK_TOKEN" }, allowedEnvVars: ["HOOK_TOKEN"] }] }] })
      const denied = yield* agent(box, ["run", "--format", "json", "deploy"], { env: { HOOK_TOKEN: "t0k" } })
      expect(denied.code, denied.stderr).toBe(0)
      expect(toolParts(denied.stdout)[0].state.error).toContain("Denied by a PermissionRequest hook: not on Fridays")
      expect(endpoint.bodies[0]).toMatchObject({ auth: "Bearer t0k", body: { hook_event_name: "PermissionRequest", tool_name: "Bash" } })

      const policyServer = yield* MockOpenAIServer.start([[bash("deploy prod")], "never"])
      const managed = yield* project(policyServer.url, { permission: { bash: "allow" } }, {
        "managed/agent.json": JSON.stringify({ permission: { bash: { "deploy *": "ask" } } })
      })
      const approve = shellHook(managed, "approve", `echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'`)
      const notify = shellHook(managed, "notify", "true")
      setHooks(managed, { PermissionRequest: [group(approve)], Notification: [group(notify, "permission_prompt")] })
      const policy = yield* agent(managed, ["run", "--format", "json", "deploy"])
      expect(policy.code).toBe(3)
      expect(runsOf(managed, "approve")).toHaveLength(1)
      expect(runsOf(managed, "notify")[0]).toMatchObject({ hook_event_name: "Notification", notification_type: "permission_prompt", message: expect.stringContaining("Bash") })
    }), 60_000)
})
