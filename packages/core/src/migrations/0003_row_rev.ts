import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

/**
 * A revision for every message and part row, set to a new random number by each write of its
 * data. A store that has decoded a row keeps it while the revision is unchanged, so it no
 * longer keeps the row's JSON text around to compare (that doubled what a loaded session held
 * in memory). Random rather than counted: a row deleted and written again under the same id
 * (an import) must not meet its old revision in another process's cache.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE message ADD COLUMN rev INTEGER NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE part ADD COLUMN rev INTEGER NOT NULL DEFAULT 0`
})
