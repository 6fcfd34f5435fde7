import type { AppServices } from "@agent/core"
import { AgentApi } from "@agent/domain"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServer from "@effect/platform/HttpServer"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Cause, Effect, Layer, Option } from "effect"
type ServeError = HttpServerError.ServeError
import { timingSafeEqual } from "node:crypto"
import { createServer, type Server as NodeServer } from "node:http"
import { EventHub, type EventHubOptions } from "./EventHub.js"
import { ApiHandlers } from "./Handlers.js"
import { MAX_JSON_DEPTH, nestedDeeperThan } from "./JsonDepth.js"
import * as Origin from "./Origin.js"
import * as ServeApprovals from "./ServeApprovals.js"
import * as Web from "./Web.js"
import * as WebLogin from "./WebLogin.js"

export interface ServerOptions {
  /** Absent: 4096, else any free port. 0: any free port. */
  readonly port?: number
  readonly hostname?: string
  /** Browser origins allowed besides the server's own (no other localhost port is). */
  readonly cors?: ReadonlyArray<string>
  /**
   * Names a `Host` header may give besides the server's own (the loopback names on loopback, the
   * address a connection came in on, `hostname`): `name` (any port), `name:port`, `*` (any).
   */
  readonly allowedHosts?: ReadonlyArray<string>
  /** When set, every request needs HTTP Basic auth (or `?auth_token=<base64 user:pass>`). */
  readonly password?: string
  readonly username?: string
  /** Request bodies over this many bytes are refused (default 10 MB). */
  readonly maxBodyBytes?: number
  /** Objects and arrays a JSON body may nest (default 64). */
  readonly maxJsonDepth?: number
  /** A request whose headers take longer to arrive is answered 408 and closed (default 30 s). */
  readonly headersTimeoutMs?: number
  /** A request whose body takes longer to arrive is answered 408 (default 60 s); the response is not limited. */
  readonly requestTimeoutMs?: number
  readonly events?: EventHubOptions
  /** The web page at `/` (docs/web.md); `false` turns it off (`agent serve --no-web`). Default: on. */
  readonly web?: Web.WebOptions | false
}

export const DEFAULT_PORT = 4096
export const DEFAULT_HEADERS_TIMEOUT_MS = 30_000
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000

const isLoopback = (hostname: string) => hostname === "127.0.0.1" || hostname === "localhost" || hostname === "::1"

const jsonError = (status: number, name: string, message: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson({ name, data: { message } }, { status, headers })

/** Whether a request carries the credentials: Basic, `?auth_token=<base64 user:pass>`, or the web login's cookie. */
const credentialsCheck = (username: string, password: string, cookieToken: string) => {
  const expected = Buffer.from(`${username}:${password}`).toString("base64")
  return (request: HttpServerRequest.HttpServerRequest): boolean => {
    const header = request.headers["authorization"] ?? ""
    const token = header.toLowerCase().startsWith("basic ")
      ? header.slice(6).trim()
      : new URL(request.url, "http://localhost").searchParams.get("auth_token") ?? ""
    const given = Buffer.from(token)
    const wanted = Buffer.from(expected)
    if (given.length === wanted.length && timingSafeEqual(given, wanted)) return true
    const cookie = WebLogin.cookieValue(request.headers["cookie"], WebLogin.COOKIE)
    return cookie !== undefined && WebLogin.sameSecret(cookie, cookieToken)
  }
}

/** Auth on every route except CORS preflights, checked in constant time per request. */
const basicAuth = (authorized: (request: HttpServerRequest.HttpServerRequest) => boolean) =>
  HttpMiddleware.make((app) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (request.method === "OPTIONS") return yield* app
      if (authorized(request)) return yield* app
      // The web page says who it is, so a lapsed login sends it to the login form instead of the browser's Basic dialog.
      const challenge = request.headers["x-agent-client"] === "web" ? {} : { "www-authenticate": 'Basic realm="agent"' }
      return jsonError(401, "Unauthorized", "authentication required: HTTP Basic with the server's username and password", challenge)
    })
  )

/**
 * Refuses, before anything else (preflights included), a request that names another host than
 * the server (DNS rebinding) or comes from a browser page of another origin (see Origin.ts).
 */
const originGuard = (options: { readonly hostname: string; readonly allowedHosts: ReadonlyArray<string>; readonly cors: ReadonlySet<string> }) =>
  HttpMiddleware.make((app) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const socket = NodeHttpServerRequest.toIncomingMessage(request).socket
      const context: Origin.HostContext = {
        localAddress: socket.localAddress ?? "",
        localPort: socket.localPort ?? 0,
        hostname: options.hostname,
        allowedHosts: options.allowedHosts
      }
      const host = request.headers["host"]
      if (!Origin.hostAllowed(host, context)) return jsonError(403, "Forbidden", Origin.hostRefusal(host, context))
      const origin = request.headers["origin"]
      if (origin !== undefined && !Origin.originAllowed(origin, host, options.cors)) {
        return jsonError(403, "Forbidden", Origin.originRefusal(origin))
      }
      return yield* app
    })
  )

/**
 * Bodies over the limit or nested too deep, malformed JSON and unknown routes all answer with a JSON error
 * naming the problem; nothing a client sends takes the process down.
 */
const guard = (maxBodyBytes: number, maxJsonDepth: number) =>
  HttpMiddleware.make((app) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      // Refused before a byte is read, so Node drains the body and the client gets the answer.
      const length = Number(request.headers["content-length"] ?? 0)
      if (length > maxBodyBytes) {
        return jsonError(413, "BadRequest", `request body too large: ${length} bytes, the limit is ${maxBodyBytes}`)
      }
      // Scanned before the API parses it; the request keeps the text it read, so it is read once.
      if (request.method !== "GET" && request.method !== "HEAD" && request.method !== "OPTIONS") {
        const body = yield* request.text
        if (nestedDeeperThan(body, maxJsonDepth)) {
          return jsonError(400, "BadRequest", `request body nested deeper than ${maxJsonDepth} levels of objects and arrays (the limit)`)
        }
      }
      const route = `${request.method} ${request.url.split("?")[0]}`
      const response = yield* app
      if (response.status < 400 || response.body._tag !== "Empty") return response
      return jsonError(response.status, response.status === 404 ? "NotFoundError" : "BadRequest", `${response.status} for ${route}`)
    }).pipe(
      HttpIncomingMessage.withMaxBodySize(Option.some(maxBodyBytes)),
      Effect.catchAllCause((cause) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const route = `${request.method} ${request.url.split("?")[0]}`
          const failure = Cause.squash(cause) as {
            _tag?: string
            reason?: string
            cause?: unknown
            issues?: ReadonlyArray<{ readonly path: ReadonlyArray<PropertyKey>; readonly message: string }>
          }
          if (failure?._tag === "RouteNotFound") return jsonError(404, "NotFoundError", `no route for ${route}`)
          if (failure?._tag === "RequestError") {
            const detail = failure.cause instanceof Error ? failure.cause.message : String(failure.cause ?? failure.reason)
            if (/maxBytes/i.test(detail)) {
              return jsonError(413, "BadRequest", `request body too large: the limit is ${maxBodyBytes} bytes`)
            }
            return jsonError(400, "BadRequest", `malformed request for ${route}: ${detail}`)
          }
          if (failure?._tag === "HttpApiDecodeError") {
            // Name the field: "parts.0.text: is missing" rather than the whole expected type.
            const issues = (failure.issues ?? []).map((issue) =>
              `${issue.path.length > 0 ? issue.path.map(String).join(".") : "body"}: ${issue.message}`
            )
            return jsonError(400, "BadRequest", `invalid request for ${route}: ${issues.join("; ") || "does not match the API"}`)
          }
          // The API's own errors (not found, bad request) are encoded by it.
          if (Cause.isFailType(cause) || Cause.failureOption(cause)._tag === "Some") return yield* Effect.failCause(cause)
          yield* Effect.logWarning(`request failed: ${route}`, cause)
          return jsonError(500, "UnknownError", "the server failed to handle this request; see its log")
        })
      )
    )
  )

/** How long a stopping server lets answers in progress finish before it closes their connections. */
const SHUTDOWN_GRACE_MS = 1_000

/** The HTTP API on a socket, with the runtime's services supplied by the caller. */
export const layer = (
  options: ServerOptions = {}
): Layer.Layer<HttpServer.HttpServer, ServeError, AppServices> => {
  const hostname = options.hostname ?? "127.0.0.1"
  const extra = new Set(options.cors ?? [])
  // Node's defaults hold a slow request for 300 s. Both limits end once the request is in: a long
  // answer (a prompt's, an event stream) is not cut. Expiry is checked every interval.
  const headersTimeout = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS
  const requestTimeout = Math.max(options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS, headersTimeout)
  const connectionsCheckingInterval = Math.min(30_000, Math.max(50, Math.floor(headersTimeout / 4)))
  const listen = (port: number) => {
    let node: NodeServer | undefined
    // Released before the server's own close, which waits for every open connection: an event
    // stream never ends by itself, so a connected client would hold a stopping server forever.
    const closeConnections = Layer.scopedDiscard(Effect.addFinalizer(() =>
      Effect.sync(() => {
        node?.closeIdleConnections()
        setTimeout(() => node?.closeAllConnections(), SHUTDOWN_GRACE_MS).unref()
      })
    ))
    return closeConnections.pipe(Layer.provideMerge(NodeHttpServer.layer(
      () => (node = createServer({ headersTimeout, requestTimeout, connectionsCheckingInterval })),
      { port, host: hostname }
    )))
  }
  const http = options.port !== undefined
    ? listen(options.port)
    : listen(DEFAULT_PORT).pipe(Layer.catchAll(() => listen(0)))

  // Applied inside the API app, before its errors become responses: the Host and Origin checks
  // outermost, then CORS (so even a 401 carries its headers), then the web page (which checks auth
  // itself), then auth, then the input guard.
  const origins = originGuard({ hostname, allowedHosts: options.allowedHosts ?? [], cors: extra })
  const cors = HttpMiddleware.cors({ allowedOrigins: (origin) => extra.has(origin), credentials: true })
  const credentials = options.password ? { username: options.username ?? "agent", password: options.password } : undefined
  const cookieToken = credentials ? WebLogin.makeToken(WebLogin.newKey(), credentials) : undefined
  const authorized = credentials && cookieToken ? credentialsCheck(credentials.username, credentials.password, cookieToken) : () => true
  const auth = credentials ? basicAuth(authorized) : (app: HttpApp.Default) => app
  const web = options.web === false
    ? (app: HttpApp.Default) => app
    : Web.middleware(options.web ?? {}, { authorized, ...(credentials && cookieToken ? { credentials, token: cookieToken } : {}) })
  const checks = guard(options.maxBodyBytes ?? 10 * 1024 * 1024, options.maxJsonDepth ?? MAX_JSON_DEPTH)

  const api = HttpApiBuilder.serve().pipe(
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/doc" })),
    // `checks` re-fails the API's typed errors so the API encodes them; the type cannot say so.
    Layer.provide(HttpApiBuilder.middleware((app) => origins(cors(web(auth(checks(app) as HttpApp.Default)))))),
    Layer.provide(HttpApiBuilder.api(AgentApi).pipe(Layer.provide(ApiHandlers))),
    Layer.provide(EventHub.layer(options.events))
  )
  // The sessions' asks and ends for `notify` and `permission.approver` (nothing runs without them).
  return Layer.merge(api, ServeApprovals.layer).pipe(Layer.provideMerge(http)) as Layer.Layer<HttpServer.HttpServer, ServeError, AppServices>
}

/** The warning `agent serve` prints when anyone on the network could drive the runtime. */
export const unsecuredWarning = (options: ServerOptions): string | undefined =>
  !options.password && !isLoopback(options.hostname ?? "127.0.0.1")
    ? `warning: the server is listening on ${options.hostname} without a password; anyone who can reach it can run commands on this machine. Set AGENT_SERVER_PASSWORD.`
    : undefined
