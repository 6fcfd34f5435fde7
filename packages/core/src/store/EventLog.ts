import type { BusEvent } from "@agent/domain"
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Effect, Layer, Schema, type Scope } from "effect"
import { openedFile, withBusyRetry } from "./Database.js"
import { sessionOf } from "./EventSession.js"

// The event log: what `agent serve` replicas on one database send their clients, in one order all
// of them agree on (docs/storage.md, "The event log"). Each replica appends the events its own bus publishes and
// reads everyone's back; a client's Last-Event-ID is a position in this log, good on any replica.
//
// The cursor is one global position, `pos`, given out from the '*' row of `event_log_head` by the
// append's first statement. That row stays locked until the append commits, so the next append
// (from any process) gets its numbers only after this one is visible: positions are committed in
// their order, without holes (a rolled-back append gives its numbers back). A reader that has seen
// `pos` N has seen everything up to N, and `pos > N` can never skip a row committed later. The cost
// is that appends from all replicas take turns on that row; each append is one short transaction
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

  const append = Effect.fn("EventLog.append")(function*(events: ReadonlyArray<BusEvent>) {
    if (events.length === 0) return []
    const now = Date.now()
    const sessions = events.map(sessionOf)
    const counts = new Map<string, number>()
    for (const session of sessions) if (session !== undefined) counts.set(session, (counts.get(session) ?? 0) + 1)
    return yield* write(sql.withTransaction(Effect.gen(function*() {
      // First: the row every append locks, so appends number and commit in turn.
      const [global] = yield* sql<{ seq: number }>`UPDATE event_log_head SET seq = seq + ${events.length} WHERE stream = '*' RETURNING seq`
      const first = (global?.seq ?? events.length) - events.length + 1
      const next = new Map<string, number>()
      if (counts.size > 0) {
        const heads = yield* sql<{ stream: string; seq: number }>`INSERT INTO event_log_head ${
          sql.insert([...counts].map(([stream, seq]) => ({ stream, seq })))
        } ON CONFLICT (stream) DO UPDATE SET seq = event_log_head.seq + excluded.seq RETURNING stream, seq`
        for (const head of heads) next.set(head.stream, Number(head.seq) - counts.get(head.stream)! + 1)
      }
      const logged: Array<LoggedEvent> = events.map((event, index) => {
        const sessionID = sessions[index]
        let seq: number | undefined
        if (sessionID !== undefined) {
          seq = next.get(sessionID)!
          next.set(sessionID, seq + 1)
        }
        return { pos: first + index, sessionID, seq, type: event.type, properties: event.properties }
      })
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
      // Delivered when the transaction commits, not before.
      if (channel !== undefined) yield* sql`SELECT pg_notify(${channel}, ${String(first + events.length - 1)})`
      return logged
    })))
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
