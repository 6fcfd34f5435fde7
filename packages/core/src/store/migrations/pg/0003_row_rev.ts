import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

/**
 * ../0003_row_rev.ts in PostgreSQL: a revision per message and part row, and triggers that give a
 * new random one to writes that do not set it (psql, an older runtime). Here the triggers run
 * BEFORE the write and set NEW.rev, where SQLite's update the row again after it.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE message ADD COLUMN rev BIGINT NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE part ADD COLUMN rev BIGINT NOT NULL DEFAULT 0`
  // 53 bits, the integers a JavaScript number holds exactly
  yield* sql.unsafe(`CREATE FUNCTION agent_fresh_rev() RETURNS trigger LANGUAGE plpgsql AS $body$
    BEGIN NEW.rev := floor(random() * 9007199254740992)::bigint; RETURN NEW; END $body$`)
  for (const table of ["message", "part"]) {
    yield* sql.unsafe(`CREATE TRIGGER ${table}_rev_on_update BEFORE UPDATE OF data ON ${table}
      FOR EACH ROW WHEN (NEW.rev = OLD.rev) EXECUTE FUNCTION agent_fresh_rev()`)
    yield* sql.unsafe(`CREATE TRIGGER ${table}_rev_on_insert BEFORE INSERT ON ${table}
      FOR EACH ROW WHEN (NEW.rev = 0) EXECUTE FUNCTION agent_fresh_rev()`)
  }
})
