import initial from "./migrations/0001_initial.js"
import sessionDiff from "./migrations/0002_session_diff.js"
import rowRev from "./migrations/0003_row_rev.js"
import eventLog from "./migrations/0004_event_log.js"
import pgInitial from "./migrations/pg/0001_initial.js"
import pgSessionDiff from "./migrations/pg/0002_session_diff.js"
import pgRowRev from "./migrations/pg/0003_row_rev.js"
import pgEventLog from "./migrations/pg/0004_event_log.js"

// The migrations of both dialects, bundled as code (not read from a folder) so a bundled CLI still
// has them. Each SQLite migration has a PostgreSQL twin under the same id (migrations/pg/): a new
// migration is added to both records (test/store/Migrations.test.ts checks that the ids match).

export const sqlite = { "0001_initial": initial, "0002_session_diff": sessionDiff, "0003_row_rev": rowRev, "0004_event_log": eventLog }
export const postgres = { "0001_initial": pgInitial, "0002_session_diff": pgSessionDiff, "0003_row_rev": pgRowRev, "0004_event_log": pgEventLog }

/** The newest migration id this version knows. */
export const latestKnown = Math.max(...Object.keys(sqlite).map((key) => Number.parseInt(key, 10)))
