import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

/** ../0002_session_diff.ts in PostgreSQL: one JSON list of changed files per session. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE session_diff (
    session_id TEXT PRIMARY KEY REFERENCES session(id) ON DELETE CASCADE,
    data TEXT NOT NULL,
    time_updated BIGINT NOT NULL
  )`
})
