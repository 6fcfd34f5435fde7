import type * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import { Deferred, Effect, Exit, FiberId } from "effect"
import { MESSAGE_COLUMNS, MESSAGE_CONFLICT, PART_COLUMNS, PART_CONFLICT, type SessionRow, type Statements } from "./StoreRows.js"

// How the store writes. On SQLite a statement is a function call: each write runs as it comes.
// On PostgreSQL each statement is a round trip on the store's one connection, and a step writes its
// parts and messages one at a time (about seven a step, for every session of the process) and its
// usage once: the upserts and usage updates waiting at one moment go to the server as one statement
// (a group commit), and each caller still returns only once its own rows are committed. Every other
// write of the store takes its turn in the same line, so nothing overtakes a write issued before it:
// an upsert issued before a delete lands before it, as on one connection.

/** A row in the column order of its table's upsert (StoreRows.ts). */
export type Row = ReadonlyArray<unknown>
export type UpsertTable = "part" | "message"
/** A step's usage in the order of ADD_USAGE's parameters: session id, cost, five token counts, time. */
export type UsageRow = readonly [id: string, cost: number, input: number, output: number, reasoning: number, cacheRead: number, cacheWrite: number, time: number]
type Returned = SessionRow

type Write = <A, R>(effect: Effect.Effect<A, SqlError.SqlError, R>) => Effect.Effect<A, never, R>

export interface StoreWrites {
  /** Inserts or replaces rows of one table, returning once they are committed. */
  readonly upsert: (table: UpsertTable, rows: ReadonlyArray<Row>) => Effect.Effect<void>
  /** Adds a step's usage to its session and the session's ancestors; returns their rows, updated. */
  readonly addUsage: (usage: UsageRow) => Effect.Effect<ReadonlyArray<Returned>>
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

const usageAlone = (sql: SqlClient.SqlClient, statements: Statements, write: Write) => (usage: UsageRow) =>
  write(sql.unsafe<Returned>(statements.addUsage, usage))

/** SQLite: every write as it comes. */
export const direct = (sql: SqlClient.SqlClient, statements: Statements, write: Write): StoreWrites => ({
  upsert: upsertEach(sql, statements, write),
  addUsage: usageAlone(sql, statements, write),
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

const USAGE_TYPES = ["text", "float8", "bigint", "bigint", "bigint", "bigint", "bigint"]

const messagesFrom = (first: number) => `INSERT INTO message (${MESSAGE_COLUMNS}) SELECT * FROM ${unnest(MESSAGE_TYPES, first)} ${MESSAGE_CONFLICT}`
const partsFrom = (first: number) => `INSERT INTO part (${PART_COLUMNS}) SELECT * FROM ${unnest(PART_TYPES, first)} ${PART_CONFLICT}`
/**
 * The usage of several sessions: each session and its ancestors (`chain`, by the session it started
 * from) get the sum of what reached them, in one UPDATE that returns the rows for the events.
 */
const usageFrom = (first: number) => ({
  ctes: `usage (id, cost, input, output, reasoning, cache_read, cache_write) AS (SELECT * FROM ${unnest(USAGE_TYPES, first)}),
  chain (id, origin) AS (
    SELECT id, id FROM usage UNION ALL SELECT s.parent_id, c.origin FROM session s JOIN chain c ON s.id = c.id WHERE s.parent_id IS NOT NULL
  ),
  total AS (
    SELECT chain.id, sum(u.cost) AS cost, sum(u.input) AS input, sum(u.output) AS output, sum(u.reasoning) AS reasoning,
      sum(u.cache_read) AS cache_read, sum(u.cache_write) AS cache_write
    FROM chain JOIN usage u ON u.id = chain.origin GROUP BY chain.id
  )`,
  update: `UPDATE session SET cost = session.cost + total.cost, tokens_input = session.tokens_input + total.input,
    tokens_output = session.tokens_output + total.output, tokens_reasoning = session.tokens_reasoning + total.reasoning,
    tokens_cache_read = session.tokens_cache_read + total.cache_read, tokens_cache_write = session.tokens_cache_write + total.cache_write,
    time_updated = $${first + USAGE_TYPES.length}
  FROM total WHERE session.id = total.id RETURNING session.*`
})

/**
 * A group's rows as one statement and its parameters. Parts whose message is in the same statement
 * pass their foreign key: the check runs at the end of the statement, after the message's insert.
 */
const grouped = (messages: ReadonlyArray<Row>, parts: ReadonlyArray<Row>, usage: ReadonlyArray<UsageRow>) => {
  const params: Array<unknown> = []
  /** Adds a table's columns to the parameters; returns the number of the first. */
  const add = (rows: ReadonlyArray<Row>, width: number) => {
    const first = params.length + 1
    params.push(...columns(rows, width))
    return first
  }
  const inserts: Array<string> = []
  if (messages.length > 0) inserts.push(messagesFrom(add(messages, MESSAGE_TYPES.length)))
  if (parts.length > 0) inserts.push(partsFrom(add(parts, PART_TYPES.length)))
  if (usage.length === 0) {
    const text = inserts.length === 1 ? inserts[0]! : `WITH messages AS (${inserts[0]}) ${inserts[1]}`
    return { text, params }
  }
  const { ctes, update } = usageFrom(add(usage, USAGE_TYPES.length))
  params.push(Math.max(...usage.map((row) => row[7])))
  const writes = inserts.map((insert, index) => `, write${index} AS (${insert})`).join("")
  return { text: `WITH RECURSIVE ${ctes}${writes} ${update}`, params }
}

/** A session's row and its ancestors', nearest first, from the rows an update returned. */
const chainOf = (rows: ReadonlyArray<Returned>, id: string): ReadonlyArray<Returned> => {
  const byId = new Map(rows.map((row) => [row.id, row]))
  const chain: Array<Returned> = []
  for (let row = byId.get(id); row !== undefined; row = row.parent_id == null ? undefined : byId.get(row.parent_id)) chain.push(row)
  return chain
}

/** Two usages of one session as one (both reached the group before it was sent). */
const addUp = (a: UsageRow, b: UsageRow): UsageRow => [
  a[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5], a[6] + b[6], Math.max(a[7], b[7])
]

/** Rows as one array per column. */
const columns = (rows: ReadonlyArray<Row>, width: number): Array<Array<unknown>> => {
  const out = Array.from({ length: width }, () => new Array<unknown>(rows.length))
  rows.forEach((row, index) => {
    for (let column = 0; column < width; column++) out[column]![index] = row[column]
  })
  return out
}

type Waiter =
  | { readonly table: UpsertTable; readonly rows: ReadonlyArray<Row>; readonly done: Deferred.Deferred<ReadonlyArray<Returned>> }
  | { readonly table: "usage"; readonly usage: UsageRow; readonly done: Deferred.Deferred<ReadonlyArray<Returned>> }

/**
 * The writes that go in one statement. A row written twice keeps its last write and a session's
 * usages are added up (a statement may touch a row once).
 */
interface Group {
  readonly part: Map<unknown, Row>
  readonly message: Map<unknown, Row>
  readonly usage: Map<string, UsageRow>
  readonly waiters: Array<Waiter>
  size: number
}

const newGroup = (): Group => ({ part: new Map(), message: new Map(), usage: new Map(), waiters: [], size: 0 })

/**
 * PostgreSQL: one line of writes. The first upsert or usage to find no open group opens one and leads it:
 * it waits for the write before it, takes what joined meanwhile, and commits it all in one
 * statement. If that statement fails, each caller's rows are written alone, so a caller gets its own
 * result and one bad row does not fail the others.
 */
export const groupCommit = (sql: SqlClient.SqlClient, statements: Statements, write: Write): StoreWrites => {
  const alone = upsertEach(sql, statements, write)
  const addUsageAlone = usageAlone(sql, statements, write)
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

  /** A caller's writes in statements of their own, the caller given that result. */
  const writeAlone = (waiter: Waiter) =>
    Effect.exit(waiter.table === "usage" ? addUsageAlone(waiter.usage) : Effect.as(alone(waiter.table, waiter.rows), [])).pipe(
      Effect.flatMap((exit) => Deferred.done(waiter.done, exit))
    )

  const commit = (group: Group): Effect.Effect<unknown> => {
    const { waiters } = group
    if (group.size === 1) return writeAlone(waiters[0]!)
    const { params, text } = grouped([...group.message.values()], [...group.part.values()], [...group.usage.values()])
    return write(sql.unsafe<Returned>(text, params)).pipe(
      Effect.matchCauseEffect({
        onSuccess: (rows) =>
          Effect.forEach(waiters, (waiter) => Deferred.succeed(waiter.done, waiter.table === "usage" ? chainOf(rows, waiter.usage[0]) : []), {
            discard: true
          }),
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

  /** Puts a caller's writes in the open group, or opens one and leads it; returns once they are committed. */
  const join = (size: number, add: (group: Group, done: Waiter["done"]) => void): Effect.Effect<ReadonlyArray<Returned>> =>
    Effect.suspend(() => {
      const done = Deferred.unsafeMake<ReadonlyArray<Returned>>(FiberId.none)
      const joined = open !== undefined && open.size + size <= MAX_ROWS
      const group = joined ? open! : newGroup()
      group.size += size
      add(group, done)
      if (joined) return Deferred.await(done)
      open = group
      return lead(group, takeTurn()).pipe(Effect.zipRight(Deferred.await(done)))
    })

  const upsert = (table: UpsertTable, rows: ReadonlyArray<Row>): Effect.Effect<void> =>
    Effect.asVoid(join(rows.length, (group, done) => {
      group.waiters.push({ table, rows, done })
      for (const row of rows) group[table].set(row[0], row)
    }))

  const addUsage = (usage: UsageRow) =>
    join(1, (group, done) => {
      group.waiters.push({ table: "usage", usage, done })
      const before = group.usage.get(usage[0])
      group.usage.set(usage[0], before === undefined ? usage : addUp(before, usage))
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

  return { upsert, addUsage, write: ordered }
}
