// One cluster per database. @effect/cluster numbers a shard's advisory lock by the shard alone
// (1000000 × (group + 1) + shard, whatever `cluster.prefix` is), and advisory locks belong to a
// database: a second cluster on the same database, under another prefix, would find every shard
// lock taken by the first and never run a session. Each replica holds a claim for its cluster's
// life, a shared advisory lock keyed by its prefix; a replica that finds another prefix's claim
// refuses to start, naming it (docs/cluster.md).
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Schema, type Scope } from "effect"

export class ClusterConflict extends Schema.TaggedError<ClusterConflict>()("ClusterConflict", {
  message: Schema.String
}) {}

/** The first key of every claim (two int keys: apart from the shard locks, which take one bigint). */
const CLAIM = "agent cluster"

/** The claims of other prefixes on this database, with the prefixes whose runner tables match them. */
const OTHERS = `
  SELECT DISTINCT l.objid::bigint AS key, (
    SELECT string_agg(DISTINCT left(t.table_name, -8), ', ')
    FROM information_schema.tables t
    WHERE t.table_name LIKE '%\\_runners' AND (hashtext(left(t.table_name, -8))::bigint & 4294967295) = l.objid::bigint
  ) AS prefixes
  FROM pg_locks l
  WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND l.classid::bigint = (hashtext($1)::bigint & 4294967295)
    AND l.objid::bigint <> (hashtext($2)::bigint & 4294967295)`

const OtherClaims = Schema.Array(Schema.Struct({ prefixes: Schema.NullOr(Schema.String) }))

/**
 * Claims the database for the cluster `prefix` until the scope closes (on a connection of its own,
 * so a replica that dies or vanishes lets go with its connection). Fails if another cluster holds it.
 */
export const claimDatabase = (prefix: string): Effect.Effect<void, ClusterConflict, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const connection = yield* sql.reserve
    yield* connection.executeRaw("SELECT pg_advisory_lock_shared(hashtext($1), hashtext($2))", [CLAIM, prefix])
    const others = yield* connection.execute(OTHERS, [CLAIM, prefix], undefined).pipe(Effect.flatMap(Schema.decodeUnknown(OtherClaims)), Effect.orDie)
    if (others.length === 0) return
    const names = others.map((row) => (row.prefixes === null ? "(unknown)" : `"${row.prefixes}"`)).join(", ")
    return yield* new ClusterConflict({
      message:
        `another cluster (cluster.prefix ${names}) runs on this database, and this replica's is "${prefix}": ` +
        `the shard locks of two clusters on one database collide whatever their prefixes. ` +
        `Give each cluster a database of its own, or use the same cluster.prefix to join that cluster`
    })
  }).pipe(Effect.catchTag("SqlError", Effect.die))
