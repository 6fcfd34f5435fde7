import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { agent, project, terminal } from "./AgentProcess.js"

const { toolCall } = ScriptedModel

const bashCall = (command: string) => toolCall("bash", { command, description: "Waits, then writes a marker" })

/** The status of every tool part of the project's one session, as `agent session show` reports it. */
const toolStatuses = (box: Parameters<typeof agent>[0]) =>
  Effect.gen(function*() {
    const list = yield* agent(box, ["session", "list", "--format", "json"])
    expect(list.code, list.stderr).toBe(0)
    const [session] = JSON.parse(list.stdout) as Array<{ id: string }>
    const show = yield* agent(box, ["session", "show", session!.id, "--format", "json"])
    expect(show.code, show.stderr).toBe(0)
    const { messages } = JSON.parse(show.stdout) as { messages: Array<{ parts: Array<{ type: string; state?: { status: string } }> }> }
    return messages.flatMap((message) => message.parts.flatMap((part) => (part.type === "tool" ? [part.state!.status] : [])))
  })

describe("agent run and signals", () => {
  for (const signal of ["SIGHUP", "SIGTERM"] as const) {
    it.scopedLive(`${signal} (the terminal closed, a kill) aborts the run like Ctrl-C: no tool process outlives the agent`, () =>
      Effect.gen(function*() {
        const server = yield* MockOpenAIServer.start([[bashCall("touch started; sleep 3; echo x > marker")], "never"])
        const box = yield* project(server.url)
        const started = box.path("project/started")
        const began = Date.now()
        const result = yield* agent(box, ["run", "--auto-approve", "--format", "json", "wait a bit"], {
          signal,
          signalWhen: () => fs.existsSync(started)
        })
        // Promptly: the tool's group is ended with SIGTERM at once, not waited for.
        expect(Date.now() - began, result.stderr).toBeLessThan(10_000)
        expect(result.signal, result.stderr).toBeNull()
        expect(result.code, result.stderr).toBe(130)
        expect(result.stdout).toMatch(/"type":"result".*"status":"aborted"/)
        // Past the command's own end: had `sleep` survived, the marker would be there.
        yield* Effect.sleep("4 seconds")
        expect(fs.existsSync(box.path("project/marker"))).toBe(false)
        const statuses = yield* toolStatuses(box)
        expect(statuses).toHaveLength(1)
        expect(statuses[0]).not.toBe("running")
      }), 40_000)
  }

  it.scopedLive("closing the terminal mid-command (a hangup while it shows progress) ends the command's process group too", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[bashCall("touch started; sleep 3; echo x > marker")], "never"])
      const box = yield* project(server.url)
      const user = yield* terminal(box, ["run", "--auto-approve", "wait a bit"])
      yield* Effect.async<void>((resume) => {
        const poll = setInterval(() => fs.existsSync(box.path("project/started")) && resume(Effect.void), 50)
        return Effect.sync(() => clearInterval(poll))
      }).pipe(Effect.timeout("20 seconds"))
      yield* user.close
      yield* Effect.sleep("5 seconds")
      expect(fs.existsSync(box.path("project/marker"))).toBe(false)
      expect(yield* toolStatuses(box)).toEqual(["error"])
    }), 40_000)
})
