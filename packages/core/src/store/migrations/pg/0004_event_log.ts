import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

/**
 * ../0004_event_log.ts in PostgreSQL. `pos` is not an identity column: a sequence hands out numbers
 * in the order transactions ask, not the order they commit, so a reader past `pos` 7 could later
 * find a 6 committed behind it. The `'*'` row of `event_log_head` is updated by every append and
 * its row lock is held to commit, so numbers are given out and committed in the same order.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE event_log (
    pos BIGINT PRIMARY KEY,
    session_id TEXT,
    seq BIGINT,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    time_created BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX event_log_time ON event_log (time_created)`
  yield* sql`CREATE TABLE event_log_head (
    stream TEXT PRIMARY KEY,
    seq BIGINT NOT NULL
  )`
  yield* sql`INSERT INTO event_log_head (stream, seq) VALUES ('*', 0)`
})
