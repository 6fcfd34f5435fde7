import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Cause, Effect, Layer, Redacted, Schedule } from "effect"
import * as Pg from "pg"
import * as Migrations from "./Migrations.js"
import { describe, errorCode, label, urlProblem } from "./PostgresUrl.js"
import { StorageError } from "./StorageError.js"

// The store in PostgreSQL (`AGENT_DATABASE_URL` or config `database.url`): the same SqlClient,
// tables and migrations (their PostgreSQL twins) as the SQLite file, through @effect/sql-pg.
// Database.layerTarget imports this file only when a URL is configured, so a SQLite run never loads pg.

/** int8 (counts, times, revisions) as numbers: every value the store keeps fits in 53 bits. */
const types: Pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === 20 ? (value: string) => Number(value) : Pg.types.getTypeParser(oid, format as "text")) as Pg.CustomTypesConfig["getTypeParser"]
}

/**
 * The URL with a server setting in its `options` startup parameter: `last` after the URL's own
 * (so it wins), else before them (a default the URL may change).
 */
const withSetting = (url: string, setting: string, position: "first" | "last" = "last") => {
  const parsed = new URL(url)
  const options = parsed.searchParams.get("options")
  const added = `-c ${setting}`
  parsed.searchParams.set("options", !options ? added : position === "last" ? `${options} ${added}` : `${added} ${options}`)
  return parsed.toString()
}

/**
 * One connection, as the SQLite store has: statements run in the order they are issued, so a
 * write of buffered text issued before a part's final write cannot land after it. A statement
 * waits at most 5 s for a lock another session holds (SQLite's busy timeout), then is retried.
 */
const client = (url: string) =>
  PgClient.layer({
    url: Redacted.make(withSetting(url, "lock_timeout=5000", "first")),
    maxConnections: 1,
    connectTimeout: "10 seconds",
    applicationName: "agent",
    types
  })

const runMigrations = Migrator.make({})({ loader: Migrator.fromRecord(Migrations.postgres) })

/**
 * Processes opening one database at once take turns: each migrates holding a session-level
 * advisory lock (the client has one connection, so the lock, the migrations and the unlock run on
 * it), and those that waited find the work done. `CREATE TABLE IF NOT EXISTS` alone is not enough:
 * two of them race on the catalog ("type ... already exists").
 */
const MIGRATION_LOCK = 0x61_67_6e_74 // "agnt"

/**
 * A lock held past the lock timeout (55P03), or a catalog race with a process of an older version
 * that migrates without the lock (42P07, 42710, 23505): tried again.
 */
const isMigrationRace = (error: unknown) => {
  const code = errorCode(error)
  return code === "42P07" || code === "42710" || code === "23505" || code === "55P03"
}

const migrate = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.acquireUseRelease(
    sql`SELECT pg_advisory_lock(${MIGRATION_LOCK})`,
    () => runMigrations,
    () => Effect.ignore(sql`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`)
  )).pipe(
    Effect.retry({ while: isMigrationRace, schedule: Schedule.spaced("100 millis").pipe(Schedule.intersect(Schedule.recurs(5))) })
  )

const appliedVersion = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ id: number | null }>`SELECT max(migration_id) AS id FROM effect_sql_migrations`).pipe(
    Effect.map(([row]) => row?.id ?? 0),
    // No migrations table yet: a database this runtime has never written.
    Effect.catchIf((error) => errorCode(error) === "42P01", () => Effect.succeed(0))
  )

const fail = (url: string, what: string) => (cause: Cause.Cause<unknown>) => {
  const error = Cause.squash(cause)
  if (error instanceof StorageError) return Layer.die(error)
  return Layer.die(new StorageError(label(url), `${what}: ${describe(url, error)}`, error))
}

/** Opens (migrating when needed) the database at a PostgreSQL URL. */
export const layerUrl = (url: string): Layer.Layer<SqlClient.SqlClient> => {
  const problem = urlProblem(url)
  if (problem) return Layer.die(new StorageError(label(url), problem))
  return Layer.effectDiscard(migrate).pipe(
    Layer.provideMerge(client(url)),
    Layer.catchAllCause(fail(url, "cannot open the database"))
  )
}

/**
 * Opens the database only to read it (`session list`, `show`, `export`): every transaction of the
 * connection is read-only (`default_transaction_read_only`), so nothing is written. A database
 * this version has not migrated yet is opened as `layerUrl` opens it, to be migrated first.
 */
export const layerUrlReadOnly = (url: string): Layer.Layer<SqlClient.SqlClient> => {
  const problem = urlProblem(url)
  if (problem) return Layer.die(new StorageError(label(url), problem))
  return Layer.unwrapScoped(
    Effect.gen(function*() {
      const built = yield* Layer.build(client(withSetting(url, "default_transaction_read_only=on")))
      const version = yield* Effect.provide(appliedVersion, built)
      return version < Migrations.latestKnown ? layerUrl(url) : Layer.succeedContext(built)
    })
  ).pipe(Layer.catchAllCause(fail(url, "cannot open the database to read it")))
}
