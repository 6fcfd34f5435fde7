// Loaded only when `agent serve` runs (see ServeCommand.ts and Lazy.ts).
import { ConfigService, Database, Instance, makeAppLayer } from "@agent/core"
import { Server } from "@agent/server"
import * as HttpServer from "@effect/platform/HttpServer"
import { Console, Effect, Layer, Option } from "effect"
import { shutdown } from "./ExitCode.js"
import type { ServeInput } from "./ServeCommand.js"

export const serve = (flags: ServeInput) =>
  Effect.gen(function*() {
    const config = yield* (yield* ConfigService).get()
    const instance = yield* Instance
    const options: Server.ServerOptions = {
      ...Option.match(flags.port, { onNone: () => config.server?.port !== undefined ? { port: config.server.port } : {}, onSome: (port) => ({ port }) }),
      hostname: Option.getOrElse(flags.hostname, () => config.server?.hostname ?? "127.0.0.1"),
      cors: [...(config.server?.cors ?? []), ...flags.cors],
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
  }).pipe(Effect.provide(makeAppLayer({ database: Database.layerServer })))
