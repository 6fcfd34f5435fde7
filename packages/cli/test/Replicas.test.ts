import { MockOpenAIServer, ScriptedModel, TestDatabase } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { project, serve } from "./AgentProcess.js"

// Two `agent serve` processes on one PostgreSQL database (docs/storage.md, "The event log"): a run prompted on A
// streams to a client of B; the client leaves mid-run and resumes on A with Last-Event-ID; the
// LISTEN connections of both are terminated by the database meanwhile. What the client got adds up
// to the whole log: in order, nothing missing, nothing twice, each session's numbers contiguous.

const { toolCall } = ScriptedModel

interface WireEvent {
  readonly id?: number
  readonly seq?: number
  readonly type: string
  readonly properties: any
}

/** Opens `/event` (from `lastEventId` when given) and reads until `stop` holds; then closes it. Numbered events only. */
const read = (url: string, stop: (event: WireEvent) => boolean, lastEventId?: number) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/event`, { headers: lastEventId !== undefined ? { "last-event-id": String(lastEventId) } : {} })
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
    const events: Array<WireEvent> = []
    let buffer = ""
    const deadline = setTimeout(() => void reader.cancel(), 30_000)
    let stopped = false
    while (!stopped) {
      const { done, value } = await reader.read()
      if (done) throw new Error(`the event stream of ${url} ended before the expected event; got ${events.map((e) => e.type).join(", ")}`)
      buffer += value
      const frames = buffer.split("\n\n")
      buffer = frames.pop()!
      for (const frame of frames) {
        const data = frame.split("\n").find((line) => line.startsWith("data: "))
        if (!data) continue
        const event = JSON.parse(data.slice(6)) as WireEvent
        if (event.id === undefined) continue
        events.push(event)
        if (stop(event)) {
          stopped = true
          break
        }
      }
    }
    clearTimeout(deadline)
    await reader.cancel()
    return events
  })

const post = (url: string, body: unknown) =>
  Effect.promise(() => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }))

const listeners = (schema: string) =>
  TestDatabase.adminQuery<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE application_name = 'agent events' AND query = $1 ORDER BY pid`,
    [`LISTEN "agent_events_${schema}"`]
  ).pipe(Effect.map((rows) => rows.map((row) => row.pid)))

describe.runIf(TestDatabase.postgresRuns())("agent serve replicas on PostgreSQL", () => {
  it.scopedLive("a client of B follows a run on A, leaves mid-run and resumes on A: every event once, in order, across dropped LISTEN connections", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start([
        [toolCall("bash", { command: "echo one", description: "first" })],
        [toolCall("bash", { command: "sleep 2; echo two", description: "second" })],
        [toolCall("bash", { command: "echo three", description: "third" })],
        "All three done, in order."
      ])
      const box = yield* project(model.url)
      const database = yield* TestDatabase.freshPostgres
      const env = { AGENT_DATABASE_URL: database }
      const [a, b] = yield* Effect.all([serve(box, [], env), serve(box, [], env)], { concurrency: 2 })
      const session = (yield* Effect.promise(() =>
        fetch(`${a.url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }).then((r) => r.json())
      )) as { id: string }

      const sleeping = (event: WireEvent) =>
        event.type === "message.part.updated" && event.properties.part.state?.status === "running" &&
        event.properties.part.state.input?.command === "sleep 2; echo two"
      const finished = (event: WireEvent) => event.type === "prompt.finished" && event.properties.sessionID === session.id
      // On B, from the start of the log, while A runs the prompt; B's client leaves once the second tool runs.
      const [first, accepted] = yield* Effect.all([
        read(b.url, sleeping, 0),
        post(`${a.url}/session/${session.id}/prompt_async`, { parts: [{ type: "text", text: "run the three commands" }] })
      ], { concurrency: "unbounded" })
      expect(accepted.status).toBe(204)

      // While the tool sleeps, the database drops B's LISTEN connection (A has had no client: it does not listen).
      const schema = TestDatabase.schemaOf(database)!
      const old = yield* listeners(schema).pipe(
        Effect.filterOrFail((pids) => pids.length === 1),
        Effect.retry(Schedule.spaced("50 millis")),
        Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("B did not listen while its client was connected") })
      )
      yield* TestDatabase.adminQuery(`SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid`, [old])

      // The client comes back on A with the last id it got from B.
      const rest = yield* read(a.url, finished, first.at(-1)!.id)
      expect(rest[0]!.id).toBe(first.at(-1)!.id! + 1)
      const union = [...first, ...rest]
      expect(union.map((event) => event.id)).toEqual(union.map((_, index) => index + 1))
      const ofSession = union.filter((event) => event.seq !== undefined && JSON.stringify(event.properties).includes(session.id))
      expect(ofSession.map((event) => event.seq)).toEqual(ofSession.map((_, index) => index + 1))

      // It is the whole log, as any replica replays it.
      const whole = yield* read(b.url, finished, 0)
      expect(union).toEqual(whole)

      // and the run is all there: three commands in order, their outputs, the answer
      const tools = union.filter((event) => event.type === "message.part.updated" && event.properties.part.type === "tool" &&
        event.properties.part.state.status === "completed")
      expect(tools.map((event) => event.properties.part.state.output.trim())).toEqual(["one", "two", "three"])
      const text = union.filter((event) => event.type === "message.part.updated" && event.properties.part.type === "text" &&
        event.properties.part.text === "All three done, in order.")
      expect(text.length).toBeGreaterThan(0)
      const reason = union.find(finished)!.properties.reason
      expect(reason).toBe("completed")

      // both servers listen again, on new connections
      const now = yield* listeners(schema)
      expect(now.length).toBe(2)
      expect(now.some((pid) => old.includes(pid))).toBe(false)
    }), 90_000)

  it.scopedLive("SIGTERM of the server running a session: a client of the other sees the interrupted tool call, logged on the way out", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start([
        [toolCall("bash", { command: "sleep 30", description: "wait a long time" })],
        "never reached"
      ])
      const box = yield* project(model.url)
      const env = { AGENT_DATABASE_URL: yield* TestDatabase.freshPostgres }
      const [a, b] = yield* Effect.all([serve(box, [], env), serve(box, [], env)], { concurrency: 2 })
      const session = (yield* Effect.promise(() =>
        fetch(`${a.url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }).then((r) => r.json())
      )) as { id: string }
      const tool = (status: string) => (event: WireEvent) =>
        event.type === "message.part.updated" && event.properties.part.type === "tool" && event.properties.part.state.status === status
      const [running] = yield* Effect.all([
        read(b.url, tool("running"), 0),
        post(`${a.url}/session/${session.id}/prompt_async`, { parts: [{ type: "text", text: "wait" }] })
      ], { concurrency: "unbounded" })
      a.child.kill("SIGTERM")
      expect(yield* Effect.promise(() => a.exited), a.stderr()).toBe(0)
      const after = yield* read(b.url, tool("error"), running.at(-1)!.id)
      const interrupted = after.at(-1)!.properties.part
      expect(interrupted.sessionID).toBe(session.id)
      expect(interrupted.state.error).toMatch(/interrupt|abort/i)
      const union = [...running, ...after]
      expect(union.map((event) => event.id)).toEqual(union.map((_, index) => index + 1))
    }), 60_000)
})
