import { TestDatabase } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { finished, json, lines, post, replicas, waitFor } from "./ClusterReplicas.js"

// Asks on replicas: a permission ask waits on the replica that runs the session; every replica
// lists it, and a reply sent to another replica reaches it.

describe.runIf(TestDatabase.postgresRuns())("agent serve replicas: permission asks", () => {
  it.scopedLive("every replica lists every ask; a reply through the replica that does not run the session lets the call run", () =>
    Effect.gen(function*() {
      const { databaseUrl, log, prefix, runners, servers } = yield* replicas(["A", "B"], 0, {}, { permission: { bash: "ask" } })
      const A = servers.A!.url
      const B = servers.B!.url
      const sessions: Array<string> = []
      for (let index = 0; index < 4; index++) {
        sessions.push((yield* json(`${A}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).id)
      }
      yield* Effect.forEach(sessions, (id, index) =>
        post(`${A}/session/${id}/prompt_async`, { parts: [{ type: "text", text: `[s${index}] run the steps` }] }), { discard: true })

      const seen = { A: new Set<string>(), B: new Set<string>() }
      const repliedThrough: Array<"A" | "B"> = []
      const allFinished = Effect.forEach(sessions, (id) => json(`${B}/session/${id}/message`).pipe(Effect.map(finished))).pipe(
        Effect.map((done) => done.every(Boolean))
      )
      yield* waitFor("every session to finish, its asks answered", Effect.gen(function*() {
        for (const [name, url] of [["A", A], ["B", B]] as const) {
          for (const ask of (yield* json(`${url}/permission`)) as Array<{ id: string }>) seen[name].add(ask.id)
        }
        // Where each ask waits: the replica that runs its session (every replica's statuses list every run).
        const waitsOn = new Map((yield* Effect.promise(() =>
          TestDatabase.query<{ id: string; runner: string }>(databaseUrl, `SELECT id, runner FROM ${prefix}_asks`)
        )).map((row) => [row.id, row.runner]))
        for (const ask of (yield* json(`${B}/permission`)) as Array<{ id: string; sessionID: string }>) {
          if (!seen.A.has(ask.id) || !seen.B.has(ask.id) || !waitsOn.has(ask.id)) continue
          const through = waitsOn.get(ask.id) === runners.A ? "B" : "A"
          const response = yield* post(`${through === "A" ? A : B}/permission/${ask.id}/reply`, { reply: "once" })
          if (response.status === 200) repliedThrough.push(through)
        }
        return (yield* allFinished) ? true : undefined
      }), 50_000)

      // Each session ran its calls once each, wherever it ran, after replies through the other replica.
      const written = lines(log).map(([label]) => label)
      expect(new Set(written).size).toBe(written.length)
      expect(written.length).toBe(sessions.length * 4)
      expect(repliedThrough.length).toBe(written.length)
      expect(repliedThrough.includes("B"), "some asks pending on A were answered through B").toBe(lines(log).some(([, replica]) => replica === "A"))
      expect((yield* json(`${A}/permission`)).length).toBe(0)
    }), 90_000)
})
