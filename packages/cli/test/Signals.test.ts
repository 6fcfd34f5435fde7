import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
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

/** The pid of the agent process below `script` (a shell may stand between them). */
const agentBelow = (pid: number): number => {
  const children = execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(pid)], { encoding: "utf8" }).trim().split("\n")
  const [own, ...args] = children[0]!.trim().split(/\s+/)
  return args.some((word) => word.endsWith("bin.js")) ? Number(own) : agentBelow(Number(own))
}

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

  /**
   * Closes the terminal while the command runs; `busy`: the agent gets no CPU for a while first (a loaded
   * machine), so when it runs again its progress line is due and meets the hung-up terminal (EIO) before
   * the SIGHUP is handled.
   */
  const hangUpMidCommand = (busy: boolean) =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[bashCall("touch started; sleep 3; echo x > marker")], "never"])
      const box = yield* project(server.url)
      const user = yield* terminal(box, ["run", "--auto-approve", "wait a bit"])
      yield* Effect.async<void>((resume) => {
        const poll = setInterval(() => fs.existsSync(box.path("project/started")) && resume(Effect.void), 50)
        return Effect.sync(() => clearInterval(poll))
      }).pipe(Effect.timeout("20 seconds"))
      const pid = busy ? agentBelow(user.pid) : undefined
      if (pid !== undefined) {
        process.kill(pid, "SIGSTOP")
        yield* Effect.sleep("300 millis")
      }
      yield* user.close
      if (pid !== undefined) {
        yield* Effect.sleep("100 millis")
        process.kill(pid, "SIGCONT")
      }
      yield* Effect.sleep("5 seconds")
      expect(fs.existsSync(box.path("project/marker"))).toBe(false)
      expect(yield* toolStatuses(box)).toEqual(["error"])
    })

  it.scopedLive("closing the terminal mid-command (a hangup while it shows progress) ends the command's process group too", () =>
    hangUpMidCommand(false), 40_000)

  it.scopedLive("a hangup that finds the agent busy (its progress timer due before the signal is read) still ends the command", () =>
    hangUpMidCommand(true), 40_000)
})
