// Loaded only when `agent serve` runs (see ServeCommand.ts and Lazy.ts).
import { ConfigService, Database, Instance, makeAppLayer } from "@agent/core"
import { Server } from "@agent/server"
import * as HttpServer from "@effect/platform/HttpServer"
import { Console, Effect, Layer, Option } from "effect"
import { shutdown } from "./ExitCode.js"
import type { ServeInput } from "./ServeCommand.js"

/**
 * Operations a fiber runs before it lets others in when it has not reached an async boundary
 * (Effect's default is 2048). In a server the fibers that compete are other sessions' steps: a
 * forced yield in the middle of one step's synchronous work only shares the thread out, so that a
 * burst of steps all finish late instead of one after another, and each yield costs a scheduler
 * turn. At this bound a fiber switches at real waits (I/O, timers, queues) and practically never
 * on a count. bench:server's varied phase, 12 interleaved pairs at load 0.3–2.3: p99 lower in 10,
 * equal in 1, higher in 1 (medians over the runs 80 vs 89.5 ms; 47–49 vs 51–74 ms in the quiet set).
 */
const MAX_OPS_BEFORE_YIELD = 100_000_000

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
      ...(instance.env.AGENT_SERVER_USERNAME ? { username: instance.env.AGENT_SERVER_USERNAME } : {})
    }
    const warning = Server.unsecuredWarning(options)
    if (warning) yield* Console.error(warning)
    // SIGTERM / Ctrl-C: stop accepting, abort the runs (their parts are marked interrupted), exit 0.
    shutdown.graceful = true
    const announce = Layer.effectDiscard(
      Effect.gen(function*() {
        const server = yield* HttpServer.HttpServer
        const address = server.address as HttpServer.TcpAddress
        const host = address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname
        yield* Console.log(`agent server listening on http://${host}:${address.port}`)
      })
    )
    return yield* Layer.launch(announce.pipe(Layer.provideMerge(Server.layer(options))))
  }).pipe(Effect.provide(makeAppLayer({ database: Database.layerServer })), Effect.withMaxOpsBeforeYield(MAX_OPS_BEFORE_YIELD))
