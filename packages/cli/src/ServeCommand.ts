import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { lazy } from "./Lazy.js"

export const serveConfig = {
  port: Options.integer("port").pipe(
    Options.withDescription("Port to listen on (default: config server.port, else 4096, else a free port)"),
    Options.optional
  ),
  hostname: Options.text("hostname").pipe(
    Options.withDescription("Address to listen on (default: config server.hostname, else 127.0.0.1)"),
    Options.optional
  ),
  cors: Options.text("cors").pipe(
    Options.withDescription("An extra origin allowed to call the API from a browser (repeatable)"),
    Options.repeated
  ),
  allowedHost: Options.text("allowed-host").pipe(
    Options.withDescription(
      "A name the Host header may give besides the server's own, e.g. behind a proxy: name (any port), name:port, or * (repeatable)"
    ),
    Options.repeated
  ),
  noWeb: Options.boolean("no-web").pipe(
    Options.withDescription("Serve the API only, without the web page at / (docs/web.md)")
  ),
  replica: Options.boolean("replica").pipe(
    Options.withDescription("Serve as one replica of several on one PostgreSQL database (docs/cluster.md; config cluster.enabled)")
  ),
  runnerHost: Options.text("runner-host").pipe(
    Options.withDescription("With --replica: the address the other replicas reach this one at (default: config cluster.host, else 127.0.0.1)"),
    Options.optional
  ),
  runnerPort: Options.integer("runner-port").pipe(
    Options.withDescription("With --replica: the port of this replica's runner (default: config cluster.port, else 34431)"),
    Options.optional
  )
}

export type ServeInput = Command.Command.ParseConfig<typeof serveConfig>

// A long-running server: its young generation is not capped, its old one grows by half at most (see startup/YoungGeneration.ts and startup/OldGeneration.ts).
export const serveCommand = Command.make(
  "serve",
  serveConfig,
  (input) =>
    lazy(() => import("./Serve.js"), (module) => module.serve(input), { capYoungGeneration: false, heapGrowingPercent: 50 })
).pipe(
  Command.withDescription("Serve the HTTP API and event stream (OpenCode-compatible session routes); SIGTERM stops it cleanly")
)
