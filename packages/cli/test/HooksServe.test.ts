// Hooks in the sessions `agent serve` runs: the same session loop as `agent run`, so the same hooks,
// the same trust, and `hook.ran` on the event stream. A real server process, the scripted model.
import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { project, serve } from "./AgentProcess.js"
import { auth, PASSWORD } from "./ApprovalSupport.js"
import { on, pythonHook, runsOf, shellHook } from "./HookScripts.js"

const { toolCall } = ScriptedModel

const bash = (command: string) => toolCall("bash", { command, description: "Runs a command" })

const call = (url: string, method: string, route: string, body?: unknown) =>
  Effect.promise(() =>
    fetch(`${url}${route}`, {
      method,
      headers: { ...auth, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    }).then(async (response) => ({ status: response.status, body: await response.json() as any }))
  )

/** The `hook.ran` events of the server's event stream, collected until the scope ends; once it is live. */
const hookEvents = (url: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const seen: Array<any> = []
      const abort = new AbortController()
      let live = () => {}
      const connected = new Promise<void>((resolve) => (live = resolve))
      void fetch(`${url}/event`, { headers: auth, signal: abort.signal }).then(async (response) => {
        const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
        let buffer = ""
        for (;;) {
          const chunk = await reader.read()
          if (chunk.done) return
          buffer += chunk.value
          let end: number
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const data = buffer.slice(0, end).split("\n").filter((line) => line.startsWith("data: ")).map((line) => line.slice(6)).join("")
            buffer = buffer.slice(end + 2)
            if (data) {
              const event = JSON.parse(data)
              if (event.type === "server.connected") live()
              if (event.type === "hook.ran") seen.push(event.properties)
            }
          }
        }
      }).catch(() => undefined)
      return { seen, abort, connected }
    }),
    ({ abort }) => Effect.sync(() => abort.abort())
  ).pipe(Effect.flatMap(({ connected, seen }) => Effect.as(Effect.promise(() => connected), seen)))

describe("hooks under agent serve", () => {
  it.scopedLive("a PreToolUse exit 2 blocks, a PermissionRequest allow answers with no client, hook.ran is on the event stream, and an untrusted project's hook does not run", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start([[bash("echo blocked > blocked.txt")], [bash("echo approved > ok.txt")], "Done."])
      const box = yield* project(model.url, { permission: { bash: "ask" } })
      const guard = shellHook(box, "guard", `if printf '%s' "$input" | grep -q blocked; then echo 'not that file' >&2; exit 2; fi`)
      const approve = pythonHook(box, "approve", "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PermissionRequest', 'decision': {'behavior': 'allow'}}}))")
      box.write("home/.config/agent/agent.json", { hooks: { ...on("PreToolUse", guard, "Bash"), ...on("PermissionRequest", approve, "Bash") } })
      const held = shellHook(box, "project-held", "true")
      box.write("project/.claude/settings.json", { hooks: on("UserPromptSubmit", held) })

      const served = yield* serve(box, [], { AGENT_SERVER_PASSWORD: PASSWORD })
      expect(served.stderr()).toMatch(/hooks in .*\.claude\/settings\.json.* do not run: the project .* is not trusted/)
      const seen = yield* hookEvents(served.url)
      const session = yield* call(served.url, "POST", "/session", {})
      const answer = yield* call(served.url, "POST", `/session/${session.body.id}/message`, { parts: [{ type: "text", text: "write two files" }] })
      expect(answer.status, JSON.stringify(answer.body)).toBe(200)

      expect(fs.existsSync(box.path("project/blocked.txt"))).toBe(false)
      expect(fs.readFileSync(box.path("project/ok.txt"), "utf8").trim()).toBe("approved")
      expect(JSON.stringify(model.requests[1]!.messages)).toContain("not that file")
      expect(runsOf(box, "approve")).toHaveLength(1)
      expect(runsOf(box, "project-held")).toHaveLength(0)
      // Nobody was asked: the hook answered.
      expect((yield* call(served.url, "GET", "/permission")).body).toEqual([])
      expect(seen.map((event) => `${event.event}:${event.decision}`)).toEqual(expect.arrayContaining(["PreToolUse:deny", "PermissionRequest:allow"]))
      expect(seen.every((event) => event.sessionID === session.body.id)).toBe(true)
    }), 60_000)
})
