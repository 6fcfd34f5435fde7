import { Database } from "@agent/core"
import { MockOpenAIServer, ScriptedModel, type TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import { agent, events, project } from "./AgentProcess.js"

/** The SQLite driver the runtime uses, from where the runtime finds it. */
const fromCore = createRequire(fileURLToPath(new URL("../../core/package.json", import.meta.url)))
const Sqlite = createRequire(fromCore.resolve("@effect/sql-sqlite-node"))("better-sqlite3") as new(file: string) => {
  exec(sql: string): void
  close(): void
}

const { toolCall } = ScriptedModel

/**
 * Makes the sandbox's database refuse to store the parts that match `like` (SQL LIKE on the part's
 * JSON), as a full or failing disk would: a trigger that aborts the write with SQLite's own message.
 */
const failWrites = (box: TestInstance.Sandbox, like: string) =>
  Effect.gen(function*() {
    const file = Database.filename(box.instance)
    // Created and migrated as the CLI would.
    yield* Effect.provide(Effect.void, Database.layerFile(file))
    const db = new Sqlite(file)
    for (const event of ["INSERT", "UPDATE"]) {
      db.exec(`CREATE TRIGGER fault_${event.toLowerCase()} BEFORE ${event} ON part
        WHEN NEW.data LIKE '${like}' BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`)
    }
    db.close()
  })

describe("agent run --format json ends with a result event", () => {
  it.scopedLive("when the database fails mid-run: status error, exit 1, the storage error named", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["The answer."])
      const box = yield* project(server.url)
      yield* failWrites(box, `%"type":"step-finish"%`)
      const result = yield* agent(box, ["run", "--format", "json", "hello"])
      expect(result.code, result.stderr).toBe(1)
      expect(result.stderr).toMatch(/storage error in .*agent\.db: .*database or disk is full/)
      const last = events(result.stdout).at(-1)
      expect(last, result.stdout).toMatchObject({ type: "result", status: "error", exitCode: 1 })
      expect(last!.reason).toMatch(/database or disk is full/)
      expect(last!.sessionID).toMatch(/^ses_/)
    }))

  it.scopedLive("when a tool's result cannot be stored", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[toolCall("read", { filePath: "a.txt" })], "Read it."])
      const box = yield* project(server.url, {}, { "project/a.txt": "alpha" })
      yield* failWrites(box, `%"status":"completed"%`)
      const result = yield* agent(box, ["run", "--format", "json", "read a.txt"])
      // Not a run that carries on as if the result had been kept: it fails, saying why.
      expect(result.code, result.stderr).toBe(1)
      expect(result.stderr).toMatch(/storage error in .*agent\.db: .*database or disk is full/)
      expect(events(result.stdout).at(-1), result.stdout).toMatchObject({ type: "result", status: "error", exitCode: 1 })
    }))

  it.scopedLive("when the run cannot start (a configuration error): status error, exit 2", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([])
      const box = yield* project(server.url, { no_such_key: true })
      const result = yield* agent(box, ["run", "--format", "json", "hello"])
      expect(result.code).toBe(2)
      expect(result.stderr).toMatch(/no_such_key/)
      expect(events(result.stdout), result.stdout).toEqual([
        expect.objectContaining({ type: "result", status: "error", exitCode: 2, reason: expect.stringMatching(/no_such_key/) })
      ])
    }))
})
