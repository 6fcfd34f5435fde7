import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

/**
 * The files each session changed (children included), kept after every run, revert and
 * unrevert: one JSON list per session of `{file, status, additions, deletions, before, after}`
 * with content ids into the snapshot store (the texts stay in the store, not in SQLite). The
 * totals live in the session row's `summary` column.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE session_diff (
    session_id TEXT PRIMARY KEY REFERENCES session(id) ON DELETE CASCADE,
    data TEXT NOT NULL,
    time_updated INTEGER NOT NULL
  )`
})
