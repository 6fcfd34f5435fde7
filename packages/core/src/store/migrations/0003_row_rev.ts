import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

/**
 * A revision for every message and part row, set to a new random number by each write of its
 * data. A store that has decoded a row keeps it while the revision is unchanged, so it no
 * longer keeps the row's JSON text around to compare (that doubled what a loaded session held
 * in memory). Random rather than counted: a row deleted and written again under the same id
 * (an import) must not meet its old revision in another process's cache.
 *
 * The store sets the revision itself; the triggers give one to writes that do not (an older
 * version of the runtime still running against this file, a hand-made fix in the sqlite3 shell),
 * so no cache keeps serving a row someone else changed.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE message ADD COLUMN rev INTEGER NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE part ADD COLUMN rev INTEGER NOT NULL DEFAULT 0`
  // 53 bits, the integers a JavaScript number holds exactly
  const fresh = "random() & 9007199254740991"
  for (const table of ["message", "part"]) {
    yield* sql.unsafe(`CREATE TRIGGER ${table}_rev_on_update AFTER UPDATE OF data ON ${table}
      WHEN NEW.rev = OLD.rev BEGIN UPDATE ${table} SET rev = ${fresh} WHERE id = NEW.id; END`)
    yield* sql.unsafe(`CREATE TRIGGER ${table}_rev_on_insert AFTER INSERT ON ${table}
      WHEN NEW.rev = 0 BEGIN UPDATE ${table} SET rev = ${fresh} WHERE id = NEW.id; END`)
  }
})
