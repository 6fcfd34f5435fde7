import type * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import { Deferred, Effect, Exit, FiberId } from "effect"
import { MESSAGE_COLUMNS, MESSAGE_CONFLICT, PART_COLUMNS, PART_CONFLICT, type Statements } from "./StoreRows.js"

// How the store writes. On SQLite a statement is a function call: each write runs as it comes.
// On PostgreSQL each statement is a round trip on the store's one connection, and a step writes its
// parts and messages one at a time (about seven a step, for every session of the process): the
// upserts waiting at one moment go to the server as one statement (a group commit), and each caller
// still returns only once its own rows are committed. Every other write of the store takes its turn
// in the same line, so nothing overtakes a write issued before it: an upsert issued before a delete
// lands before it, as on one connection.

/** A row in the column order of its table's upsert (StoreRows.ts). */
export type Row = ReadonlyArray<unknown>
export type UpsertTable = "part" | "message"

type Write = <A, R>(effect: Effect.Effect<A, SqlError.SqlError, R>) => Effect.Effect<A, never, R>

export interface StoreWrites {
  /** Inserts or replaces rows of one table, returning once they are committed. */
  readonly upsert: (table: UpsertTable, rows: ReadonlyArray<Row>) => Effect.Effect<void>
  /** Runs any other write after the writes issued before it; a failure is a defect naming the database. */
  readonly write: Write
}

const statementOf = (statements: Statements, table: UpsertTable) =>
  table === "part" ? statements.partUpsert : statements.messageUpsert

/** Each table's rows one statement each, in a transaction when there are several. */
const upsertEach = (sql: SqlClient.SqlClient, statements: Statements, write: Write) =>
(table: UpsertTable, rows: ReadonlyArray<Row>): Effect.Effect<void> => {
  const text = statementOf(statements, table)
  if (rows.length === 1) return Effect.asVoid(write(sql.unsafe(text, rows[0]!)))
  return write(sql.withTransaction(Effect.forEach(rows, (row) => sql.unsafe(text, row), { discard: true })))
}

/** SQLite: every write as it comes. */
export const direct = (sql: SqlClient.SqlClient, statements: Statements, write: Write): StoreWrites => ({
  upsert: upsertEach(sql, statements, write),
  write
})

// --- PostgreSQL: group commit ------------------------------------------------------------------

/** Rows per grouped statement at most; more wait for the next one. */
const MAX_ROWS = 256

const PART_TYPES = ["text", "text", "text", "text", "text", "text", "text", "bigint"]
const MESSAGE_TYPES = ["text", "text", "text", "bigint", "text", "bigint"]

/** `unnest($first::type[], ...)`: the rows of a table passed as one array per column. */
const unnest = (types: ReadonlyArray<string>, first: number) =>
  `unnest(${types.map((type, index) => `$${first + index}::${type}[]`).join(", ")})`

const MESSAGES = `INSERT INTO message (${MESSAGE_COLUMNS}) SELECT * FROM ${unnest(MESSAGE_TYPES, 1)} ${MESSAGE_CONFLICT}`
const partsFrom = (first: number) => `INSERT INTO part (${PART_COLUMNS}) SELECT * FROM ${unnest(PART_TYPES, first)} ${PART_CONFLICT}`
/**
 * Messages and parts in one statement. A part whose message is in the same statement passes its
 * foreign key: the check runs at the end of the statement, after the message's insert.
 */
const GROUPED = {
  parts: partsFrom(1),
  messages: MESSAGES,
  both: `WITH messages AS (${MESSAGES}) ${partsFrom(MESSAGE_TYPES.length + 1)}`
}

/** Rows as one array per column. */
const columns = (rows: ReadonlyArray<Row>, width: number): Array<Array<unknown>> => {
  const out = Array.from({ length: width }, () => new Array<unknown>(rows.length))
  rows.forEach((row, index) => {
    for (let column = 0; column < width; column++) out[column]![index] = row[column]
  })
  return out
}

interface Waiter {
  readonly table: UpsertTable
  readonly rows: ReadonlyArray<Row>
  readonly done: Deferred.Deferred<void>
}

/** The upserts that go in one statement. A row written twice keeps its last write (a statement may touch a row once). */
interface Group {
  readonly part: Map<unknown, Row>
  readonly message: Map<unknown, Row>
  readonly waiters: Array<Waiter>
  size: number
}

const newGroup = (): Group => ({ part: new Map(), message: new Map(), waiters: [], size: 0 })

/**
 * PostgreSQL: one line of writes. The first upsert to find no open group opens one and leads it:
 * it waits for the write before it, takes what joined meanwhile, and commits it all in one
 * statement. If that statement fails, each caller's rows are written alone, so a caller gets its own
 * result and one bad row does not fail the others.
 */
export const groupCommit = (sql: SqlClient.SqlClient, statements: Statements, write: Write): StoreWrites => {
  const alone = upsertEach(sql, statements, write)
  /** Completes when the last write in line is done. */
  let last: Deferred.Deferred<void> = Deferred.unsafeMake<void>(FiberId.none)
  Deferred.unsafeDone(last, Exit.void)
  /** The group still taking rows: its leader has not sent it yet. */
  let open: Group | undefined

  /** A place at the end of the line: the write before it, and the signal this one gives when done. */
  const takeTurn = () => {
    const before = last
    const done = Deferred.unsafeMake<void>(FiberId.none)
    last = done
    return { before, done }
  }

  /** A caller's rows in statements of their own, the caller given that result. */
  const writeAlone = (waiter: Waiter) =>
    Effect.exit(alone(waiter.table, waiter.rows)).pipe(Effect.flatMap((exit) => Deferred.done(waiter.done, exit)))

  const commit = (group: Group): Effect.Effect<unknown> => {
    const { waiters } = group
    if (group.size === 1) return writeAlone(waiters[0]!)
    const parts = [...group.part.values()]
    const messages = [...group.message.values()]
    const params = [
      ...(messages.length > 0 ? columns(messages, MESSAGE_TYPES.length) : []),
      ...(parts.length > 0 ? columns(parts, PART_TYPES.length) : [])
    ]
    const text = parts.length === 0 ? GROUPED.messages : messages.length === 0 ? GROUPED.parts : GROUPED.both
    return write(sql.unsafe(text, params)).pipe(
      Effect.matchCauseEffect({
        onSuccess: () => Effect.forEach(waiters, (waiter) => Deferred.succeed(waiter.done, undefined), { discard: true }),
        onFailure: () => Effect.forEach(waiters, writeAlone, { discard: true })
      })
    )
  }

  const lead = (group: Group, turn: ReturnType<typeof takeTurn>) =>
    Deferred.await(turn.before).pipe(
      // Writers issuing in this same moment join before the group is sent.
      Effect.zipRight(Effect.yieldNow()),
      Effect.zipRight(Effect.suspend(() => {
        if (open === group) open = undefined
        return commit(group)
      })),
      Effect.ensuring(Deferred.succeed(turn.done, undefined)),
      // The group holds other callers' rows: it is sent even if its leader is interrupted.
      Effect.uninterruptible
    )

  const upsert = (table: UpsertTable, rows: ReadonlyArray<Row>): Effect.Effect<void> =>
    Effect.suspend(() => {
      const done = Deferred.unsafeMake<void>(FiberId.none)
      const waiter: Waiter = { table, rows, done }
      const joined = open !== undefined && open.size + rows.length <= MAX_ROWS
      const group = joined ? open! : newGroup()
      group.waiters.push(waiter)
      group.size += rows.length
      for (const row of rows) group[table].set(row[0], row)
      if (joined) return Deferred.await(done)
      open = group
      return lead(group, takeTurn()).pipe(Effect.zipRight(Deferred.await(done)))
    })

  const ordered: Write = (effect) =>
    Effect.suspend(() => {
      // Upserts issued after this write go after it.
      open = undefined
      const turn = takeTurn()
      return Deferred.await(turn.before).pipe(
        Effect.zipRight(write(effect)),
        // Its turn passes only once the writes before it are done, even if this one never ran.
        Effect.ensuring(Deferred.await(turn.before).pipe(Effect.zipRight(Deferred.succeed(turn.done, undefined))))
      )
    })

  return { upsert, write: ordered }
}
