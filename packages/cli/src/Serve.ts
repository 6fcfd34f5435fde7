// Loaded only when `agent serve` runs (see ServeCommand.ts and Lazy.ts).
import { ConfigService, Database, Instance, makeAppLayer } from "@agent/core"
import { Server } from "@agent/server"
import * as HttpServer from "@effect/platform/HttpServer"
import type { Config } from "@agent/domain"
import { clusterChoice } from "@agent/server/cluster/ClusterSettings"
import { Console, Effect, Layer, Option } from "effect"
import { shutdown, UsageError } from "./ExitCode.js"
import type { ServeInput } from "./ServeCommand.js"
import { yieldAtWaitsOnly } from "./startup/ServerScheduling.js"

/** Why the server could not listen, in words: a taken or forbidden port is a usage problem (exit 2). */
const listenProblem = (cause: unknown, options: Server.ServerOptions) => {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code
  const port = options.port ?? 0
  const where = `${options.hostname}:${port}`
  if (code === "EADDRINUSE") return new UsageError({ message: `port ${port} is already in use (EADDRINUSE on ${where}); pick another with --port` })
  if (code === "EACCES") return new UsageError({ message: `no permission to listen on port ${port} (EACCES on ${where}); ports below 1024 need privileges` })
  if (code === "EADDRNOTAVAIL") return new UsageError({ message: `cannot listen on ${where}: no such local address (EADDRNOTAVAIL); check --hostname` })
  return new UsageError({ message: `cannot listen on ${where}: ${(cause as Error | undefined)?.message ?? String(cause)}` })
}

/**
 * Nothing for one process; for a replica (`--replica`, config `cluster.enabled`) the cluster's
 * runner, loaded only then (ClusterRunner.ts and @effect/cluster stay out of a single process).
 */
const replicaLayer = (flags: ServeInput, config: Config, databaseTarget: string) =>
  Effect.gen(function*() {
    const choice = clusterChoice(
      { replica: flags.replica, runnerHost: Option.getOrUndefined(flags.runnerHost), runnerPort: Option.getOrUndefined(flags.runnerPort) },
      config.cluster,
      databaseTarget
    )
    if (choice._tag === "Invalid") return yield* new UsageError({ message: choice.message })
    if (choice._tag === "Off") return Layer.empty
    const { settings } = choice
    const runner = yield* Effect.promise(() => import("@agent/server/cluster/ClusterRunner"))
    return runner.layer(settings).pipe(
      Layer.tap(() => Console.log(`replica: runner on ${settings.host}:${settings.port}, ${settings.shards} shards (cluster ${settings.prefix})`))
    )
  })

export const serve = (flags: ServeInput) =>
  Effect.gen(function*() {
    const config = yield* (yield* ConfigService).get()
    const instance = yield* Instance
    const options: Server.ServerOptions = {
      ...Option.match(flags.port, { onNone: () => config.server?.port !== undefined ? { port: config.server.port } : {}, onSome: (port) => ({ port }) }),
      hostname: Option.getOrElse(flags.hostname, () => config.server?.hostname ?? "127.0.0.1"),
      cors: [...(config.server?.cors ?? []), ...flags.cors],
      allowedHosts: [...(config.server?.allowed_hosts ?? []), ...flags.allowedHost],
      ...(instance.env.AGENT_SERVER_PASSWORD ? { password: instance.env.AGENT_SERVER_PASSWORD } : {}),
      ...(instance.env.AGENT_SERVER_USERNAME ? { username: instance.env.AGENT_SERVER_USERNAME } : {}),
      ...(flags.noWeb ? { web: false as const } : {})
    }
    const cluster = yield* replicaLayer(flags, config, Database.target(instance, config.database?.url))
    const warning = Server.unsecuredWarning(options)
    if (warning) yield* Console.error(warning)
    // SIGTERM / Ctrl-C: stop accepting, abort the runs (their parts are marked interrupted), exit 0.
    // A replica first lets running tool calls finish (cluster.grace_seconds) and hands its sessions over.
    shutdown.graceful = true
    const announce = Layer.effectDiscard(
      Effect.gen(function*() {
        const server = yield* HttpServer.HttpServer
        const address = server.address as HttpServer.TcpAddress
        const host = address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname
        yield* Console.log(`agent server listening on http://${host}:${address.port}`)
      })
    )
    return yield* Layer.launch(announce.pipe(Layer.provideMerge(Server.layer(options)), Layer.provide(cluster))).pipe(
      Effect.catchIf(
        (error): error is typeof error & { readonly _tag: "ServeError"; readonly cause: unknown } => (error as { _tag?: string })._tag === "ServeError",
        (error) => Effect.fail(listenProblem(error.cause, options))
      )
    )
  }).pipe(Effect.provide(makeAppLayer({ database: Database.layerServer })), yieldAtWaitsOnly)
