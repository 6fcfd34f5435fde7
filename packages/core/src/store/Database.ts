import * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import { SqliteClient, SqliteMigrator } from "@effect/sql-sqlite-node"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Cause, Effect, Layer, Schedule } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { ConfigService } from "../config/ConfigService.js"
import { Instance } from "../runtime/Instance.js"
import * as Migrations from "./Migrations.js"
import * as PostgresUrl from "./PostgresUrl.js"
import { StorageError } from "./StorageError.js"
import * as WalCheckpoint from "./WalCheckpoint.js"

export { PostgresUrl, StorageError }

const migrations = SqliteMigrator.fromRecord(Migrations.sqlite)
const latestKnown = Migrations.latestKnown

/** The SQLite result code of a better-sqlite3 error, thrown directly or wrapped in a SqlError. */
const sqliteCode = (error: unknown): string | undefined => {
  for (let current = error, depth = 0; current && depth < 3; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === "string" && code.startsWith("SQLITE_")) return code
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

/** The SqlError's own message plus what SQLite said, e.g. "Failed to prepare statement: database is locked". */
const describe = (error: SqlError.SqlError): string => {
  const cause = error.cause as { message?: unknown; code?: unknown } | undefined
  const detail = typeof cause?.message === "string" ? cause.message : undefined
  const code = sqliteCode(error)
  return [error.message.trim(), detail && `${detail}${code ? ` (${code})` : ""}`].filter(Boolean).join(": ")
}

export const isBusy = (error: unknown): boolean => {
  const code = sqliteCode(error)
  return code === "SQLITE_BUSY" || code === "SQLITE_LOCKED" || code?.startsWith("SQLITE_BUSY_") === true
}

const isReadOnlyError = (error: unknown): boolean => {
  const code = sqliteCode(error)
  return code === "SQLITE_READONLY" || code?.startsWith("SQLITE_READONLY_") === true || code === "SQLITE_CANTOPEN"
}

/** Why `target` cannot be written, in words, or undefined when it can. */
const whyNotWritable = (target: string): string | undefined => {
  try {
    fs.accessSync(target, fs.constants.W_OK)
    return undefined
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === "EROFS") return `${target} is on a read-only file system`
    if (code === "EACCES" || code === "EPERM") return `${target} is read-only for this user (permission denied)`
    return `${target}: ${(error as Error).message}`
  }
}

const READ_ONLY_HINT = "this command needs to write it; `agent session list`, `session show` and `session export` can still read it"

/** A write refused because the database file or its directory is read-only, said so; else undefined. */
const readOnlyProblem = (file: string, error: unknown): string | undefined => {
  if (file === ":memory:" || !isReadOnlyError(error)) return undefined
  const reason = whyNotWritable(file) ?? whyNotWritable(path.dirname(file))
  return reason ? `the database is read-only (${reason}); ${READ_ONLY_HINT}` : undefined
}

const isCorrupt = (error: unknown): boolean => {
  const code = sqliteCode(error)
  return code === "SQLITE_CORRUPT" || code === "SQLITE_NOTADB"
}

/**
 * Retries a write while another process holds the lock (on top of SQLite's own 5 s busy
 * timeout), then turns what is left into a defect that names the database file.
 */
export const withBusyRetry = (file: string) =>
  PostgresUrl.isUrl(file) ? withRetryPostgres(file) : <A, R>(effect: Effect.Effect<A, SqlError.SqlError, R>): Effect.Effect<A, never, R> =>
    effect.pipe(
      // The retry schedule is built only when the lock was actually busy.
      Effect.catchIf(isBusy, () =>
        Effect.retry(effect, {
          while: isBusy,
          schedule: Schedule.exponential("20 millis", 2).pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(8)))
        })),
      Effect.orDieWith((error) =>
        new StorageError(
          file,
          isBusy(error) ? "database is locked by another process; gave up after retrying" : readOnlyProblem(file, error) ?? describe(error),
          error
        )
      )
    )

/**
 * `withBusyRetry` of a PostgreSQL store (`file` is its URL without the password): a serialization
 * failure or deadlock is tried again, anything else (the server gone, a broken statement) is a
 * defect that names the server and the problem.
 */
const withRetryPostgres = (file: string) =>
  <A, R>(effect: Effect.Effect<A, SqlError.SqlError, R>): Effect.Effect<A, never, R> =>
    effect.pipe(
      Effect.retry({
        while: PostgresUrl.isRetryable,
        schedule: Schedule.exponential("20 millis", 2).pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(8)))
      }),
      Effect.orDieWith((error) => new StorageError(file, `${error.message.trim()}: ${PostgresUrl.describe(file, error)}`, error))
    )

const pragmas = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Incremental vacuum can only be switched on while the database has no tables; the
  // VACUUM rewrites the (empty) file so the setting sticks even in WAL mode.
  const [vacuum] = yield* sql<{ auto_vacuum: number }>`PRAGMA auto_vacuum`
  if (vacuum?.auto_vacuum !== 2) {
    const [tables] = yield* sql<{ n: number }>`SELECT count(*) AS n FROM sqlite_master`
    if (tables?.n === 0) {
      yield* sql`PRAGMA auto_vacuum = INCREMENTAL`
      yield* sql`VACUUM`
    }
  }
  yield* sql`PRAGMA synchronous = NORMAL`
  yield* sql`PRAGMA busy_timeout = 5000`
  yield* sql`PRAGMA foreign_keys = ON`
  // Reads come straight from the mapped file instead of being copied into a fresh page cache: a
  // new connection loading a long session read its pages one syscall at a time.
  yield* sql`PRAGMA mmap_size = 268435456`
})

/**
 * Several processes may open a new database at once. The migrator treats "another process is
 * migrating" as done and returns at once, before that process has committed, so this waits until
 * the newest migration is visible (and runs the migrator again if the other process gave up).
 */
const migrate = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const applied = sql<{ id: number | null }>`SELECT max(migration_id) AS id FROM effect_sql_migrations`.pipe(
    Effect.map(([row]) => row?.id ?? 0)
  )
  yield* SqliteMigrator.run({ loader: migrations }).pipe(
    Effect.zipRight(applied),
    Effect.filterOrFail((id) => id >= latestKnown, () => "pending" as const),
    Effect.retry({
      while: (error) => error === "pending" || isBusy(error),
      schedule: Schedule.spaced("50 millis").pipe(Schedule.intersect(Schedule.recurs(200)))
    }),
    Effect.catchIf((error) => error === "pending", () =>
      Effect.fail(new Error("another process started migrating this database and has not finished after 10 s")))
  )
}).pipe(Effect.provide(NodeContext.layer))

export interface OpenOptions {
  /**
   * Copy the WAL into the database file from a worker thread (WalCheckpoint), so that the
   * commit which checkpoints finds the work done. For long-running servers, where that commit
   * held up every session's step; a short command gains nothing from the extra thread.
   */
  readonly backgroundCheckpoints?: boolean
}

/**
 * The SQLite client. better-sqlite3 takes URI filenames (which `layerFileReadOnly` needs for a
 * database in a read-only directory) only when SQLITE_USE_URI=1 is set as its addon loads, on the
 * first open in the process; it is set just while the client is built, so that the processes the
 * tools start do not inherit it.
 */
const client = (config: SqliteClient.SqliteClientConfig) =>
  Layer.unwrapEffect(Effect.sync(() => {
    const before = process.env.SQLITE_USE_URI
    process.env.SQLITE_USE_URI = "1"
    const restore = Effect.sync(() => {
      if (before === undefined) delete process.env.SQLITE_USE_URI
      else process.env.SQLITE_USE_URI = before
    })
    return Layer.effectDiscard(restore).pipe(
      Layer.provideMerge(SqliteClient.layer(config)),
      Layer.tapErrorCause(() => restore)
    )
  }))

const open = (filename: string, options: OpenOptions) =>
  Layer.mergeAll(
    Layer.effectDiscard(Effect.zipRight(pragmas, migrate)),
    filename !== ":memory:" && options.backgroundCheckpoints === true ? WalCheckpoint.layer(filename) : Layer.empty
  ).pipe(Layer.provideMerge(client({ filename })))

/** The closest existing directory at or above `dir`. */
const existingAncestor = (dir: string): string => {
  let current = dir
  while (!fs.existsSync(current) && path.dirname(current) !== current) current = path.dirname(current)
  return current
}

/** Creates the directory of the database file, or says which directory cannot be created and why. */
const ensureDirectory = (filename: string) => {
  const dir = path.dirname(filename)
  try {
    fs.mkdirSync(dir, { recursive: true })
  } catch (error) {
    // mkdir -p on a read-only file system reports ENOENT for the missing directory: look at its parent.
    const reason = whyNotWritable(existingAncestor(dir)) ?? (error as Error).message
    throw new StorageError(filename, `cannot create the data directory ${dir}: ${reason}`, error)
  }
}

/** Opens (creating or migrating) one database file, or `:memory:`. */
export const layerFile = (
  filename: string,
  options: OpenOptions = {}
): Layer.Layer<SqlClient.SqlClient | SqliteClient.SqliteClient> => {
  if (filename !== ":memory:") {
    try {
      ensureDirectory(filename)
    } catch (error) {
      return Layer.die(error)
    }
  }
  return open(filename, options).pipe(
    Layer.catchAllCause((cause) => {
      const error = Cause.squash(cause)
      // A corrupt file would fail every start: keep it aside for the user and begin a new one.
      if (filename !== ":memory:" && isCorrupt(error)) {
        const aside = `${filename}.corrupt-${Date.now()}`
        return Layer.unwrapEffect(
          Effect.gen(function*() {
            for (const suffix of ["", "-wal", "-shm"]) {
              if (fs.existsSync(filename + suffix)) fs.renameSync(filename + suffix, aside + suffix)
            }
            yield* Effect.logError(`database ${filename} is corrupt; moved it to ${aside} and started a new one`)
            return Layer.orDie(open(filename, options))
          })
        )
      }
      const readOnly = readOnlyProblem(filename, error)
      if (readOnly) return Layer.die(new StorageError(filename, readOnly, error))
      const detail = error instanceof Error ? error.message : String(error)
      return Layer.die(new StorageError(filename, `cannot open database: ${detail}`, error))
    })
  )
}

const readPragmas = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`PRAGMA busy_timeout = 5000`
  yield* sql`PRAGMA mmap_size = 268435456`
  // What `isReadOnly` reports: the session store then keeps no lease and recovers nothing.
  yield* sql`PRAGMA query_only = 1`
  const [row] = yield* sql<{ id: number | null }>`SELECT max(migration_id) AS id FROM effect_sql_migrations`
  return row?.id ?? 0
})

/** A URI that opens `filename` read-only without the -shm file SQLite cannot create in a read-only directory. */
const immutableUri = (filename: string) => `file:${filename.replace(/[?#%]/g, encodeURIComponent)}?mode=ro&immutable=1`

/**
 * Opens the database only to read it (the reading commands: `session list`, `show`, `export`):
 * nothing is created, migrated or written, so a read-only file, directory or file system works.
 * No database yet: an empty one in memory. One written by an older version is opened as
 * `layerFile` opens it, to be migrated (or to say it cannot be).
 */
export const layerFileReadOnly = (filename: string): Layer.Layer<SqlClient.SqlClient | SqliteClient.SqliteClient> => {
  if (filename === ":memory:" || !fs.existsSync(filename)) return layerFile(":memory:")
  const opened = (name: string) =>
    Layer.unwrapScoped(
      Effect.gen(function*() {
        const built = yield* Layer.build(client({ filename: name, readonly: true, disableWAL: true }))
        const version = yield* Effect.provide(readPragmas, built)
        return version < latestKnown ? layerFile(filename) : Layer.succeedContext(built)
      })
    )
  return opened(filename).pipe(
    // In a read-only directory SQLite cannot create the WAL index (-shm) a WAL database is read
    // through; with nothing in a -wal file to read, the file can be opened as immutable instead.
    Layer.catchAllCause((cause) => sqliteCode(Cause.squash(cause)) === "SQLITE_CANTOPEN" ? opened(immutableUri(filename)) : Layer.failCause(cause)),
    Layer.catchAllCause((cause) => {
      const error = Cause.squash(cause)
      if (error instanceof StorageError) return Layer.die(error)
      return Layer.die(new StorageError(filename, `cannot open the database to read it: ${error instanceof Error ? error.message : String(error)}`, error))
    })
  )
}

/** Whether the connection only reads (opened by `layerFileReadOnly` or `layerTargetReadOnly`). */
export const isReadOnly: Effect.Effect<boolean, never, SqlClient.SqlClient> = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.onDialectOrElse({
    pg: () => PostgresUrl.isReadOnly(sql),
    orElse: () => sql<{ query_only: number }>`PRAGMA query_only`.pipe(Effect.map(([row]) => row?.query_only === 1))
  })).pipe(Effect.orDie)

/**
 * The file the connection really has open (`:memory:` for an in-memory database), or for
 * PostgreSQL its `postgres://user@host:port/db` (no password), for error messages.
 */
export const openedFile: Effect.Effect<string, never, SqlClient.SqlClient> = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.onDialectOrElse({
    pg: () => PostgresUrl.openedLabel(sql),
    orElse: () =>
      sql<{ name: string; file: string }>`PRAGMA database_list`.pipe(
        Effect.map((rows) => rows.find((row) => row.name === "main")?.file || ":memory:")
      )
  })).pipe(Effect.orDie)

/** The database file: `AGENT_DB`, else `<data dir>/agent.db`. */
export const filename = (instance: { readonly env: Readonly<Record<string, string | undefined>>; readonly paths: { readonly data: string } }) =>
  instance.env.AGENT_DB || path.join(instance.paths.data, "agent.db")

/**
 * Where the instance's store is: `AGENT_DATABASE_URL`, else `AGENT_DB` (a file), else config
 * `database.url`, else `<data dir>/agent.db`. The environment wins over the config file.
 */
export const target = (
  instance: { readonly env: Readonly<Record<string, string | undefined>>; readonly paths: { readonly data: string } },
  configuredUrl: string | undefined
): string => {
  const url = instance.env.AGENT_DATABASE_URL?.trim()
  if (url) return url
  if (instance.env.AGENT_DB) return instance.env.AGENT_DB
  return configuredUrl?.trim() || filename(instance)
}

/** The name errors of a statement should give: the database file, `:memory:`, or the server. */
export const storageName: Effect.Effect<string, never, SqlClient.SqlClient | Instance> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const instance = yield* Instance
  return yield* sql.onDialectOrElse({
    pg: () => openedFile,
    orElse: () => Effect.succeed(instance.env.AGENT_DB === ":memory:" ? ":memory:" : filename(instance))
  })
})

/** The PostgreSQL layers, loaded with their driver only when a URL is opened. */
const postgres = <A>(open: (module: typeof import("./Postgres.js")) => Layer.Layer<A>): Layer.Layer<A> =>
  Layer.unwrapEffect(Effect.map(Effect.promise(() => import("./Postgres.js")), open))

/** Opens a PostgreSQL URL (`Postgres.layerUrl`) or a SQLite file (`layerFile`). */
export const layerTarget = (name: string, options: OpenOptions = {}): Layer.Layer<SqlClient.SqlClient> =>
  PostgresUrl.isUrl(name) ? postgres((pg) => pg.layerUrl(name)) : layerFile(name, options)

/** `layerTarget` only to read: `Postgres.layerUrlReadOnly` or `layerFileReadOnly`. */
export const layerTargetReadOnly = (name: string): Layer.Layer<SqlClient.SqlClient> =>
  PostgresUrl.isUrl(name) ? postgres((pg) => pg.layerUrlReadOnly(name)) : layerFileReadOnly(name)

const targetOfInstance = Effect.gen(function*() {
  const instance = yield* Instance
  const config = yield* (yield* ConfigService).get()
  return target(instance, config.database?.url)
})

const layerOfInstance = (options: OpenOptions): Layer.Layer<SqlClient.SqlClient, never, Instance | ConfigService> =>
  Layer.unwrapEffect(Effect.map(targetOfInstance, (name) => layerTarget(name, options)))

export const layer = layerOfInstance({})

/** `layerTargetReadOnly` of the instance's database: for commands that only read. */
export const layerReadOnly: Layer.Layer<SqlClient.SqlClient, never, Instance | ConfigService> = Layer.unwrapEffect(
  Effect.map(targetOfInstance, layerTargetReadOnly)
)

/** As `layer`, with checkpoints copied ahead on a worker thread: what `agent serve` uses. */
export const layerServer = layerOfInstance({ backgroundCheckpoints: true })

export const layerMemory = layerFile(":memory:")
