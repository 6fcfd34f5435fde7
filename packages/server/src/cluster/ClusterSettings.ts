// Whether `agent serve` is a replica, and how: flags over config `cluster.*` (a pure function,
// table-tested). Replicas share one PostgreSQL database; SQLite is one process's.
import type { Config } from "@agent/domain"

export interface ClusterSettings {
  readonly databaseUrl: string
  /** Where the other replicas reach this one's runner. */
  readonly host: string
  readonly port: number
  readonly listenHost: string
  readonly shards: number
  readonly prefix: string
  readonly graceMs: number
  readonly lockExpirationMs: number
}

export interface ClusterFlags {
  readonly replica: boolean
  readonly runnerHost?: string | undefined
  readonly runnerPort?: number | undefined
}

export type ClusterChoice =
  | { readonly _tag: "Off" }
  | { readonly _tag: "On"; readonly settings: ClusterSettings }
  | { readonly _tag: "Invalid"; readonly message: string }

export const DEFAULT_RUNNER_PORT = 34431
export const DEFAULT_SHARDS = 64
export const DEFAULT_PREFIX = "agent_cluster"
export const DEFAULT_GRACE_SECONDS = 30
export const DEFAULT_LOCK_EXPIRATION_SECONDS = 10

const isPostgresUrl = (target: string) => /^postgres(ql)?:\/\//i.test(target)

export const clusterChoice = (
  flags: ClusterFlags,
  config: Config["cluster"] | undefined,
  databaseTarget: string
): ClusterChoice => {
  const enabled = flags.replica || config?.enabled === true
  if (!enabled) return { _tag: "Off" }
  if (!isPostgresUrl(databaseTarget)) {
    return {
      _tag: "Invalid",
      message: `a replica needs the store in PostgreSQL (AGENT_DATABASE_URL or config database.url), not the SQLite file ${databaseTarget}: replicas share one database`
    }
  }
  const port = flags.runnerPort ?? config?.port ?? DEFAULT_RUNNER_PORT
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    return { _tag: "Invalid", message: `--runner-port ${port}: expected a port from 1 to 65535` }
  }
  const host = flags.runnerHost ?? config?.host ?? "127.0.0.1"
  return {
    _tag: "On",
    settings: {
      databaseUrl: databaseTarget,
      host,
      port,
      listenHost: config?.listen_host ?? host,
      shards: config?.shards ?? DEFAULT_SHARDS,
      prefix: config?.prefix ?? DEFAULT_PREFIX,
      graceMs: (config?.grace_seconds ?? DEFAULT_GRACE_SECONDS) * 1000,
      lockExpirationMs: (config?.lock_expiration_seconds ?? DEFAULT_LOCK_EXPIRATION_SECONDS) * 1000
    }
  }
}

/**
 * The URL of the cluster's own connections. Its shard locks are PostgreSQL advisory locks, held
 * as long as the connection that took them: a killed replica's connections close at once, but those
 * of a machine that vanished (power, network) stay open on the server until TCP gives up on them,
 * two hours by Linux's defaults, and its shards with them. The server is told to probe an idle
 * connection after half the lock expiry and to drop one unanswered for the lock expiry, so
 * the locks of a vanished replica go about when its heartbeat does (docs/cluster.md, "Failover time").
 */
export const clusterDatabaseUrl = (url: string, lockExpirationMs: number): string => {
  const parsed = new URL(url)
  const idle = Math.max(1, Math.ceil(lockExpirationMs / 2000))
  const settings = [
    `-c tcp_keepalives_idle=${idle}`,
    "-c tcp_keepalives_interval=1",
    "-c tcp_keepalives_count=3",
    `-c tcp_user_timeout=${Math.max(1000, Math.round(lockExpirationMs))}`
  ]
  const options = parsed.searchParams.get("options")
  parsed.searchParams.set("options", [options, ...settings].filter(Boolean).join(" "))
  return parsed.toString()
}
