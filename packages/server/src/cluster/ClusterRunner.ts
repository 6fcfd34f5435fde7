// `agent serve --replica`: this process as one runner of an @effect/cluster on the store's
// PostgreSQL database. Sessions are entities (SessionEntity.ts) spread over shards; the runner
// that holds a session's shard runs it (SessionOwner.ts), the others send it messages over the
// cluster's socket transport. Messages and runners live in the database (SqlMessageStorage,
// SqlRunnerStorage), so a prompt outlives the replica that was running it. Loaded only for a replica.
import type { Bus, PermissionService, QuestionService, SessionChanges, SessionLoop, SessionStore } from "@agent/core"
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as RunnerHealth from "@effect/cluster/RunnerHealth"
import * as Runners from "@effect/cluster/Runners"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SocketRunner from "@effect/cluster/SocketRunner"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import { layerClientProtocol, layerSocketServer } from "@effect/platform-node/NodeClusterSocket"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Duration, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import * as AskRegistry from "./AskRegistry.js"
import * as ClusterRouting from "./ClusterRouting.js"
import { type ClusterSettings, clusterDatabaseUrl } from "./ClusterSettings.js"
import { RunningTools } from "./RunningTools.js"
import { withSerialReserve } from "./SerialLockConnection.js"
import { ClusterConflict, claimDatabase } from "./DatabaseClaim.js"
import * as SessionOwner from "./SessionOwner.js"
import type { SessionRouting } from "./SessionRouting.js"

/** The cluster's own connections: its shard locks hold one for the runner's life, apart from the store's. */
const database = (settings: ClusterSettings) =>
  PgClient.layer({
    url: Redacted.make(clusterDatabaseUrl(settings.databaseUrl, settings.lockExpirationMs)),
    maxConnections: 16,
    connectTimeout: "10 seconds",
    applicationName: "agent-cluster"
  })

const shardingConfig = (settings: ClusterSettings) => {
  const lockExpiration = Duration.millis(settings.lockExpirationMs)
  return ShardingConfig.layer({
    runnerAddress: Option.some(RunnerAddress.make(settings.host, settings.port)),
    runnerListenAddress: Option.some(RunnerAddress.make(settings.listenHost, settings.port)),
    shardsPerGroup: settings.shards,
    // How soon a dead runner's shards move: its locks expire, the others look every second.
    shardLockExpiration: lockExpiration,
    shardLockRefreshInterval: Duration.millis(Math.max(500, settings.lockExpirationMs / 4)),
    refreshAssignmentsInterval: Duration.seconds(1),
    runnerHealthCheckInterval: Duration.seconds(2),
    entityMessagePollInterval: Duration.seconds(1),
    // A stopping runner does not wait for its runs to end (they may take hours): their handlers
    // are interrupted at once, and each hands its session over (SessionOwner.ts: the tool call
    // running gets the grace period, then the run is aborted here and resumed by the next owner).
    entityTerminationTimeout: Duration.millis(100)
  })
}

/**
 * Replicas starting together on a new database would race to create the cluster's tables (each
 * creates them if missing, and two at once collide in the catalog): they take turns under an
 * advisory lock held on a connection of its own while the layer is built. The turn is the
 * database's, not the prefix's, so that a replica of another cluster starting at the same time
 * sees this one's claim on the database (DatabaseClaim.ts).
 */
const oneAtATime = <A, E, R>(prefix: string, layer: Layer.Layer<A, E, R>) =>
  Layer.scopedContext(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const turn = yield* Scope.make()
      const connection = yield* sql.reserve.pipe(Scope.extend(turn))
      const key = "agent cluster setup"
      yield* connection.executeRaw("SELECT pg_advisory_lock(hashtext($1))", [key])
      const built = yield* claimDatabase(prefix).pipe(
        Effect.zipRight(Layer.build(layer)),
        Effect.ensuring(connection.executeRaw("SELECT pg_advisory_unlock(hashtext($1))", [key]).pipe(Effect.ignore)),
        Effect.ensuring(Scope.close(turn, Exit.void))
      )
      return built
    })
  )

/** Every failure of the cluster's set-up is a defect, but another cluster on the database: that one is the user's to fix. */
const dieUnlessConflict = <A, E, R>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, ClusterConflict, R> =>
  Layer.catchAll(layer, (error) => (error instanceof ClusterConflict ? Layer.fail(error) : Layer.die(error)))

/** The database client of the runner storage: its lock connection runs one query at a time (SerialLockConnection.ts). */
const serialReserve = Layer.effect(SqlClient.SqlClient, Effect.map(SqlClient.SqlClient, withSerialReserve))

/** Sharding over the socket transport, with its storage in the database. */
const sharding = (settings: ClusterSettings) => {
  const storage = oneAtATime(
    settings.prefix,
    Layer.mergeAll(
      SqlMessageStorage.layerWith({ prefix: settings.prefix }),
      SqlRunnerStorage.layerWith({ prefix: settings.prefix }).pipe(Layer.provide(serialReserve))
    )
  ).pipe(dieUnlessConflict)
  const health = RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(layerClientProtocol))
  return SocketRunner.layer.pipe(
    Layer.provide([layerSocketServer, layerClientProtocol, health]),
    Layer.provide(storage),
    Layer.provide(RpcSerialization.layerMsgPack)
  )
}

export type ClusterServices = SessionLoop | SessionStore | SessionChanges | PermissionService | QuestionService | Bus

/** The runner, its session entities and the routing the API uses; needs the runtime's services. */
export const layer = (settings: ClusterSettings): Layer.Layer<SessionRouting, ClusterConflict, ClusterServices> => {
  const runner = `${settings.host}:${settings.port}`
  const shards = sharding(settings).pipe(Layer.provide(shardingConfig(settings)))
  const owner = Layer.unwrapEffect(
    Effect.map(SqlClient.SqlClient, (sql) => SessionOwner.layer(runner, settings.graceMs, (sessionID) => AskRegistry.forget(sql, settings.prefix, sessionID)))
  )
  return Layer.mergeAll(ClusterRouting.layer(settings), owner).pipe(
    Layer.provide(shards),
    // Built before the sharding, so it outlives the entities' handovers on a stop.
    Layer.provide(RunningTools.layer),
    Layer.provide(database(settings)),
    dieUnlessConflict
  )
}
