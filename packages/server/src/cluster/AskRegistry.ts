// The asks waiting for a person on every replica (permission asks, questions), in a table of the
// cluster's database: any replica lists them, and a reply finds the session, whose entity carries
// it to the replica where the ask waits. The owning replica writes its rows from its bus.
import { Bus } from "@agent/core"
import { PermissionRequest, QuestionRequest } from "@agent/domain"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Schedule, Schema, Stream } from "effect"

type Kind = "permission" | "question"

export interface AskRegistryShape {
  readonly permissions: () => Effect.Effect<ReadonlyArray<PermissionRequest>>
  readonly questions: () => Effect.Effect<ReadonlyArray<QuestionRequest>>
  /** The session an ask belongs to and the replica where it waits (`host:port`), if it is pending anywhere. */
  readonly whereIs: (kind: Kind, requestID: string) => Effect.Effect<{ readonly sessionID: string; readonly runner: string } | undefined>
}

const decodePermission = Schema.decodeUnknownOption(Schema.parseJson(PermissionRequest))
const decodeQuestion = Schema.decodeUnknownOption(Schema.parseJson(QuestionRequest))

/** Two replicas starting at once race on the catalog (42P07, 23505): tried again. */
const createTable = (sql: SqlClient.SqlClient, table: string) =>
  sql.unsafe(
    `CREATE TABLE IF NOT EXISTS ${table} (id TEXT PRIMARY KEY, kind TEXT NOT NULL, session_id TEXT NOT NULL, runner TEXT NOT NULL, data TEXT NOT NULL)`
  ).pipe(Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.intersect(Schedule.recurs(5)))), Effect.orDie)

/** Forgets a session's asks: a new owner took it over, so they died with the old one. */
export const forget = (sql: SqlClient.SqlClient, prefix: string, sessionID: string) =>
  sql.unsafe(`DELETE FROM ${prefix}_asks WHERE session_id = $1`, [sessionID]).pipe(
    Effect.asVoid,
    Effect.catchAllCause((cause) => Effect.logWarning(`could not forget the asks of session ${sessionID}`, cause))
  )

export const make = (prefix: string, runner: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const bus = yield* Bus
    const table = `${prefix}_asks`
    yield* createTable(sql, table)

    const put = (kind: Kind, id: string, sessionID: string, data: unknown) =>
      sql.unsafe(
        `INSERT INTO ${table} (id, kind, session_id, runner, data) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO UPDATE SET data = excluded.data, runner = excluded.runner`,
        [id, kind, sessionID, runner, JSON.stringify(data)]
      )
    const remove = (id: string) => sql.unsafe(`DELETE FROM ${table} WHERE id = $1`, [id])

    // Only asks, replies and rejections: a handful per run, not per token.
    const events = yield* bus.subscribe({
      types: ["permission.asked", "permission.replied", "question.asked", "question.replied", "question.rejected"]
    })
    yield* events.pipe(
      Stream.runForEach((event) => {
        const write = event.type === "permission.asked"
          ? put("permission", event.properties.id, event.properties.sessionID, event.properties)
          : event.type === "question.asked"
          ? put("question", event.properties.id, event.properties.sessionID, event.properties)
          : remove(event.properties.requestID)
        return write.pipe(Effect.catchAllCause((cause) => Effect.logWarning(`the cluster's ask registry missed ${event.type}`, cause)))
      }),
      Effect.catchAllCause((cause) => Effect.logError("the cluster's ask registry stopped", cause)),
      Effect.forkScoped
    )
    // A replica that stops takes its asks with it.
    yield* Effect.addFinalizer(() => sql.unsafe(`DELETE FROM ${table} WHERE runner = $1`, [runner]).pipe(Effect.ignore))

    const rows = (kind: Kind) =>
      sql.unsafe<{ data: string }>(`SELECT data FROM ${table} WHERE kind = $1 ORDER BY id`, [kind]).pipe(Effect.orDie)

    return {
      permissions: () =>
        rows("permission").pipe(Effect.map((found) => found.flatMap((row) => decodePermission(row.data).pipe((o) => o._tag === "Some" ? [o.value] : [])))),
      questions: () =>
        rows("question").pipe(Effect.map((found) => found.flatMap((row) => decodeQuestion(row.data).pipe((o) => o._tag === "Some" ? [o.value] : [])))),
      whereIs: (kind, requestID) =>
        sql.unsafe<{ session_id: string; runner: string }>(`SELECT session_id, runner FROM ${table} WHERE kind = $1 AND id = $2`, [kind, requestID]).pipe(
          Effect.map((found) => found[0] === undefined ? undefined : { sessionID: found[0].session_id, runner: found[0].runner }),
          Effect.orDie
        )
    } satisfies AskRegistryShape
  })
