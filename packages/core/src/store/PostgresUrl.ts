import type * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import { Effect } from "effect"

// What the rest of the store needs to know about PostgreSQL without loading its driver (pg is
// loaded only when a URL is configured, see Database.layerTarget): URLs, errors, the connection.

/** Whether a database target is a PostgreSQL URL rather than a SQLite file name. */
export const isUrl = (target: string): boolean => /^postgres(ql)?:\/\//i.test(target)

/** The URL without its password or parameters, for messages: `postgres://user@host:5432/db`. */
export const label = (url: string): string => {
  try {
    const parsed = new URL(url)
    const user = parsed.username ? `${decodeURIComponent(parsed.username)}@` : ""
    return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname}`
  } catch {
    return "the PostgreSQL URL"
  }
}

/** What is wrong with a URL before any connection is tried, or undefined. */
export const urlProblem = (url: string): string | undefined => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return `not a valid URL: ${JSON.stringify(url.replace(/:[^:@/]*@/, ":***@"))} (expected postgres://user:password@host:5432/database)`
  }
  if (!isUrl(url)) return `${parsed.protocol} is not a PostgreSQL URL (expected postgres:// or postgresql://)`
  if (!parsed.hostname && !parsed.searchParams.get("host")) return "the URL names no host (expected postgres://user:password@host:5432/database)"
  return undefined
}

/** The PostgreSQL error code (SQLSTATE) or Node's socket error code of a failure, at any depth. */
export const errorCode = (error: unknown): string | undefined => {
  for (let current = error, depth = 0; current && depth < 4; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === "string") return code
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

const innermostMessage = (error: unknown): string => {
  let message = error instanceof Error ? error.message : String(error)
  for (let current = error, depth = 0; current && depth < 4; depth++) {
    const text = (current as { message?: unknown }).message
    if (typeof text === "string" && text.trim() !== "") message = text.trim()
    current = (current as { cause?: unknown }).cause
  }
  return message
}

/** A serialization failure or deadlock: the statement may be run again (what SQLITE_BUSY is to the file). */
export const isRetryable = (error: unknown): boolean => {
  const code = errorCode(error)
  return code === "40001" || code === "40P01" || code === "55P03"
}

/** Why the server could not be used, in words that name the problem. */
export const describe = (url: string, error: unknown): string => {
  const code = errorCode(error)
  const message = innermostMessage(error)
  let host = "the server"
  try {
    host = new URL(url).host || host
  } catch {
    // label() already says the URL is unreadable
  }
  switch (code) {
    case "ECONNREFUSED":
      return `no PostgreSQL server answers at ${host} (connection refused)`
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `the host of ${host} cannot be resolved (${code})`
    case "ETIMEDOUT":
      return `connecting to ${host} timed out`
    case "28P01":
    case "28000":
      return `authentication failed: ${message}`
    case "3D000":
      return `${message} (create it first: createdb, or CREATE DATABASE)`
    case "42501":
      return `permission denied: ${message}`
    case "55P03":
      return `another session holds a lock on the data past the lock timeout (${message}); gave up after retrying`
  }
  if (/timed out/i.test(message)) return `connecting to ${host} timed out`
  return message
}

/** `postgres://user@host:port/db` of the connection, for messages (from the server, so it is what is open). */
export const openedLabel = (sql: SqlClient.SqlClient): Effect.Effect<string, SqlError.SqlError> =>
  sql<{ username: string; db: string; host: string | null; port: number | null }>`
    SELECT current_user AS username, current_database() AS db, host(inet_server_addr()) AS host, inet_server_port() AS port`.pipe(
    Effect.map(([row]) => `postgres://${row?.username}@${row?.host ?? "localhost"}${row?.port ? `:${row.port}` : ""}/${row?.db}`)
  )

/** Whether every transaction of the connection is read-only (opened by `layerUrlReadOnly`). */
export const isReadOnly = (sql: SqlClient.SqlClient): Effect.Effect<boolean, SqlError.SqlError> =>
  sql<{ transaction_read_only: string }>`SHOW transaction_read_only`.pipe(Effect.map(([row]) => row?.transaction_read_only === "on"))
