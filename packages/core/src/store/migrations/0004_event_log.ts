import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

/**
 * The event log (EventLog.ts): the events clients follow sessions by, in one global order (`pos`)
 * and, for a session's events, that session's own contiguous sequence (`seq`). `event_log_head`
 * holds the last number given out per stream: `'*'` for `pos`, a session id for its `seq`. The
 * numbers come from that table rather than from AUTOINCREMENT so the same statements serve both
 * dialects, and so they never go back when old rows are pruned.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE event_log (
    pos INTEGER PRIMARY KEY,
    session_id TEXT,
    seq INTEGER,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    time_created INTEGER NOT NULL
  )`
  yield* sql`CREATE INDEX event_log_time ON event_log (time_created)`
  yield* sql`CREATE TABLE event_log_head (
    stream TEXT PRIMARY KEY,
    seq INTEGER NOT NULL
  )`
  yield* sql`INSERT INTO event_log_head (stream, seq) VALUES ('*', 0)`
})
