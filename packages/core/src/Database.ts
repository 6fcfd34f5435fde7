import * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import { SqliteClient, SqliteMigrator } from "@effect/sql-sqlite-node"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Cause, Effect, Layer, Schedule } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Instance } from "./Instance.js"
import * as WalCheckpoint from "./WalCheckpoint.js"
import initial from "./migrations/0001_initial.js"
import sessionDiff from "./migrations/0002_session_diff.js"
import rowRev from "./migrations/0003_row_rev.js"

/** Migrations are bundled as code (not read from a folder), so a bundled CLI still has them. */
const records = { "0001_initial": initial, "0002_session_diff": sessionDiff, "0003_row_rev": rowRev }
const migrations = SqliteMigrator.fromRecord(records)
const latestKnown = Math.max(...Object.keys(records).map((key) => Number.parseInt(key, 10)))

export class StorageError extends Error {
  override readonly name = "StorageError"
  constructor(readonly file: string, readonly detail: string, override readonly cause?: unknown) {
    super(`storage error in ${file}: ${detail}`)
  }
}

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

const isCorrupt = (error: unknown): boolean => {
  const code = sqliteCode(error)
  return code === "SQLITE_CORRUPT" || code === "SQLITE_NOTADB"
}

/**
 * Retries a write while another process holds the lock (on top of SQLite's own 5 s busy
 * timeout), then turns what is left into a defect that names the database file.
 */
export const withBusyRetry = (file: string) =>
  <A, R>(effect: Effect.Effect<A, SqlError.SqlError, R>): Effect.Effect<A, never, R> =>
    effect.pipe(
      // The retry schedule is built only when the lock was actually busy.
      Effect.catchIf(isBusy, () =>
        Effect.retry(effect, {
          while: isBusy,
          schedule: Schedule.exponential("20 millis", 2).pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(8)))
        })),
      Effect.orDieWith((error) =>
        new StorageError(file, isBusy(error) ? "database is locked by another process; gave up after retrying" : describe(error), error)
      )
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

const open = (filename: string, options: OpenOptions) =>
  Layer.mergeAll(
    Layer.effectDiscard(Effect.zipRight(pragmas, migrate)),
    filename !== ":memory:" && options.backgroundCheckpoints === true ? WalCheckpoint.layer(filename) : Layer.empty
  ).pipe(Layer.provideMerge(SqliteClient.layer({ filename })))

/** Opens (creating or migrating) one database file, or `:memory:`. */
export const layerFile = (
  filename: string,
  options: OpenOptions = {}
): Layer.Layer<SqlClient.SqlClient | SqliteClient.SqliteClient> => {
  if (filename !== ":memory:") fs.mkdirSync(path.dirname(filename), { recursive: true })
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
      const detail = error instanceof Error ? error.message : String(error)
      return Layer.die(new StorageError(filename, `cannot open database: ${detail}`, error))
    })
  )
}

/** The file the connection really has open (`:memory:` for an in-memory database), for error messages. */
export const openedFile: Effect.Effect<string, never, SqlClient.SqlClient> = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ name: string; file: string }>`PRAGMA database_list`).pipe(
    Effect.map((rows) => rows.find((row) => row.name === "main")?.file || ":memory:"),
    Effect.orDie
  )

/** The database file: `AGENT_DB`, else `<data dir>/agent.db`. */
export const filename = (instance: { readonly env: Readonly<Record<string, string | undefined>>; readonly paths: { readonly data: string } }) =>
  instance.env.AGENT_DB || path.join(instance.paths.data, "agent.db")

const layerOfInstance = (options: OpenOptions): Layer.Layer<SqlClient.SqlClient | SqliteClient.SqliteClient, never, Instance> =>
  Layer.unwrapEffect(Effect.map(Instance, (instance) => layerFile(filename(instance), options)))

export const layer = layerOfInstance({})

/** As `layer`, with checkpoints copied ahead on a worker thread: what `agent serve` uses. */
export const layerServer = layerOfInstance({ backgroundCheckpoints: true })

export const layerMemory = layerFile(":memory:")
