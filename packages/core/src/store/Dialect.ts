import type * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"

// The few places where SQLite and PostgreSQL spell a query differently, as fragments for the `sql`
// template. `column` and `key` are fixed names in the store's code, never user input.

/** A top-level field of a JSON text column, as SQL text (NULL when missing or JSON null). */
export const jsonField = (sql: SqlClient.SqlClient, column: string, key: string): Fragment =>
  sql.literal(sql.onDialectOrElse({
    pg: () => `(${column}::jsonb ->> '${key}')`,
    orElse: () => `json_extract(${column}, '$.${key}')`
  }))

/** What `jsonField` gives for JSON `true`: SQLite's 1, PostgreSQL's text 'true'. */
export const jsonTrue = (sql: SqlClient.SqlClient): Fragment =>
  sql.literal(sql.onDialectOrElse({ pg: () => `'true'`, orElse: () => `1` }))

/** LIKE that ignores case as SQLite's does (for ASCII letters): ILIKE in PostgreSQL. */
export const caseInsensitiveLike = (sql: SqlClient.SqlClient): Fragment =>
  sql.literal(sql.onDialectOrElse({ pg: () => "ILIKE", orElse: () => "LIKE" }))
