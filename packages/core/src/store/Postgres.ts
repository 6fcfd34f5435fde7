import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Cause, Effect, Layer, Redacted, Schedule } from "effect"
import * as Pg from "pg"
import * as Migrations from "./Migrations.js"
import { StorageError } from "./StorageError.js"

// The store in PostgreSQL (`AGENT_DATABASE_URL` or config `database.url`): the same SqlClient,
// tables and migrations (their PostgreSQL twins) as the SQLite file, through @effect/sql-pg.

/** Whether a database target is a PostgreSQL URL rather than a SQLite file name. */
export const isUrl = (target: string): boolean => /^postgres(ql)?:\/\//i.test(target)

/** The URL without its password or parameters, for messages: `postgres://user@host:5432/db`. */
export const label = (url: string): string => {
  try {
    const parsed = new URL(url)
    const user = parsed.username ? `${decodeURIComponent(parsed.username)}@` : ""
    return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname}`
  } catch {
    return "the PostgreSQL URL"
  }
}

/** What is wrong with a URL before any connection is tried, or undefined. */
export const urlProblem = (url: string): string | undefined => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return `not a valid URL: ${JSON.stringify(url.replace(/:[^:@/]*@/, ":***@"))} (expected postgres://user:password@host:5432/database)`
  }
  if (!isUrl(url)) return `${parsed.protocol} is not a PostgreSQL URL (expected postgres:// or postgresql://)`
  if (!parsed.hostname && !parsed.searchParams.get("host")) return "the URL names no host (expected postgres://user:password@host:5432/database)"
  return undefined
}

/** The PostgreSQL error code (SQLSTATE) or Node's socket error code of a failure, at any depth. */
const errorCode = (error: unknown): string | undefined => {
  for (let current = error, depth = 0; current && depth < 4; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === "string") return code
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

const innermostMessage = (error: unknown): string => {
  let message = error instanceof Error ? error.message : String(error)
  for (let current = error, depth = 0; current && depth < 4; depth++) {
    const text = (current as { message?: unknown }).message
    if (typeof text === "string" && text.trim() !== "") message = text.trim()
    current = (current as { cause?: unknown }).cause
  }
  return message
}

/** A serialization failure or deadlock: the statement may be run again (what SQLITE_BUSY is to the file). */
export const isRetryable = (error: unknown): boolean => {
  const code = errorCode(error)
  return code === "40001" || code === "40P01" || code === "55P03"
}

/** Why the server could not be used, in words that name the problem. */
export const describe = (url: string, error: unknown): string => {
  const code = errorCode(error)
  const message = innermostMessage(error)
  let host = "the server"
  try {
    host = new URL(url).host || host
  } catch {
    // label() already says the URL is unreadable
  }
  switch (code) {
    case "ECONNREFUSED":
      return `no PostgreSQL server answers at ${host} (connection refused)`
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `the host of ${host} cannot be resolved (${code})`
    case "ETIMEDOUT":
      return `connecting to ${host} timed out`
    case "28P01":
    case "28000":
      return `authentication failed: ${message}`
    case "3D000":
      return `${message} (create it first: createdb, or CREATE DATABASE)`
    case "42501":
      return `permission denied: ${message}`
  }
  if (/timed out/i.test(message)) return `connecting to ${host} timed out`
  return message
}

/** int8 (counts, times, revisions) as numbers: every value the store keeps fits in 53 bits. */
const types: Pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === 20 ? (value: string) => Number(value) : Pg.types.getTypeParser(oid, format as "text")) as Pg.CustomTypesConfig["getTypeParser"]
}

/** The URL with a server setting added to its `options` startup parameter. */
const withSetting = (url: string, setting: string) => {
  const parsed = new URL(url)
  const options = parsed.searchParams.get("options")
  parsed.searchParams.set("options", options ? `${options} -c ${setting}` : `-c ${setting}`)
  return parsed.toString()
}

/**
 * One connection, as the SQLite store has: statements run in the order they are issued, so a
 * write of buffered text issued before a part's final write cannot land after it.
 */
const client = (url: string) =>
  PgClient.layer({
    url: Redacted.make(url),
    maxConnections: 1,
    connectTimeout: "10 seconds",
    applicationName: "agent",
    types
  })

const runMigrations = Migrator.make({})({ loader: Migrator.fromRecord(Migrations.postgres) })

/** Two processes creating the migrations table at once: one of them loses the race and tries again. */
const isCreateRace = (error: unknown) => {
  const code = errorCode(error)
  return code === "42P07" || code === "23505"
}

const migrate = runMigrations.pipe(
  Effect.retry({ while: isCreateRace, schedule: Schedule.spaced("100 millis").pipe(Schedule.intersect(Schedule.recurs(5))) })
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

/** `postgres://user@host:port/db` of the connection, for messages (from the server, so it is what is open). */
export const openedLabel = (sql: SqlClient.SqlClient): Effect.Effect<string, SqlError.SqlError> =>
  sql<{ username: string; db: string; host: string | null; port: number | null }>`
    SELECT current_user AS username, current_database() AS db, host(inet_server_addr()) AS host, inet_server_port() AS port`.pipe(
    Effect.map(([row]) => `postgres://${row?.username}@${row?.host ?? "localhost"}${row?.port ? `:${row.port}` : ""}/${row?.db}`)
  )

/** Whether every transaction of the connection is read-only (opened by `layerUrlReadOnly`). */
export const isReadOnly = (sql: SqlClient.SqlClient): Effect.Effect<boolean, SqlError.SqlError> =>
  sql<{ transaction_read_only: string }>`SHOW transaction_read_only`.pipe(Effect.map(([row]) => row?.transaction_read_only === "on"))
