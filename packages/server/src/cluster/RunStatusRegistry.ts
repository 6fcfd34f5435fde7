// Which sessions have a run, on every replica (`GET /session/status` on a replica): a table of the
// cluster's database that each replica writes from its own bus (`session.status`: a few events per
// run, never per token) and any replica reads. A row counts only while its replica is alive (its
// runner's heartbeat in `<prefix>_runners` is fresh): a killed replica's runs do not stay busy.
import { Bus } from "@agent/core"
import { SessionStatus } from "@agent/domain"
import type { SessionID } from "@agent/domain"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option, Schedule, Schema, Stream } from "effect"

export interface RunStatusRegistryShape {
  /** The sessions that are not idle on any live replica, this one's own first-hand. */
  readonly all: (local: ReadonlyMap<SessionID, SessionStatus>) => Effect.Effect<ReadonlyMap<SessionID, SessionStatus>>
}

const decodeStatus = Schema.decodeUnknownOption(Schema.parseJson(SessionStatus))

/** Two replicas starting at once race on the catalog (42P07, 23505): tried again. */
const createTable = (sql: SqlClient.SqlClient, table: string) =>
  sql.unsafe(`CREATE TABLE IF NOT EXISTS ${table} (session_id TEXT PRIMARY KEY, runner TEXT NOT NULL, data TEXT NOT NULL)`).pipe(
    Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.intersect(Schedule.recurs(5)))),
    Effect.orDie
  )

/**
 * Merges the rows read from the database with this replica's own statuses (a pure function,
 * table-tested): a local run is known before its row is written, and a local idle session that
 * still has a row of this replica (the delete is on its way) is idle.
 */
export const mergeStatuses = (
  rows: ReadonlyArray<{ readonly sessionID: string; readonly runner: string; readonly status: SessionStatus }>,
  local: ReadonlyMap<SessionID, SessionStatus>,
  self: string
): ReadonlyMap<SessionID, SessionStatus> => {
  const merged = new Map<SessionID, SessionStatus>()
  for (const row of rows) {
    if (row.runner === self || row.status.type === "idle") continue
    merged.set(row.sessionID as SessionID, row.status)
  }
  for (const [sessionID, status] of local) if (status.type !== "idle") merged.set(sessionID, status)
  return merged
}

/**
 * `lockExpirationMs`: how long a runner's heartbeat stays fresh (the cluster's own rule for a live
 * runner, `SqlRunnerStorage.getRunners`).
 */
export const make = (prefix: string, runner: string, lockExpirationMs: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const bus = yield* Bus
    const table = `${prefix}_statuses`
    yield* createTable(sql, table)

    const events = yield* bus.subscribe({ types: ["session.status"] })
    yield* events.pipe(
      Stream.runForEach((event) => {
        const { sessionID, status } = event.properties
        const write = status.type === "idle"
          ? sql.unsafe(`DELETE FROM ${table} WHERE session_id = $1 AND runner = $2`, [sessionID, runner])
          : sql.unsafe(
            `INSERT INTO ${table} (session_id, runner, data) VALUES ($1, $2, $3) ON CONFLICT (session_id) DO UPDATE SET runner = excluded.runner, data = excluded.data`,
            [sessionID, runner, JSON.stringify(status)]
          )
        return write.pipe(Effect.catchAllCause((cause) => Effect.logWarning(`the cluster's run statuses missed session ${sessionID}`, cause)))
      }),
      Effect.catchAllCause((cause) => Effect.logError("the cluster's run statuses stopped", cause)),
      Effect.forkScoped
    )
    // A replica that stops hands its runs over: their next owner writes them again.
    yield* Effect.addFinalizer(() => sql.unsafe(`DELETE FROM ${table} WHERE runner = $1`, [runner]).pipe(Effect.ignore))

    const seconds = Math.max(1, Math.ceil(lockExpirationMs / 1000))
    const live = () =>
      sql.unsafe<{ session_id: string; runner: string; data: string }>(
        `SELECT s.session_id, s.runner, s.data FROM ${table} s WHERE s.runner = $1 OR EXISTS (SELECT 1 FROM ${prefix}_runners r WHERE r.address = s.runner AND r.healthy AND r.last_heartbeat > NOW() - INTERVAL '${seconds} seconds')`,
        [runner]
      ).pipe(Effect.orDie)

    return {
      all: (local) =>
        live().pipe(
          Effect.map((found) =>
            mergeStatuses(
              found.flatMap((row) =>
                Option.match(decodeStatus(row.data), {
                  onNone: () => [],
                  onSome: (status) => [{ sessionID: row.session_id, runner: row.runner, status }]
                })
              ),
              local,
              runner
            )
          )
        )
    } satisfies RunStatusRegistryShape
  })
