import { MockOpenAIServer, ScriptedModel, TestDatabase, TestNet } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { agent, events, project, serve } from "./AgentProcess.js"

// The CLI over PostgreSQL (AGENT_DATABASE_URL or config `database.url`), and sessions moved between
// a SQLite file and PostgreSQL with `session export` / `session import`, both ways.

const freePort = () => TestNet.freePort


const json = (url: string, init?: RequestInit) => Effect.promise(() => fetch(url, init).then((response) => response.json() as Promise<any>))

describe.runIf(TestDatabase.postgresRuns())("agent on PostgreSQL", () => {
  it.scopedLive("two servers on one database: one runs a session, the other reads it as it goes; after kill -9 of the first, a new one marks its tool call interrupted", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start([
        [ScriptedModel.toolCall("bash", { command: "sleep 30", description: "wait a long time" })],
        "never reached"
      ])
      const box = yield* project(model.url)
      const env = { AGENT_DATABASE_URL: yield* TestDatabase.freshPostgres }
      const first = yield* serve(box, [], env)
      const second = yield* serve(box, [], env)
      const session = yield* json(`${first.url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
      yield* Effect.promise(() =>
        fetch(`${first.url}/session/${session.id}/prompt_async`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ parts: [{ type: "text", text: "wait" }] })
        })
      )
      const toolOn = (url: string) =>
        json(`${url}/session/${session.id}/message`).pipe(
          Effect.map((messages: Array<any>) => messages.flatMap((message) => message.parts).find((part) => part.type === "tool"))
        )
      const deadline = Date.now() + 30_000
      while ((yield* toolOn(second.url))?.state.status !== "running") {
        if (Date.now() > deadline) throw new Error(`the other server never saw the tool running: ${first.stderr()}`)
        yield* Effect.sleep("100 millis")
      }
      first.child.kill("SIGKILL")
      yield* Effect.promise(() => first.exited)
      const third = yield* serve(box, [], env)
      const tool = yield* toolOn(third.url)
      expect(tool.state.status).toBe("error")
      expect(tool.state.error).toBe("Tool execution was interrupted")
      expect(tool.state.metadata.interrupted).toBe(true)
    }), 120_000)

  it.scopedLive("run stores in PostgreSQL; export from it imports into SQLite and back, unchanged", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["Stored in Postgres."])
      const box = yield* project(server.url)
      const pg = { env: { AGENT_DATABASE_URL: yield* TestDatabase.freshPostgres } }

      const run = yield* agent(box, ["run", "--format", "json", "--title", "On the server", "remember this"], pg)
      expect(run.code, run.stderr).toBe(0)
      const id = events(run.stdout).at(-1)!.sessionID as string
      const listed = yield* agent(box, ["session", "list", "--format", "json"], pg)
      expect(listed.code, listed.stderr).toBe(0)
      expect(JSON.parse(listed.stdout).map((session: { id: string; title: string }) => [session.id, session.title])).toEqual([[id, "On the server"]])
      // nothing went to the SQLite file
      expect((yield* agent(box, ["session", "list"])).stderr).toContain("no sessions in this project yet")

      // PostgreSQL → SQLite
      const fromPg = yield* agent(box, ["session", "export", id], pg)
      expect(fromPg.code, fromPg.stderr).toBe(0)
      const intoSqlite = yield* agent(box, ["session", "import", "-"], { stdin: fromPg.stdout })
      expect(intoSqlite.code, intoSqlite.stderr).toBe(0)
      expect(intoSqlite.stdout).toBe(`imported ${id} "On the server" (2 messages)\n`)
      const fromSqlite = yield* agent(box, ["session", "export", id])
      expect(JSON.parse(fromSqlite.stdout)).toEqual(JSON.parse(fromPg.stdout))

      // SQLite → PostgreSQL (after deleting it there)
      expect((yield* agent(box, ["session", "delete", id], pg)).code).toBe(0)
      expect((yield* agent(box, ["session", "show", id], pg)).code).toBe(2)
      const file = box.path("ses.json")
      fs.writeFileSync(file, fromSqlite.stdout)
      const intoPg = yield* agent(box, ["session", "import", file], pg)
      expect(intoPg.code, intoPg.stderr).toBe(0)
      const again = yield* agent(box, ["session", "export", id], pg)
      expect(JSON.parse(again.stdout)).toEqual(JSON.parse(fromPg.stdout))
    }), 120_000)

  it.scopedLive("config `database.url` names the database; a server that is not there stops the command with exit 1 and says so", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["Configured."])
      const url = yield* TestDatabase.freshPostgres
      const box = yield* project(server.url, { database: { url: "{env:TEAM_DATABASE_URL}" } })
      const env = { env: { TEAM_DATABASE_URL: url } }
      const run = yield* agent(box, ["run", "--format", "json", "--title", "Configured", "hello"], env)
      expect(run.code, run.stderr).toBe(0)
      const listed = yield* agent(box, ["session", "list", "--format", "json"], env)
      expect(JSON.parse(listed.stdout).map((session: { title: string }) => session.title)).toEqual(["Configured"])
      // AGENT_DB in the environment wins over the config file: an empty SQLite file
      const sqlite = yield* agent(box, ["session", "list"], { env: { ...env.env, AGENT_DB: box.path("local.db") } })
      expect(sqlite.stderr).toContain("no sessions in this project yet")

      const port = yield* freePort()
      const dead = yield* agent(box, ["session", "list"], { env: { AGENT_DATABASE_URL: `postgres://agent:hunter2@127.0.0.1:${port}/agent` } })
      expect(dead.code).toBe(1)
      expect(dead.stderr).toContain(
        `storage error in postgres://agent@127.0.0.1:${port}/agent: cannot open the database to read it: no PostgreSQL server answers at 127.0.0.1:${port} (connection refused)`
      )
      expect(dead.stderr).not.toContain("hunter2")
      const run2 = yield* agent(box, ["run", "hello"], { env: { AGENT_DATABASE_URL: `postgres://agent:hunter2@127.0.0.1:${port}/agent` } })
      expect(run2.code).toBe(1)
      expect(run2.stderr).toContain(`cannot open the database: no PostgreSQL server answers at 127.0.0.1:${port} (connection refused)`)
    }), 120_000)
})
