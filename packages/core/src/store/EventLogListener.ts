import type * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Option, Redacted, type Scope } from "effect"
import * as Pg from "pg"

// The LISTEN side of the event log on PostgreSQL (EventLog.listen loads this file, so pg is loaded
// only where a PostgreSQL store is). LISTEN needs a connection of its own: the store's client has
// one connection, which transactions take turns on. @effect/sql-pg's `listen` has one too, but it
// swallows the connection's errors and never reconnects, so a restarted server or a terminated
// backend would leave a replica deaf; this one reconnects, and says so.

/** The name the connection gives PostgreSQL (pg_stat_activity.application_name). */
export const APPLICATION_NAME = "agent events"

/** How long to wait before connecting again after the n-th failure in a row. */
const backoff = (failures: number) => Math.min(100 * 2 ** Math.max(0, failures - 1), 5_000)

/** The store's connection settings: its URL (with its search_path, so the same schema), or its parts. */
const connectionOf = (client: PgClient.PgClient): Pg.ClientConfig => {
  const config = client.config
  const base: Pg.ClientConfig = config.url
    ? { connectionString: Redacted.value(config.url) }
    : {
      ...(config.host ? { host: config.host } : {}),
      ...(config.port ? { port: config.port } : {}),
      ...(config.username ? { user: config.username } : {}),
      ...(config.password ? { password: Redacted.value(config.password) } : {}),
      ...(config.database ? { database: config.database } : {})
    }
  return { ...base, application_name: APPLICATION_NAME, keepAlive: true, connectionTimeoutMillis: 10_000 }
}

/** Where the connection stands across reconnects: failures in a row since the last good LISTEN. */
interface ListenState {
  failures: number
}

/** One connection's life: connect, LISTEN, call `wake` (to catch up) and on each notification; fails when it drops. */
const listenOnce = (settings: Pg.ClientConfig, channel: string, wake: () => void, state: ListenState) =>
  Effect.scoped(Effect.gen(function*() {
    const client = new Pg.Client(settings)
    const dropped = new Promise<Error>((resolve) => {
      client.on("error", (error) => resolve(error))
      client.on("end", () => resolve(new Error("the connection ended")))
    })
    yield* Effect.acquireRelease(
      Effect.tryPromise({ try: () => client.connect(), catch: (error) => error as Error }),
      () => Effect.promise(() => client.end().catch(() => undefined)).pipe(Effect.timeoutOption("1 second"))
    )
    client.on("notification", (message) => {
      if (message.channel === channel) wake()
    })
    yield* Effect.tryPromise({ try: () => client.query(`LISTEN ${Pg.escapeIdentifier(channel)}`), catch: (error) => error as Error })
    if (state.failures > 0) yield* Effect.logInfo(`event log: listening on ${channel} again`)
    state.failures = 0
    // Whatever was committed while no connection listened is read now.
    wake()
    return yield* Effect.flatMap(Effect.promise(() => dropped), Effect.fail)
  }))

/**
 * Calls `wake` on every NOTIFY of `channel` and after every (re)connection, for as long as the
 * scope lasts, on a connection of its own with the settings of the store's client.
 */
export const listen = (channel: string, wake: () => void): Effect.Effect<void, never, Scope.Scope | SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const client = yield* Effect.serviceOption(PgClient.PgClient)
    if (Option.isNone(client)) return yield* Effect.dieMessage("the event log's LISTEN needs the PostgreSQL client of the store")
    const settings = connectionOf(client.value)
    const state: ListenState = { failures: 0 }
    yield* Effect.gen(function*() {
      for (;;) {
        const error = yield* Effect.flip(listenOnce(settings, channel, wake, state))
        state.failures++
        const message = error instanceof Error ? error.message : String(error)
        if (state.failures === 1) yield* Effect.logWarning(`event log: the LISTEN connection was lost (${message}); reconnecting`)
        yield* Effect.sleep(backoff(state.failures))
      }
    }).pipe(Effect.catchAllCause(Effect.logError), Effect.forkScoped)
  })
