import { TestData, TestDatabase, TestInstance, TestNet } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import * as Migrator from "@effect/sql/Migrator"
import { SqlClient } from "@effect/sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Cause, Context, Effect, Exit, Fiber, Layer, Redacted } from "effect"
import * as Pg from "pg"
import { ConfigService } from "../../src/config/ConfigService.js"
import { Bus } from "../../src/runtime/Bus.js"
import { Instance } from "../../src/runtime/Instance.js"
import * as Database from "../../src/store/Database.js"
import pgInitial from "../../src/store/migrations/pg/0001_initial.js"
import { SessionStore } from "../../src/store/SessionStore.js"

// What is particular to the PostgreSQL store: its migrations, opening it (and the errors when it
// cannot be), reading without writing, the config key, and moving sessions between the backends.
// The store's behaviour itself is tested on both backends in SessionStore.test.ts.

const storeLayer = (box: TestInstance.Sandbox, database: Layer.Layer<SqlClient.SqlClient>) =>
  SessionStore.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(database, Bus.layer)),
    Layer.provideMerge(Layer.succeed(Instance, box.instance))
  )

/** The defect a layer dies with when it is built. */
const buildFailure = <A>(layer: Layer.Layer<A>) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Effect.scoped(Layer.build(layer)))
    expect(Exit.isFailure(exit)).toBe(true)
    return Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
  })

const freePort = () => TestNet.freePort


/** What Postgres.ts gives its client: BIGINT columns as numbers (pg gives strings). */
const int8AsNumber = {
  getTypeParser: (oid: number, format?: string) => (oid === 20 ? Number : Pg.types.getTypeParser(oid, format as "text"))
} as Pg.CustomTypesConfig

const migrationIds = (sql: SqlClient.SqlClient) =>
  sql<{ migration_id: number }>`SELECT migration_id FROM effect_sql_migrations ORDER BY migration_id`.pipe(
    Effect.map((rows) => rows.map((row) => row.migration_id)),
    Effect.orDie
  )

describe.runIf(TestDatabase.postgresRuns())("PostgreSQL store", () => {
  it.scopedLive("migrates a new database, keeps its data when opened again, and brings an older schema up to date", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const url = yield* TestDatabase.freshPostgres
      // What a first release would have left: only the first migration, and a session written by it.
      const id = yield* Effect.gen(function*() {
        yield* Migrator.make({})({ loader: Migrator.fromRecord({ "0001_initial": pgInitial }) })
        return yield* Effect.gen(function*() {
          return (yield* (yield* SessionStore).create({ title: "from version 1" })).id
        }).pipe(Effect.provide(SessionStore.layer.pipe(Layer.provideMerge(Bus.layer), Layer.provideMerge(Layer.succeed(Instance, box.instance)))))
      }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), types: int8AsNumber })))
      for (let open = 0; open < 2; open++) {
        yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          expect(yield* migrationIds(sql)).toEqual([1, 2, 3, 4])
          expect((yield* (yield* SessionStore).get(id)).title).toBe("from version 1")
          expect(yield* Database.openedFile).toMatch(/^postgres:\/\/agent@127\.0\.0\.1:\d+\/postgres$/)
          // a lock held elsewhere is waited for 5 s per try, as SQLite's busy timeout
          expect(yield* sql`SHOW lock_timeout`.pipe(Effect.orDie)).toEqual([{ lock_timeout: "5s" }])
        }).pipe(Effect.provide(storeLayer(box, Database.layerTarget(url))))
      }
    }))

  it.scopedLive("several processes opening a new database at once: one migrates, the others wait for it", () =>
    Effect.gen(function*() {
      const url = yield* TestDatabase.freshPostgres
      const opened = yield* Effect.all(
        Array.from({ length: 4 }, () => Layer.build(Database.layerTarget(url)).pipe(Effect.map(Context.get(SqlClient.SqlClient)))),
        { concurrency: "unbounded" }
      )
      for (const sql of opened) expect(yield* migrationIds(sql)).toEqual([1, 2, 3, 4])
    }))

  it.scopedLive("a URL that is not one, a server that is not there, a wrong password, a missing database: errors that say so, without the password", () =>
    Effect.gen(function*() {
      const server = new URL(TestDatabase.serverUrl()!)
      const password = decodeURIComponent(server.password)
      const messageOf = (url: string) => buildFailure(Database.layerTarget(url)).pipe(Effect.map((error) => String((error as Error).message)))

      const noHost = yield* messageOf("postgres:///agent")
      expect(noHost).toBe("storage error in postgres:///agent: the URL names no host (expected postgres://user:password@host:5432/database)")
      expect(yield* messageOf("postgres://agent:secret@host:port/db")).toMatch(/not a valid URL: .*postgres:\/\/agent:\*\*\*@host:port\/db/)

      const port = yield* freePort()
      const dead = yield* messageOf(`postgres://agent:${password}@127.0.0.1:${port}/postgres`)
      expect(dead).toBe(
        `storage error in postgres://agent@127.0.0.1:${port}/postgres: cannot open the database: no PostgreSQL server answers at 127.0.0.1:${port} (connection refused)`
      )

      const wrong = new URL(server)
      wrong.password = "not-the-password"
      const refused = yield* messageOf(wrong.toString())
      expect(refused).toContain(`storage error in postgres://agent@${server.host}/postgres: cannot open the database: authentication failed`)
      expect(refused).toContain(`password authentication failed for user "agent"`)
      expect(refused).not.toContain("not-the-password")

      const missing = new URL(server)
      missing.pathname = "/no_such_database"
      const absent = yield* messageOf(missing.toString())
      expect(absent).toContain(`database "no_such_database" does not exist (create it first`)
      expect(absent).not.toContain(password)
    }))

  it.scopedLive("opened to read: lists and loads, writes nothing (no lease), and a write fails naming the server", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const url = yield* TestDatabase.freshPostgres
      const id = yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "kept" })
        const user = TestData.userMessage(session.id)
        yield* store.upsertMessage(user)
        yield* store.upsertPart(TestData.textPart(user, "hello"))
        return session.id
      }).pipe(Effect.provide(storeLayer(box, Database.layerTarget(url))))

      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const sql = yield* SqlClient.SqlClient
        expect(yield* Database.isReadOnly).toBe(true)
        expect((yield* store.list()).items.map((session) => session.id)).toEqual([id])
        expect((yield* store.messages(id))[0]!.parts[0]).toMatchObject({ type: "text", text: "hello" })
        expect(yield* sql`SELECT owner FROM lease`.pipe(Effect.orDie)).toEqual([])
        const exit = yield* Effect.exit(store.create({ title: "refused" }))
        const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
        expect(defect).toBeInstanceOf(Database.StorageError)
        expect((defect as Error).message).toMatch(/^storage error in postgres:\/\/agent@[\d.]+:\d+\/postgres: .*read-only transaction/)
      }).pipe(Effect.provide(storeLayer(box, Database.layerTargetReadOnly(url))))
    }))

  it.scopedLive("a write waits out another session's lock, and one that never frees fails naming the server", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const url = yield* TestDatabase.freshPostgres
      // Another session, as another process would hold it, to lock the session table.
      const other = new Pg.Client({ connectionString: url })
      yield* Effect.acquireRelease(Effect.promise(() => other.connect()), () => Effect.promise(() => other.end()))
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        // Without the 5 s lock timeout, so what is left is the store's retry.
        yield* (yield* SqlClient.SqlClient)`SET lock_timeout = 50`.pipe(Effect.orDie)
        yield* Effect.promise(() => other.query("BEGIN; LOCK TABLE session IN ACCESS EXCLUSIVE MODE"))
        const released = yield* Effect.fork(Effect.sleep("300 millis").pipe(Effect.zipRight(Effect.promise(() => other.query("COMMIT")))))
        const made = yield* store.create({ title: "waited" })
        yield* Fiber.join(released)
        expect((yield* store.get(made.id)).title).toBe("waited")

        yield* Effect.promise(() => other.query("BEGIN; LOCK TABLE session IN ACCESS EXCLUSIVE MODE"))
        const exit = yield* Effect.exit(store.create({ title: "never" }))
        yield* Effect.promise(() => other.query("COMMIT"))
        const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
        expect(defect).toBeInstanceOf(Database.StorageError)
        expect((defect as Error).message).toMatch(
          /^storage error in postgres:\/\/agent@[\d.]+:\d+\/postgres: Failed to execute statement: another session holds a lock on the data past the lock timeout \(canceling statement due to lock timeout\); gave up after retrying$/
        )
        expect((yield* store.list()).items.map((session) => session.title)).toEqual(["waited"])
      }).pipe(Effect.provide(storeLayer(box, Database.layerTarget(url))))
    }), 60_000)

  it.scopedLive("a connection the server dropped is replaced: the next write goes through", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const url = yield* TestDatabase.freshPostgres
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const sql = yield* SqlClient.SqlClient
        yield* store.create({ title: "before" })
        const [{ pid }] = (yield* sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.pipe(Effect.orDie)) as [{ pid: number }]
        // Another session ends this one's connection, as a server restart or an idle timeout would.
        yield* Effect.scoped(Effect.gen(function*() {
          const admin = Context.get(yield* Layer.build(PgClient.layer({ url: Redacted.make(TestDatabase.serverUrl()!) })), SqlClient.SqlClient)
          yield* admin`SELECT pg_terminate_backend(${pid})`.pipe(Effect.orDie)
        }))
        yield* Effect.sleep("200 millis")
        yield* store.create({ title: "after" })
        expect((yield* store.list()).items.map((session) => session.title).sort()).toEqual(["after", "before"])
      }).pipe(Effect.provide(storeLayer(box, Database.layerTarget(url))))
    }))

  it.scopedLive("a session moves between the backends: SQLite → PostgreSQL → SQLite, unchanged", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const url = yield* TestDatabase.freshPostgres
      const inStore = <A>(database: Layer.Layer<SqlClient.SqlClient>, body: (store: SessionStore["Type"]) => Effect.Effect<A, unknown>) =>
        Effect.flatMap(SessionStore, body).pipe(Effect.provide(storeLayer(box, database)), Effect.orDie)
      const exported = yield* inStore(Database.layerTarget(box.path("laptop.db")), (store) =>
        Effect.gen(function*() {
          const root = yield* store.create({ title: "moving", agent: "build" })
          const child = yield* store.create({ parentID: root.id, title: "child" })
          for (const session of [root, child]) {
            const user = TestData.userMessage(session.id)
            const reply = TestData.assistantMessage(session.id, user.id, { finish: "tool-calls", cost: 0.01 })
            yield* store.upsertMessage(user)
            yield* store.upsertPart(TestData.textPart(user, "do the thing"))
            yield* store.upsertMessage(reply)
            yield* store.upsertPart(TestData.toolPart(reply, "completed", "read", { filePath: "/a" }))
          }
          yield* store.setTodos(root.id, [{ content: "a", status: "pending", priority: "medium" }])
          yield* store.addUsage(child.id, { cost: 0.25, tokens: { input: 7, output: 14, reasoning: 1, cache: { read: 3, write: 4 } } })
          return SessionStore.encodeExport(yield* store.exportSession(root.id))
        }))
      const id = (exported as { info: { id: string } }).info.id
      const viaPostgres = yield* inStore(Database.layerTarget(url), (store) =>
        Effect.gen(function*() {
          yield* store.importSession(JSON.parse(JSON.stringify(exported)))
          return SessionStore.encodeExport(yield* store.exportSession(id as never))
        }))
      expect(viaPostgres).toEqual(exported)
      const back = yield* inStore(Database.layerTarget(box.path("other-laptop.db")), (store) =>
        Effect.gen(function*() {
          yield* store.importSession(JSON.parse(JSON.stringify(viaPostgres)))
          return SessionStore.encodeExport(yield* store.exportSession(id as never))
        }))
      expect(back).toEqual(exported)
    }))

  it.scopedLive("config `database.url` opens PostgreSQL; AGENT_DB and AGENT_DATABASE_URL in the environment win over it", () =>
    Effect.gen(function*() {
      const url = yield* TestDatabase.freshPostgres
      const opened = (env: Record<string, string>) =>
        Effect.gen(function*() {
          const box = yield* TestInstance.sandbox({ env })
          const config = ConfigService.layerFromInfo({
            config: { database: { url } },
            sources: [],
            warnings: [],
            directories: [],
            origin: () => undefined
          })
          return yield* Database.openedFile.pipe(
            Effect.provide(Database.layer.pipe(Layer.provide(config), Layer.provide(Layer.succeed(Instance, box.instance))))
          )
        })
      expect(yield* opened({})).toMatch(/^postgres:\/\/agent@/)
      expect(yield* opened({ AGENT_DB: ":memory:" })).toBe(":memory:")
      expect(yield* opened({ AGENT_DATABASE_URL: url, AGENT_DB: ":memory:" })).toMatch(/^postgres:\/\/agent@/)
    }))
})

describe.runIf(!TestDatabase.postgresRuns())("PostgreSQL store: this machine", () => {
  it("has no PostgreSQL for the tests, so the Postgres store tests did not run", () => {
    console.warn(TestDatabase.notRunReason)
    expect(TestDatabase.serverUrl()).toBeUndefined()
  })
})
