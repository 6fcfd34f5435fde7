import type { BusEvent } from "@agent/domain"
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Effect, Layer, Schema, type Scope } from "effect"
import { openedFile, withBusyRetry } from "./Database.js"
import { sessionOf } from "./EventSession.js"

// The event log: what `agent serve` replicas on one database send their clients, in one order all
// of them agree on (docs/storage.md, "The event log"). Each replica appends the events its own bus publishes and
// reads everyone's back; a client's Last-Event-ID is a position in this log, good on any replica.
//
// The cursor is one global position, `pos`, given out from the '*' row of `event_log_head`, the
// first row an append updates. That row stays locked until the append commits, so the next append
// (from any process) gets its numbers only after this one is visible: positions are committed in
// their order, without holes (a rolled-back append gives its numbers back). A reader that has seen
// `pos` N has seen everything up to N, and `pos > N` can never skip a row committed later. The cost
// is that appends from all replicas take turns on that row; each append is one short statement
// per batch of events (a writer batches what its bus published while the previous append ran).

/** An event as the log holds it. */
export interface LoggedEvent {
  /** Its place in the log: the same on every replica, the `id` clients see. */
  readonly pos: number
  /** The session it is about (`EventSession.sessionOf`), and its number in that session's events (1, 2, ...). */
  readonly sessionID: string | undefined
  readonly seq: number | undefined
  readonly type: string
  readonly properties: unknown
}

const Row = Schema.Struct({
  pos: Schema.Number,
  session_id: Schema.NullOr(Schema.String),
  seq: Schema.NullOr(Schema.Number),
  type: Schema.String,
  data: Schema.parseJson()
})
const decodeRows = Schema.decodeUnknownSync(Schema.Array(Row))

/** Rows per INSERT: 6 parameters each stays far below both dialects' limits. */
const INSERT_CHUNK = 500

/** A head of the log after an append: `*` (the global position) or a session's, with its last number. */
interface Head {
  readonly stream: string
  readonly seq: number
}

/**
 * An append on PostgreSQL ($1 events, $2 channel, $3 their sessions, $4 types, $5 data, $6 time).
 * `head` takes the `*` row first: the sessions' heads and the rows are built from its result. The
 * notification is sent when the statement commits. It returns the heads, as the transaction's
 * statements do.
 */
const APPEND = `WITH head AS (
    UPDATE event_log_head SET seq = seq + $1 WHERE stream = '*' RETURNING stream, seq, pg_notify($2, seq::text)
  ),
  event AS (
    SELECT * FROM unnest($3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS e(session_id, type, data, ord)
  ),
  counted AS (
    SELECT session_id AS stream, count(*) AS n FROM event WHERE session_id IS NOT NULL GROUP BY session_id
  ),
  session_head AS (
    INSERT INTO event_log_head (stream, seq) SELECT counted.stream, counted.n FROM counted, head
    ON CONFLICT (stream) DO UPDATE SET seq = event_log_head.seq + excluded.seq RETURNING stream, seq
  ),
  logged AS (
    INSERT INTO event_log (pos, session_id, seq, type, data, time_created)
    SELECT head.seq - $1 + event.ord, event.session_id,
      CASE WHEN event.session_id IS NULL THEN NULL
        ELSE session_head.seq - counted.n + row_number() OVER (PARTITION BY event.session_id ORDER BY event.ord) END,
      event.type, event.data, $6
    FROM event CROSS JOIN head
      LEFT JOIN session_head ON session_head.stream = event.session_id
      LEFT JOIN counted ON counted.stream = event.session_id
  )
  SELECT stream, seq FROM head UNION ALL SELECT stream, seq FROM session_head`

/** The NOTIFY channel of a schema: replicas on one database but different schemas do not wake each other. */
export const channelOf = (schema: string): string => {
  const name = `agent_events_${schema}`
  // Channel names are identifiers: 63 bytes at most.
  return name.length <= 63 ? name : `agent_events_${schema.slice(0, 30)}_${hash(schema)}`
}

const hash = (text: string): string => {
  let h = 2166136261
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619) >>> 0
  return h.toString(36)
}

export interface EventLogShape {
  /**
   * Appends events in the order given and returns them numbered. On PostgreSQL the commit
   * notifies `channel`, waking the readers of every replica.
   */
  readonly append: (events: ReadonlyArray<BusEvent>) => Effect.Effect<ReadonlyArray<LoggedEvent>>
  /** The events after `pos`, in order, at most `limit` of them (and none past `upTo` when given). */
  readonly after: (pos: number, limit: number, upTo?: number) => Effect.Effect<ReadonlyArray<LoggedEvent>>
  /** The last position committed (0 for an empty log). */
  readonly head: () => Effect.Effect<number>
  /** Deletes the events logged before `before` (epoch ms); returns how many. Positions are never reused. */
  readonly prune: (before: number) => Effect.Effect<number>
  /** The PostgreSQL channel appends notify; undefined on SQLite (nothing to listen to there). */
  readonly channel: string | undefined
}

/** The log over the store's connection (the EventLog service's value, for layers that use it without the Tag). */
export const makeEventLog: Effect.Effect<EventLogShape, never, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const write = withBusyRetry(yield* openedFile)
  const channel = yield* sql.onDialectOrElse({
    pg: () =>
      write(sql<{ schema: string }>`SELECT current_schema() AS schema`).pipe(Effect.map(([row]) => channelOf(row?.schema ?? "public"))),
    orElse: () => Effect.succeed(undefined)
  })

  /** Each event's position and session number, from the heads an append left: `*` and each session's. */
  const numbered = (events: ReadonlyArray<BusEvent>, sessions: ReadonlyArray<string | undefined>, counts: Map<string, number>, heads: ReadonlyArray<Head>) => {
    const next = new Map<string, number>()
    let first = 1
    for (const head of heads) {
      if (head.stream === "*") first = Number(head.seq) - events.length + 1
      else next.set(head.stream, Number(head.seq) - counts.get(head.stream)! + 1)
    }
    return events.map((event, index): LoggedEvent => {
      const sessionID = sessions[index]
      let seq: number | undefined
      if (sessionID !== undefined) {
        seq = next.get(sessionID)!
        next.set(sessionID, seq + 1)
      }
      return { pos: first + index, sessionID, seq, type: event.type, properties: event.properties }
    })
  }

  /** SQLite: the head, the sessions' heads and the rows, in one transaction. */
  const appendInTransaction = (events: ReadonlyArray<BusEvent>, sessions: ReadonlyArray<string | undefined>, counts: Map<string, number>) =>
    sql.withTransaction(Effect.gen(function*() {
      // First: the row every append locks, so appends number and commit in turn.
      const global = yield* sql<Head>`UPDATE event_log_head SET seq = seq + ${events.length} WHERE stream = '*' RETURNING stream, seq`
      const heads = counts.size === 0 ? [] : yield* sql<Head>`INSERT INTO event_log_head ${
        sql.insert([...counts].map(([stream, seq]) => ({ stream, seq })))
      } ON CONFLICT (stream) DO UPDATE SET seq = event_log_head.seq + excluded.seq RETURNING stream, seq`
      const logged = numbered(events, sessions, counts, [...global, ...heads])
      const now = Date.now()
      for (let start = 0; start < logged.length; start += INSERT_CHUNK) {
        const rows = logged.slice(start, start + INSERT_CHUNK).map((event) => ({
          pos: event.pos,
          session_id: event.sessionID ?? null,
          seq: event.seq ?? null,
          type: event.type,
          data: JSON.stringify(event.properties),
          time_created: now
        }))
        yield* sql`INSERT INTO event_log ${sql.insert(rows)}`
      }
      return logged
    }))

  /**
   * PostgreSQL: the same in one statement, one round trip where a transaction takes six (appends
   * come several times a second from every replica). The sessions' heads and the rows are built
   * from the `*` row's update, so that row is locked before any other, as in the transaction.
   */
  const appendInOneStatement = (events: ReadonlyArray<BusEvent>, sessions: ReadonlyArray<string | undefined>, counts: Map<string, number>) =>
    sql.unsafe<Head>(APPEND, [
      events.length,
      channel,
      sessions.map((session) => session ?? null),
      events.map((event) => event.type),
      events.map((event) => JSON.stringify(event.properties)),
      Date.now()
    ]).pipe(Effect.map((heads) => numbered(events, sessions, counts, heads)))

  const append = Effect.fn("EventLog.append")(function*(events: ReadonlyArray<BusEvent>) {
    if (events.length === 0) return []
    const sessions = events.map(sessionOf)
    const counts = new Map<string, number>()
    for (const session of sessions) if (session !== undefined) counts.set(session, (counts.get(session) ?? 0) + 1)
    return yield* write(
      channel === undefined ? appendInTransaction(events, sessions, counts) : appendInOneStatement(events, sessions, counts)
    )
  })

  const after = (pos: number, limit: number, upTo?: number) =>
    write(
      upTo === undefined
        ? sql`SELECT pos, session_id, seq, type, data FROM event_log WHERE pos > ${pos} ORDER BY pos LIMIT ${limit}`
        : sql`SELECT pos, session_id, seq, type, data FROM event_log WHERE pos > ${pos} AND pos <= ${upTo} ORDER BY pos LIMIT ${limit}`
    ).pipe(
      Effect.map((rows) =>
        decodeRows(rows).map((row): LoggedEvent => ({
          pos: row.pos,
          sessionID: row.session_id ?? undefined,
          seq: row.seq ?? undefined,
          type: row.type,
          properties: row.data
        }))
      ),
      Effect.withSpan("EventLog.after")
    )

  const head = () =>
    write(sql<{ seq: number }>`SELECT seq FROM event_log_head WHERE stream = '*'`).pipe(Effect.map(([row]) => Number(row?.seq ?? 0)))

  const prune = Effect.fn("EventLog.prune")(function*(before: number) {
    return yield* write(sql.withTransaction(Effect.gen(function*() {
      // Taken first, as appends take it: a prune and an append never wait on each other's rows.
      yield* sql`UPDATE event_log_head SET seq = seq WHERE stream = '*'`
      const [count] = yield* sql<{ n: number }>`SELECT count(*) AS n FROM event_log WHERE time_created < ${before}`
      yield* sql`DELETE FROM event_log WHERE time_created < ${before}`
      // A deleted session's numbering is not needed any more; a live one keeps counting.
      yield* sql`DELETE FROM event_log_head WHERE stream <> '*' AND stream NOT IN (SELECT id FROM session)`
      return Number(count?.n ?? 0)
    })))
  })

  return { append, after, head, prune, channel }
})

export class EventLog extends Context.Tag("@agent/core/EventLog")<EventLog, EventLogShape>() {
  static readonly layer: Layer.Layer<EventLog, never, SqlClient.SqlClient> = Layer.effect(EventLog, makeEventLog)
}

/**
 * Calls `wake` whenever another process (or this one) commits events to the PostgreSQL log named by
 * `channel`, and after each (re)connection of the LISTEN connection, while the scope lasts. Loads
 * the PostgreSQL driver's side of it only when called.
 */
export const listen = (channel: string, wake: () => void): Effect.Effect<void, never, Scope.Scope | SqlClient.SqlClient> =>
  Effect.flatMap(Effect.promise(() => import("./EventLogListener.js")), (listener) => listener.listen(channel, wake))
