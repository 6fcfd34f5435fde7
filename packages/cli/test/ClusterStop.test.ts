import { TestDatabase } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { agent, project } from "./AgentProcess.js"
import { finished, freePort, json, lines, post, replicas, sessionRunningOn, STEPS, toolParts, waitFor } from "./ClusterReplicas.js"

// A replica that stops (SIGTERM, a deploy) lets the tool call it is running finish, then hands
// its sessions over; a replica that cannot see a session's project directory refuses it.

const createSession = (url: string) => json(`${url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })

describe.runIf(TestDatabase.postgresRuns())("agent serve replicas: stop and refusal", () => {
  it.scopedLive("SIGTERM mid-tool: the call finishes on the stopping replica, the session finishes on the other, no call runs twice", () =>
    Effect.gen(function*() {
      const { log, model, servers } = yield* replicas(["A", "B"], 1.5)
      const sessions: Array<string> = []
      /** Six more sessions, created and prompted through B. */
      const start = Effect.gen(function*() {
        const batch = yield* Effect.forEach(Array.from({ length: 6 }), () => createSession(servers.B!.url).pipe(Effect.map((session) => session.id as string)))
        const first = sessions.length
        sessions.push(...batch)
        yield* Effect.forEach(batch, (id, offset) =>
          post(`${servers.B!.url}/session/${id}/prompt_async`, { parts: [{ type: "text", text: `[s${first + offset}] run the steps` }] }), { discard: true })
      })
      yield* start

      const report = () => [`calls: ${fs.readFileSync(log, "utf8")}`, `A: ${servers.A!.stderr()}`, `B: ${servers.B!.stderr()}`, `model: ${model.requests.length}`].join("\n")
      const victim = yield* sessionRunningOn(log, "A", start, report)
      const victimID = sessions[Number(victim.slice(1))]!
      const running = yield* waitFor("a running tool call of A's session, seen from B", json(`${servers.B!.url}/session/${victimID}/message`).pipe(
        // A call with more to come after it, so the rest of the session has somewhere to go.
        Effect.map((messages) =>
          toolParts(messages).find((part: any) => part.state.status === "running" && Number(/-(\d+) /.exec(part.state.input.command)?.[1]) < STEPS - 1)
        )
      ))
      const label = /echo "(\S+)/.exec(running.state.input.command)![1]!
      servers.A!.child.kill("SIGTERM")
      expect(yield* Effect.promise(() => servers.A!.exited), servers.A!.stderr()).toBe(0)

      // The call that was running when A got SIGTERM completed there, once.
      expect(lines(log).filter(([line]) => line === label)).toEqual([[label, "A"]])
      for (const id of sessions) {
        yield* waitFor(`session ${id} to finish on B`, json(`${servers.B!.url}/session/${id}/message`).pipe(Effect.map((messages) => finished(messages) ? true : undefined)), 45_000)
      }
      const messages = yield* json(`${servers.B!.url}/session/${victimID}/message`)
      const part = toolParts(messages).find((candidate: any) => candidate.id === running.id)
      expect(part.state.status).toBe("completed")
      expect(lines(log).filter(([line, replica]) => line.startsWith(`${victim}-`) && replica === "B").length, `the rest ran on B: ${report()}`).toBeGreaterThan(0)
      const written = lines(log).map(([line]) => line)
      expect(new Set(written).size, `no call wrote twice: ${written.join(", ")}`).toBe(written.length)
    }), 90_000)

  it.scopedLive("a replica that cannot see the session's project directory refuses the prompt with an error naming it", () =>
    Effect.gen(function*() {
      const { box, servers } = yield* replicas(["A"], 0.1)
      const session = yield* createSession(servers.A!.url)
      // The project's volume is gone from this replica.
      const moved = `${box.instance.directory}-unmounted`
      fs.renameSync(box.instance.directory, moved)
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.renameSync(moved, box.instance.directory)))
      const response = yield* Effect.promise(() =>
        fetch(`${servers.A!.url}/session/${session.id}/message`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ parts: [{ type: "text", text: "[s0] hello" }] })
        })
      )
      const body = yield* Effect.promise(() => response.json() as Promise<any>)
      expect(response.status, JSON.stringify(body)).toBe(400)
      expect(body.data.message).toContain(`cannot see the project directory ${box.instance.directory} of session ${session.id}`)
      expect(body.data.message).toContain("shared volume")
    }), 60_000)

  it.scopedLive("a replica of another cluster (another cluster.prefix) on the same database refuses to start, naming it; the first one goes on", () =>
    Effect.gen(function*() {
      const { databaseUrl, model, prefix, servers } = yield* replicas(["A"], 0.1)
      const other = yield* project(model.url, { cluster: { prefix: "second_cluster", shards: 12 } })
      const port = yield* freePort()
      const result = yield* agent(other, ["serve", "--replica", "--port", "0", "--runner-port", String(port)], { env: { AGENT_DATABASE_URL: databaseUrl } })
      expect(result.code, result.stderr).toBe(2)
      expect(result.stderr).toContain(`another cluster (cluster.prefix "${prefix}") runs on this database, and this replica's is "second_cluster"`)
      expect(result.stderr).toContain("a database of its own")
      // The first cluster still runs its sessions.
      const session = yield* createSession(servers.A!.url)
      yield* post(`${servers.A!.url}/session/${session.id}/prompt_async`, { parts: [{ type: "text", text: "[s0] run the steps" }] })
      yield* waitFor("the session to finish on A", json(`${servers.A!.url}/session/${session.id}/message`).pipe(Effect.map((messages) => finished(messages) ? true : undefined)), 30_000)
    }), 60_000)
})

describe("agent serve --replica on SQLite", () => {
  it.scopedLive("is refused: replicas share one PostgreSQL database", () =>
    Effect.gen(function*() {
      const box = yield* project("http://127.0.0.1:9/v1")
      const result = yield* agent(box, ["serve", "--replica", "--port", "0"])
      expect(result.code).toBe(2)
      expect(result.stderr).toContain("a replica needs the store in PostgreSQL (AGENT_DATABASE_URL or config database.url)")
    }))
})
