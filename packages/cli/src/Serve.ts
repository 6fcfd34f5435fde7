import { ConfigService, Instance } from "@agent/core"
import { Server } from "@agent/server"
import { Command, Options } from "@effect/cli"
import { HttpServer } from "@effect/platform"
import { Console, Effect, Layer, Option } from "effect"
import { shutdown } from "./ExitCode.js"

const port = Options.integer("port").pipe(
  Options.withDescription("Port to listen on (default: config server.port, else 4096, else a free port)"),
  Options.optional
)
const hostname = Options.text("hostname").pipe(
  Options.withDescription("Address to listen on (default: config server.hostname, else 127.0.0.1)"),
  Options.optional
)
const cors = Options.text("cors").pipe(
  Options.withDescription("An extra origin allowed to call the API from a browser (repeatable)"),
  Options.repeated
)

export const serveCommand = Command.make("serve", { port, hostname, cors }, (flags) =>
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
  })
).pipe(Command.withDescription("Serve the HTTP API and event stream (OpenCode-compatible session routes)"))
