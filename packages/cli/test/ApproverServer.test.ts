// `agent run --approver` against a real `agent serve` (password-protected), through the built CLI:
// answered there, rejected with a message, the timeout and both fallbacks, a server down or stopping.
import { MockOpenAIServer, ScriptedModel, TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { agent, events, forFile, project, type Served, serve } from "./AgentProcess.js"
import { answerOn, closedPort, env, PASSWORD, pendingOn } from "./ApprovalSupport.js"

const { toolCall } = ScriptedModel

interface Shared {
  /** The run's model. */
  readonly model: MockOpenAIServer.MockOpenAIServer
  /** The approver: an `agent serve` with a password, on another "machine". */
  readonly served: Served
  /** Where `agent run` runs: read asks. */
  readonly box: TestInstance.Sandbox
}

const shared = forFile<Shared, unknown>(
  Effect.gen(function*() {
    const model = yield* MockOpenAIServer.start()
    const approverBox = yield* project(model.url)
    const served = yield* serve(approverBox, [], { AGENT_SERVER_PASSWORD: PASSWORD })
    const box = yield* project(model.url, { permission: { read: "ask" } }, { "project/secret.txt": "the secret is 42\n" })
    return { model, served, box }
  })
)

describe("agent run --approver (an agent serve answers)", () => {
  it.live("answered once there: the tool runs; the ask was listed like the server's own, then taken off", () =>
    Effect.gen(function*() {
      const { model, served, box } = shared()
      model.push([toolCall("read", { filePath: "secret.txt" })], "It says 42.")
      const [result, ask] = yield* Effect.all([
        agent(box, ["run", "--approver", served.url, "--format", "json", "read the secret"], { env }),
        answerOn(served.url, { reply: "once" })
      ], { concurrency: 2 })
      expect(result.code, result.stderr).toBe(0)
      expect(ask).toMatchObject({ permission: "read", patterns: ["secret.txt"], metadata: { remote: true, directory: box.instance.directory } })
      expect(result.stderr).toContain(`agent: permission asked for read "secret.txt"; waiting up to 300 s for agent serve at ${served.url}`)
      const lines = events(result.stdout)
      expect(lines.at(-1)).toMatchObject({ type: "result", status: "completed", text: "It says 42.", permission_denials: [] })
      expect(lines.find((line) => line.type === "tool_use")!.part.state.status).toBe("completed")
      expect(yield* pendingOn(served.url)).toEqual([])
    }), 60_000)

  it.live("rejected with a message there: the model reads the message and goes on; the denial names the person", () =>
    Effect.gen(function*() {
      const { model, served, box } = shared()
      const before = model.requests.length
      model.push([toolCall("read", { filePath: "secret.txt" })], "Understood, I will not read it.")
      const [result] = yield* Effect.all([
        agent(box, ["run", `--approver=${served.url.replace("http://", `http://agent:${PASSWORD}@`)}`, "--format", "json", "read the secret"]),
        answerOn(served.url, { reply: "reject", message: "not that file, ask me first" })
      ], { concurrency: 2 })
      expect(result.code, result.stderr).toBe(0)
      expect(JSON.stringify(model.requests[before + 1]!.messages)).toContain("not that file, ask me first")
      expect(events(result.stdout).at(-1)).toMatchObject({
        type: "result",
        status: "completed",
        permission_denials: [{
          tool: "read",
          input: "secret.txt",
          decidedBy: { type: "person", via: "server", message: "not that file, ask me first" }
        }]
      })
    }), 60_000)

  it.live("nobody answers in time: fallback deny (exit 3, a clear line), and the server no longer lists the ask", () =>
    Effect.gen(function*() {
      const { model, served, box } = shared()
      model.push([toolCall("read", { filePath: "secret.txt" })])
      const result = yield* agent(box, ["run", "--approver", served.url, "--approver-timeout", "1", "--format", "json", "read the secret"], { env })
      expect(result.code, result.stderr).toBe(3)
      expect(result.stderr).toMatch(/permission asked for read secret\.txt: no answer from the approver \(agent serve at http:\/\/\S+\) within 1 s; fallback: deny/)
      expect(events(result.stdout).at(-1)).toMatchObject({
        type: "result",
        status: "rejected",
        exitCode: 3,
        permission_denials: [{ tool: "read", input: "secret.txt", decidedBy: { type: "timeout", seconds: 1 } }]
      })
      expect(yield* pendingOn(served.url)).toEqual([])
    }), 60_000)

  it.live("fallback allow, when configured: an unanswered ask runs", () =>
    Effect.gen(function*() {
      const { model, served, box } = shared()
      model.push([toolCall("read", { filePath: "secret.txt" })], "It says 42.")
      const result = yield* agent(
        box,
        ["run", "--approver", served.url, "--approver-timeout", "1", "--approver-fallback", "allow", "read the secret"],
        { env }
      )
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout).toBe("It says 42.\n")
      expect(result.stderr).toMatch(/within 1 s; fallback: allow/)
    }), 60_000)

  it.live("a server that is down, or refuses the credentials: a clear line, then the fallback (deny: exit 3)", () =>
    Effect.gen(function*() {
      const { model, served, box } = shared()
      const down = `http://127.0.0.1:${yield* closedPort}`
      model.push([toolCall("read", { filePath: "secret.txt" })])
      const result = yield* agent(box, ["run", "--approver", down, "--format", "json", "read the secret"], { env })
      expect(result.code, result.stderr).toBe(3)
      expect(result.stderr).toContain(`the approver could not be reached: ${down}: `)
      expect(result.stderr).toMatch(/ECONNREFUSED.*fallback: deny/)
      expect(events(result.stdout).at(-1)!.permission_denials[0].decidedBy).toMatchObject({ type: "unavailable" })
      model.push([toolCall("read", { filePath: "secret.txt" })])
      const refused = yield* agent(box, ["run", "--approver", served.url, "read the secret"])
      expect(refused.code, refused.stderr).toBe(3)
      expect(refused.stderr).toMatch(/refused the credentials: set AGENT_SERVER_PASSWORD/)
    }), 60_000)

  it.scopedLive("the server stops while it holds the ask: the run hears it at once and falls back", () =>
    Effect.gen(function*() {
      const { model } = shared()
      const approverBox = yield* project(model.url)
      const box = yield* project(model.url, { permission: { read: "ask" } }, { "project/secret.txt": "x\n" })
      const stopping = yield* Scope.make()
      const served = yield* serve(approverBox).pipe(Scope.extend(stopping))
      model.push([toolCall("read", { filePath: "secret.txt" })])
      const started = Date.now()
      const [result] = yield* Effect.all([
        agent(box, ["run", "--approver", served.url, "--approver-timeout", "60", "read the secret"]),
        Effect.gen(function*() {
          while ((yield* Effect.promise(() => fetch(`${served.url}/permission`).then((r) => r.json() as Promise<Array<unknown>>))).length === 0) {
            yield* Effect.sleep("100 millis")
          }
          served.child.kill("SIGTERM")
        })
      ], { concurrency: 2 })
      expect(result.code, result.stderr).toBe(3)
      expect(result.stderr).toMatch(/the approver could not be reached: .*fallback: deny/)
      expect(Date.now() - started).toBeLessThan(30_000)
      yield* Scope.close(stopping, Exit.void)
    }), 60_000)
})
