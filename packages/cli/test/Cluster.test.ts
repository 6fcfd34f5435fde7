import { MockOpenAIServer, ScriptedModel, TestDatabase } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { project, serve } from "./AgentProcess.js"

// Replicas (agent serve --replica) on one PostgreSQL database: sessions spread over them, any
// replica answers for any session, and a replica's death (kill -9) or stop (SIGTERM) moves its
// sessions to the others, which finish them. A bash command appends one line per tool call to a
// file, named by session and call, with the replica that ran it: each completed call shows once.

const STEPS = 4

const freePort = () =>
  Effect.promise(() =>
    new Promise<number>((resolve) => {
      const server = net.createServer()
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as net.AddressInfo
        server.close(() => resolve(port))
      })
    })
  )

const json = (url: string, init?: RequestInit) => Effect.promise(() => fetch(url, init).then((response) => response.json() as Promise<any>))
const post = (url: string, body: unknown) =>
  Effect.promise(() => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }))

/**
 * The fake model: a session's prompt names it (`[s3]`); it calls bash STEPS times (each call
 * sleeps, then appends `s3-<call> <replica>`), then says it is done.
 */
const responder = (log: string, sleep: number) => (request: MockOpenAIServer.ChatCompletionRequest) => {
  const first = request.messages.find((message) => message.role === "user")
  const label = /\[(s\d+)\]/.exec(JSON.stringify(first?.content ?? ""))?.[1] ?? "s?"
  const calls = request.messages.filter((message) => message.role === "tool").length
  if (calls >= STEPS) return `done ${label}`
  return [
    ScriptedModel.toolCall("bash", {
      command: `sleep ${sleep}; echo "${label}-${calls} $AGENT_TEST_REPLICA" >> ${log}`,
      description: `step ${calls}`
    })
  ]
}

const finished = (messages: Array<any>) => {
  const last = messages.at(-1)
  return last?.info.role === "assistant" && last.info.finish === "stop" && last.parts.some((part: any) => part.type === "text" && /^done /.test(part.text))
}

const toolParts = (messages: Array<any>) => messages.flatMap((message) => message.parts).filter((part: any) => part.type === "tool")

/** Three replicas on a fresh database, each with its runner port and its name in the environment. */
const replicas = (names: ReadonlyArray<string>, sleep: number, extra: object = {}) =>
  Effect.gen(function*() {
    // In the project, where the commands run (a file outside it would need an approval).
    const model = yield* MockOpenAIServer.start(Array.from({ length: 400 }, () => responder("calls.log", sleep)))
    const prefix = `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
    // Without the OS sandbox: with three processes in one project, bwrap sometimes missed a path
    // (`.agent`) another had not made yet; the sandbox has its own tests.
    const box = yield* project(model.url, {
      sandbox: { mode: "off" },
      cluster: { prefix, shards: 12, lock_expiration_seconds: 4, grace_seconds: 20, ...extra }
    })
    const log = path.join(box.instance.directory, "calls.log")
    fs.writeFileSync(log, "")
    const databaseUrl = yield* TestDatabase.freshPostgres
    const servers = yield* Effect.forEach(names, (name) =>
      Effect.gen(function*() {
        const port = yield* freePort()
        return yield* serve(box, ["--replica", "--runner-port", String(port)], { AGENT_DATABASE_URL: databaseUrl, AGENT_TEST_REPLICA: name })
      }), { concurrency: "unbounded" })
    // The runners see each other and share the shards out (assignments refresh every second).
    yield* Effect.sleep("3 seconds")
    return { log, box, model, databaseUrl, servers: Object.fromEntries(names.map((name, index) => [name, servers[index]!])) }
  })

const lines = (log: string) => fs.readFileSync(log, "utf8").split("\n").filter(Boolean).map((line) => line.split(" ") as [string, string])

const waitFor = <A>(what: string, check: Effect.Effect<A | undefined>, timeoutMs = 40_000, context: () => string = () => "") =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const value = yield* check
      if (value !== undefined) return value
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${context()}`)
      yield* Effect.sleep("100 millis")
    }
  })

describe.runIf(TestDatabase.postgresRuns())("agent serve replicas", () => {
  it.scopedLive("10 sessions on 3 replicas; kill -9 of one mid-tool: its sessions finish on the others, each completed call ran once", () =>
    Effect.gen(function*() {
      const { log, model, servers } = yield* replicas(["A", "B", "C"], 0.5)
      const urls = Object.values(servers).map((server) => server.url)
      const sessions: Array<string> = []
      for (let index = 0; index < 10; index++) {
        const session = yield* json(`${urls[index % 3]}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
        sessions.push(session.id)
      }
      // Each prompt through another replica than the one that created the session.
      yield* Effect.forEach(sessions, (id, index) =>
        post(`${urls[(index + 1) % 3]}/session/${id}/prompt_async`, { parts: [{ type: "text", text: `[s${index}] run the steps` }] }), { discard: true })

      // A session that replica A runs, followed from B: wait until its tool call is running there.
      const report = () =>
        [`calls: ${fs.readFileSync(log, "utf8")}`, ...Object.entries(servers).map(([name, server]) => `${name}: ${server.stderr()}`), `model requests: ${model.requests.length}`].join("\n")
      const victim = yield* waitFor(
        "a session running on A",
        Effect.sync(() => lines(log).find(([, replica]) => replica === "A")?.[0].split("-")[0]),
        40_000,
        report
      )
      const victimID = sessions[Number(victim.slice(1))]!
      yield* waitFor("a running tool call of A's session, seen from B", json(`${servers.B!.url}/session/${victimID}/message`).pipe(
        Effect.map((messages) => toolParts(messages).some((part: any) => part.state.status === "running") ? true : undefined)
      ))
      const killedAt = Date.now()
      servers.A!.child.kill("SIGKILL")
      yield* Effect.promise(() => servers.A!.exited)

      // The session moves: its new owner marks the call A left running as interrupted.
      yield* waitFor("A's session to move", json(`${servers.B!.url}/session/${victimID}/message`).pipe(
        Effect.map((messages) => toolParts(messages).some((part: any) => part.state.metadata?.interrupted === true) ? true : undefined)
      ), 30_000)
      const movedMs = Date.now() - killedAt
      console.log(`failover: session taken over ${movedMs} ms after kill -9 (lock expiry 4 s)`)
      expect(movedMs).toBeLessThan(15_000)

      // Every session finishes, read through B.
      for (const id of sessions) {
        yield* waitFor(`session ${id} to finish`, json(`${servers.B!.url}/session/${id}/message`).pipe(Effect.map((messages) => finished(messages) ? true : undefined)), 45_000)
      }
      const movedAt = lines(log).filter(([label, replica]) => label.startsWith(`${victim}-`) && replica !== "A").length
      expect(movedAt, "the victim's later calls ran on B or C").toBeGreaterThan(0)

      const written = lines(log).map(([label]) => label)
      expect(new Set(written).size, `no call wrote twice: ${written.join(", ")}`).toBe(written.length)
      for (const [index, id] of sessions.entries()) {
        const messages = yield* json(`${servers.C!.url}/session/${id}/message`)
        const parts = toolParts(messages)
        const completed = parts.filter((part: any) => part.state.status === "completed")
        // Every completed call's line is there, once; the session did all its steps.
        for (const part of completed) {
          const label = /echo "(\S+)/.exec(part.state.input.command)?.[1]
          expect(label, `a call of session s${index}: ${part.state.input.command}`).toMatch(new RegExp(`^s${index}-\\d+$`))
          expect(written.filter((line) => line === label), `${label} of session s${index}`).toHaveLength(1)
        }
        expect(parts.length).toBeGreaterThanOrEqual(STEPS)
        const interrupted = parts.filter((part: any) => part.state.status === "error")
        // Cut off by the kill (marked by the new owner), or handed over when the shards moved.
        for (const part of interrupted) expect(part.state.error).toMatch(/^Tool execution (was interrupted|aborted)$/)
        if (id === victimID) {
          expect(interrupted.filter((part: any) => part.state.error === "Tool execution was interrupted").length, "A's running call was marked interrupted")
            .toBeGreaterThan(0)
        }
      }
    }), 90_000)
})
