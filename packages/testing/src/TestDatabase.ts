import { Effect, type Scope } from "effect"
import * as Pg from "pg"
import type { Sandbox } from "./TestInstance.js"

// The two backends of the store in tests: a SQLite file in the test's sandbox, or a fresh schema
// on the tests' PostgreSQL server (AGENT_TEST_DATABASE_URL, started by scripts/test/postgres-setup.ts).

export type Backend = "sqlite" | "postgres"

/** The tests' PostgreSQL server, if there is one. */
export const serverUrl = (): string | undefined => process.env.AGENT_TEST_DATABASE_URL || undefined

/**
 * Whether the Postgres tests run: where a server is set up, and always in CI (where a missing
 * server is then an error, not a skip). Elsewhere `notRunReason` says why they did not.
 */
export const postgresRuns = (): boolean => serverUrl() !== undefined || Boolean(process.env.CI)

export const notRunReason =
  "no PostgreSQL for the tests: install postgresql (initdb, pg_ctl) or set AGENT_TEST_DATABASE_URL; the Postgres store tests did not run"

/** The backends the store tests run on here: both, or SQLite alone where `postgresRuns` is false. */
export const backends = (): ReadonlyArray<Backend> => (postgresRuns() ? ["sqlite", "postgres"] : ["sqlite"])

/** `url` whose connections start with `setting` (PostgreSQL's `options` startup parameter). */
export const withSetting = (url: string, setting: string): string => {
  const parsed = new URL(url)
  const options = parsed.searchParams.get("options")
  parsed.searchParams.set("options", options ? `${options} -c ${setting}` : `-c ${setting}`)
  return parsed.toString()
}

/** A name no other test of any worker uses, for a schema or a database. */
const freshName = () => `t_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 10)}`

/** The schema a `freshPostgres` URL's connections use. */
export const schemaOf = (url: string) => /search_path=(\S+)/.exec(new URL(url).searchParams.get("options") ?? "")?.[1]

/**
 * A new empty schema on the test server, as a URL whose connections use it (`search_path`): each
 * test gets a database of its own for a few milliseconds instead of a CREATE DATABASE. Dropped
 * when the scope closes.
 */
export const freshPostgres: Effect.Effect<string, never, Scope.Scope> = Effect.acquireRelease(
  Effect.promise(async () => {
    const server = serverUrl()
    if (!server) throw new Error(notRunReason)
    const schema = freshName()
    await query(server, `CREATE SCHEMA ${schema}`)
    return { schema, url: withSetting(server, `search_path=${schema}`) }
  }),
  ({ schema }) => Effect.promise(() => query(serverUrl()!, `DROP SCHEMA IF EXISTS ${schema} CASCADE`)).pipe(Effect.ignore)
).pipe(Effect.map(({ url }) => url))

/**
 * Where a test's store lives on `backend`: the SQLite file `name` in the sandbox, or a fresh
 * PostgreSQL schema (the same target opened twice is the same database).
 */
export const target = (backend: Backend, box: Sandbox, name = "home/agent.db"): Effect.Effect<string, never, Scope.Scope> =>
  backend === "sqlite" ? Effect.sync(() => box.path(name)) : freshPostgres

/**
 * A new empty database on the test server, as a URL, dropped when the scope closes. For clusters:
 * their shard locks are advisory locks, numbered by shard whatever the cluster's table prefix, and
 * advisory locks are per database, so two clusters in schemas of one database would contend.
 */
export const freshPostgresDatabase: Effect.Effect<string, never, Scope.Scope> = Effect.acquireRelease(
  Effect.promise(async () => {
    const server = serverUrl()
    if (!server) throw new Error(notRunReason)
    const name = freshName()
    await query(server, `CREATE DATABASE ${name}`)
    const url = new URL(server)
    url.pathname = `/${name}`
    return { name, url: url.toString() }
  }),
  ({ name }) => Effect.promise(() => query(serverUrl()!, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).pipe(Effect.ignore)
).pipe(Effect.map(({ url }) => url))

/** Runs one statement on the database at `url` (a test's own, from `freshPostgres` or `freshPostgresDatabase`). */
export const query = async <Row extends Record<string, unknown>>(url: string, text: string, params: ReadonlyArray<unknown> = []): Promise<ReadonlyArray<Row>> => {
  const client = new Pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<Row>(text, [...params])).rows
  } finally {
    await client.end()
  }
}

/** Runs one statement on the test server as its superuser, outside any test's schema (pg_stat_activity, pg_terminate_backend). */
export const adminQuery = <Row extends Record<string, unknown>>(text: string, params: ReadonlyArray<unknown> = []): Effect.Effect<ReadonlyArray<Row>> =>
  Effect.promise(async () => {
    const server = serverUrl()
    if (!server) throw new Error(notRunReason)
    return query<Row>(server, text, params)
  })
