import type { AppServices } from "@agent/core"
import { AgentApi } from "@agent/domain"
import {
  HttpApiBuilder,
  HttpApp,
  HttpIncomingMessage,
  HttpMiddleware,
  HttpServer,
  type HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Effect, Layer, Option } from "effect"
type ServeError = HttpServerError.ServeError
import { timingSafeEqual } from "node:crypto"
import { createServer } from "node:http"
import { EventHub, type EventHubOptions } from "./EventHub.js"
import { ApiHandlers } from "./Handlers.js"

export interface ServerOptions {
  /** Absent: 4096, else any free port. 0: any free port. */
  readonly port?: number
  readonly hostname?: string
  /** Origins allowed besides localhost and 127.0.0.1. */
  readonly cors?: ReadonlyArray<string>
  /** When set, every request needs HTTP Basic auth (or `?auth_token=<base64 user:pass>`). */
  readonly password?: string
  readonly username?: string
  /** Request bodies over this many bytes are refused (default 10 MB). */
  readonly maxBodyBytes?: number
  readonly events?: EventHubOptions
}

export const DEFAULT_PORT = 4096
const LOCAL_ORIGIN = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/

const isLoopback = (hostname: string) => hostname === "127.0.0.1" || hostname === "localhost" || hostname === "::1"

const jsonError = (status: number, name: string, message: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson({ name, data: { message } }, { status, headers })

/** Basic auth on every route except CORS preflights, checked in constant time per request. */
const basicAuth = (username: string, password: string) => {
  const expected = Buffer.from(`${username}:${password}`).toString("base64")
  return HttpMiddleware.make((app) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (request.method === "OPTIONS") return yield* app
      const header = request.headers["authorization"] ?? ""
      const token = header.toLowerCase().startsWith("basic ")
        ? header.slice(6).trim()
        : new URL(request.url, "http://localhost").searchParams.get("auth_token") ?? ""
      const given = Buffer.from(token)
      const wanted = Buffer.from(expected)
      if (given.length === wanted.length && timingSafeEqual(given, wanted)) return yield* app
      return jsonError(401, "Unauthorized", "authentication required: HTTP Basic with the server's username and password", {
        "www-authenticate": 'Basic realm="agent"'
      })
    })
  )
}

/**
 * Bodies over the limit, malformed JSON and unknown routes all answer with a JSON error
 * naming the problem; nothing a client sends takes the process down.
 */
const guard = (maxBodyBytes: number) =>
  HttpMiddleware.make((app) =>
    app.pipe(
      HttpIncomingMessage.withMaxBodySize(Option.some(maxBodyBytes)),
      Effect.flatMap((response) =>
        Effect.gen(function*() {
          if (response.status !== 404 || response.body._tag !== "Empty") return response
          const request = yield* HttpServerRequest.HttpServerRequest
          return jsonError(404, "NotFoundError", `no route for ${request.method} ${request.url.split("?")[0]}`)
        })
      ),
      Effect.catchAllCause((cause) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          yield* Effect.logWarning(`request failed: ${request.method} ${request.url}`, cause)
          return jsonError(500, "UnknownError", "the server failed to handle this request; see its log")
        })
      )
    )
  )

/** The HTTP API on a socket, with the runtime's services supplied by the caller. */
export const layer = (
  options: ServerOptions = {}
): Layer.Layer<HttpServer.HttpServer, ServeError, AppServices> => {
  const hostname = options.hostname ?? "127.0.0.1"
  const extra = new Set(options.cors ?? [])
  const listen = (port: number) => NodeHttpServer.layer(createServer, { port, host: hostname })
  const http = options.port !== undefined
    ? listen(options.port)
    : listen(DEFAULT_PORT).pipe(Layer.catchAll(() => listen(0)))

  const middleware = (app: HttpApp.Default) => {
    const guarded = guard(options.maxBodyBytes ?? 10 * 1024 * 1024)(app)
    const authed = options.password ? basicAuth(options.username ?? "agent", options.password)(guarded) : guarded
    return authed
  }

  return HttpApiBuilder.serve(middleware).pipe(
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/doc" })),
    Layer.provide(
      HttpApiBuilder.middlewareCors({
        allowedOrigins: (origin) => LOCAL_ORIGIN.test(origin) || extra.has(origin),
        credentials: true
      })
    ),
    Layer.provide(HttpApiBuilder.api(AgentApi).pipe(Layer.provide(ApiHandlers))),
    Layer.provide(EventHub.layer(options.events)),
    Layer.provideMerge(http)
  ) as Layer.Layer<HttpServer.HttpServer, ServeError, AppServices>
}

/** The warning `agent serve` prints when anyone on the network could drive the runtime. */
export const unsecuredWarning = (options: ServerOptions): string | undefined =>
  !options.password && !isLoopback(options.hostname ?? "127.0.0.1")
    ? `warning: the server is listening on ${options.hostname} without a password; anyone who can reach it can run commands on this machine. Set AGENT_SERVER_PASSWORD.`
    : undefined
