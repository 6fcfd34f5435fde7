// `notify` through the built CLI: retries with backoff against a local server that fails at first,
// and a run that never waits on a webhook that hangs.
import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { agent, forFile, project } from "./AgentProcess.js"
import { httpServer } from "./ApprovalSupport.js"

const { toolCall } = ScriptedModel

const shared = forFile(Effect.map(MockOpenAIServer.start(), (model) => ({ model })))

describe("notify", () => {
  it.scopedLive("retries a failing webhook with backoff until it takes the notification", () =>
    Effect.gen(function*() {
      const { model } = shared()
      const attempts: Array<{ readonly at: number; readonly body: string; readonly type: string | undefined }> = []
      const hook = yield* httpServer((body, request, response) => {
        attempts.push({ at: Date.now(), body, type: request.headers["content-type"] })
        response.writeHead(attempts.length <= 2 ? 503 : 200).end()
      })
      const box = yield* project(model.url, {
        notify: [{ url: hook.url, events: ["run.finished"], template: "{\"text\": \"{{title}}: {{message}}\"}" }]
      })
      model.push("Done \"quoted\".")
      const result = yield* agent(box, ["run", "say done"])
      expect(result.code, result.stderr).toBe(0)
      expect(attempts).toHaveLength(3)
      // 500 ms, then 1 s between attempts
      expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(400)
      expect(attempts[2]!.at - attempts[1]!.at).toBeGreaterThanOrEqual(900)
      expect(attempts[2]!.type).toBe("application/json")
      expect(JSON.parse(attempts[2]!.body)).toEqual({ text: "agent run completed: The run ended: completed (exit 0). Done \"quoted\"." })
    }), 60_000)

  it.scopedLive("never blocks the run: asks are posted while a webhook hangs; the run ends on time with its own exit code", () =>
    Effect.gen(function*() {
      const { model } = shared()
      const seen: Array<string> = []
      // Takes every request and never answers.
      const hook = yield* httpServer((body) => void seen.push(JSON.parse(body).event))
      const box = yield* project(model.url, { permission: { read: "ask" }, notify: hook.url }, { "project/secret.txt": "x\n" })
      model.push([toolCall("read", { filePath: "secret.txt" })])
      const started = Date.now()
      const result = yield* agent(box, ["run", "read the secret"])
      expect(result.code, result.stderr).toBe(3)
      expect(Date.now() - started).toBeLessThan(20_000)
      expect(result.stderr).toContain("notifications were still being sent when the run ended")
      expect(seen).toEqual(["permission.asked", "run.finished"])
    }), 60_000)
})
