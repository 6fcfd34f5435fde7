import { TestDatabase } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { finished, json, lines, post, replicas, sessionRunningOn, STEPS, toolParts, waitFor } from "./ClusterReplicas.js"

// Replicas (agent serve --replica) on one PostgreSQL database: sessions spread over them, any
// replica answers for any session, and a replica's death (kill -9) or stop (SIGTERM) moves its
// sessions to the others, which finish them. A bash command appends one line per tool call to a
// file, named by session and call, with the replica that ran it: each completed call shows once.

describe.runIf(TestDatabase.postgresRuns())("agent serve replicas", () => {
  it.scopedLive("10 sessions on 3 replicas; kill -9 of one mid-tool: its sessions finish on the others, each completed call ran once", () =>
    Effect.gen(function*() {
      // Calls of 1.5 s: the kill below lands while the call seen running still runs.
      const { log, model, servers } = yield* replicas(["A", "B", "C"], 1.5)
      const urls = Object.values(servers).map((server) => server.url)
      const sessions: Array<string> = []
      /** Ten more sessions, each created through one replica and prompted through the next. */
      const start = Effect.gen(function*() {
        const first = sessions.length
        for (let index = first; index < first + 10; index++) {
          const session = yield* json(`${urls[index % 3]}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
          sessions.push(session.id)
        }
        yield* Effect.forEach(sessions.slice(first), (id, offset) =>
          post(`${urls[(first + offset + 1) % 3]}/session/${id}/prompt_async`, { parts: [{ type: "text", text: `[s${first + offset}] run the steps` }] }), { discard: true })
      })
      yield* start

      // A session that replica A runs, followed from B: wait until its tool call is running there.
      const report = () =>
        [`calls: ${fs.readFileSync(log, "utf8")}`, ...Object.entries(servers).map(([name, server]) => `${name}: ${server.stderr()}`), `model requests: ${model.requests.length}`].join("\n")
      const victim = yield* sessionRunningOn(log, "A", start, report)
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
      ), 30_000, report)
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
