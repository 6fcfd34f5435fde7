// The cluster's runner storage (SqlRunnerStorage) keeps its shard locks on one reserved connection
// and, when shards move, releases them from one fiber per shard at once: several queries on one
// `pg` client, which pg 8 queues with a DeprecationWarning at every replica start ("Calling
// client.query() when the client is already executing a query", to be an error in pg 9). The
// SqlClient given to it here hands out reserved connections that run one query at a time: the same
// order pg's queue gave, without relying on it.
import type * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlConnection from "@effect/sql/SqlConnection"
import { Effect } from "effect"

/** A connection whose queries wait for the one before (streams are not used on the lock connection). */
export const serial = (connection: SqlConnection.Connection): Effect.Effect<SqlConnection.Connection> =>
  Effect.map(Effect.makeSemaphore(1), (turn): SqlConnection.Connection => {
    const one = turn.withPermits(1)
    return {
      execute: (sql, params, transformRows) => one(connection.execute(sql, params, transformRows)),
      executeRaw: (sql, params) => one(connection.executeRaw(sql, params)),
      executeValues: (sql, params) => one(connection.executeValues(sql, params)),
      executeUnprepared: (sql, params, transformRows) => one(connection.executeUnprepared(sql, params, transformRows)),
      executeStream: (sql, params, transformRows) => connection.executeStream(sql, params, transformRows)
    }
  })

/** `sql` with `reserve` giving serial connections; every other statement goes through `sql` as before. */
export const withSerialReserve = (sql: SqlClient.SqlClient): SqlClient.SqlClient => {
  const client: SqlClient.SqlClient = Object.assign(
    ((...args: Array<unknown>) => (sql as unknown as (...args: Array<unknown>) => unknown)(...args)) as unknown as SqlClient.SqlClient,
    sql,
    {
      reserve: Effect.flatMap(sql.reserve, serial),
      // Without row transforms (as the runner storage asks) the client is this one, serial reserve kept.
      withoutTransforms: () => sql.withoutTransforms() === sql ? client : withSerialReserve(sql.withoutTransforms())
    }
  )
  return client
}
