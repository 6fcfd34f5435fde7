import type { McpConfig, SandboxConfig } from "@agent/domain"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { FetchLike, Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { Data, Duration, Effect, Either } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Instance } from "../runtime/Instance.js"
import { ChildProcessTransport, type StdioSpec } from "./ChildProcessTransport.js"
import * as McpOAuth from "./McpOAuth.js"
import * as McpSdkLoader from "./McpSdkLoader.js"

// Connecting to one MCP server: the local (stdio) and remote (Streamable HTTP, then SSE) transports,
// the handshake under its timeout, and the SDK error classification the rest of mcp/ shares.

export interface LocalSpec extends StdioSpec {
  readonly type: "local"
  /** Run in the sandbox: `true` (the top-level settings) or the server's own keys over them. */
  readonly sandbox?: true | SandboxConfig
}

export interface RemoteSpec {
  readonly type: "remote"
  readonly url: string
  readonly headers: Record<string, string>
  /** `false`: a 401 is final, the server is expected to take credentials from `headers`. */
  readonly oauth: McpOAuth.OAuthSettings | false | undefined
}

/**
 * A connection attempt that did not work; `auth` means the server wants credentials first,
 * `final` that retrying cannot help until the user changes something.
 */
export class ConnectFailure extends Data.TaggedError("ConnectFailure")<{
  readonly reason: string
  readonly auth: boolean
  readonly final?: boolean
}> {}

export const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const isAuthError = (error: unknown): boolean => {
  const sdk = McpSdkLoader.ifLoaded()
  return sdk !== undefined && (error instanceof sdk.UnauthorizedError ||
    ((error instanceof sdk.StreamableHTTPError || error instanceof sdk.SseError) && error.code === 401))
}

/** An SDK `McpError` with this code (false before the SDK is loaded: then no SDK call failed). */
export const isMcpError = (error: unknown, code?: "RequestTimeout" | "ConnectionClosed"): boolean => {
  const sdk = McpSdkLoader.ifLoaded()
  return sdk !== undefined && error instanceof sdk.McpError && (code === undefined || error.code === sdk.ErrorCode[code])
}

export const isTimeout = (error: unknown): boolean => isMcpError(error, "RequestTimeout")

/** The SDK's own timeout error (the SDK is loaded: a request or a connection is under way). */
const timeoutError = (detail: string) => {
  const sdk = McpSdkLoader.sdk()
  return new sdk.McpError(sdk.ErrorCode.RequestTimeout, detail)
}

/** A request to a server under its timeout; interruption cancels it. */
export const request = <A>(entry: { readonly timeout: number }, run: (signal: AbortSignal) => Promise<A>) =>
  Effect.tryPromise({ try: run, catch: (error) => error }).pipe(
    Effect.timeoutFail({
      duration: Duration.millis(entry.timeout + 1_000),
      onTimeout: () => timeoutError(`no answer within ${entry.timeout} ms`)
    })
  )

export const paginate = async <T>(
  page: (cursor: string | undefined) => Promise<{ items: ReadonlyArray<T>; nextCursor?: string | undefined }>
): Promise<ReadonlyArray<T>> => {
  const all: Array<T> = []
  let cursor: string | undefined
  // A bound, so a server that keeps returning a cursor cannot hold the connection forever.
  for (let pages = 0; pages < 100; pages++) {
    const result = await page(cursor)
    all.push(...result.items)
    if (!result.nextCursor || result.nextCursor === cursor) break
    cursor = result.nextCursor
  }
  return all
}

export const specOf = (config: McpConfig, instance: Instance["Type"]): LocalSpec | RemoteSpec | undefined => {
  if (!("type" in config)) return undefined
  if (config.type === "remote") return { type: "remote", url: config.url, headers: { ...config.headers }, oauth: config.oauth }
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(instance.env)) if (value !== undefined) env[key] = value
  Object.assign(env, config.environment)
  const [command, ...args] = config.command
  return {
    type: "local",
    command,
    args,
    cwd: config.cwd === undefined ? instance.directory : path.resolve(instance.directory, config.cwd),
    env,
    ...(config.sandbox === undefined || config.sandbox === false ? {} : { sandbox: config.sandbox })
  }
}

/** The SDK's `connect` (spawn or first request, then `initialize`) under the connect timeout. */
export const handshake = (client: Client, transport: Transport, timeout: number) =>
  Effect.tryPromise({ try: (signal) => client.connect(transport, { signal, timeout }), catch: (error) => error }).pipe(
    Effect.timeoutFail({
      duration: Duration.millis(timeout),
      onTimeout: () => timeoutError("connect timed out")
    })
  )

export const closeClient = (client: Client) =>
  Effect.promise(() => client.close().catch(() => undefined)).pipe(Effect.timeout("5 seconds"), Effect.ignore)

export const connectLocal = (spec: LocalSpec, timeout: number, makeClient: () => Client) =>
  Effect.gen(function*() {
    if (!isDirectory(spec.cwd)) {
      return yield* new ConnectFailure({ reason: `the working directory ${spec.cwd} does not exist`, auth: false })
    }
    const transport = new ChildProcessTransport(spec)
    const client = makeClient()
    // Closing the transport kills the process (and its process group): on a failed attempt and on scope close.
    yield* Effect.addFinalizer(() =>
      closeClient(client).pipe(Effect.zipRight(Effect.promise(() => transport.close())))
    )
    const result = yield* Effect.either(handshake(client, transport, timeout))
    if (Either.isLeft(result)) {
      const error = result.left
      const reason = transport.spawnError
        ? (transport.spawnError as NodeJS.ErrnoException).code === "ENOENT"
          ? `command not found: ${spec.command}`
          : `cannot start ${spec.command}: ${transport.spawnError.message}`
        : transport.fault !== undefined
        ? transport.fault
        : isTimeout(error)
        ? `the server did not answer initialize within ${timeout} ms`
        : isMcpError(error, "ConnectionClosed")
        ? `the server stopped during initialize: ${transport.describeExit()}`
        : `initialize failed: ${errorText(error)}`
      return yield* new ConnectFailure({ reason, auth: false })
    }
    return { client, describeClose: () => transport.describeExit() }
  })

export const connectRemote = (
  name: string,
  spec: RemoteSpec,
  timeout: number,
  makeClient: () => Client,
  credentials: string
) =>
  Effect.gen(function*() {
    let url: URL
    try {
      url = new URL(spec.url)
    } catch {
      return yield* new ConnectFailure({ reason: `invalid url: ${spec.url}`, auth: false, final: true })
    }
    const describe = (error: unknown) =>
      isTimeout(error) ? `no answer to initialize within ${timeout} ms` : errorText(error)

    let authProvider: McpOAuth.McpOAuthProvider | undefined
    const oauth = spec.oauth
    if (oauth !== false) {
      const callback = McpOAuth.callbackOf(name, oauth)
      if (Either.isLeft(callback)) return yield* new ConnectFailure({ reason: callback.left.detail, auth: false, final: true })
      const readable = McpOAuth.checkFile(credentials)
      if (Either.isLeft(readable)) return yield* new ConnectFailure({ reason: readable.left, auth: false, final: true })
      authProvider = new McpOAuth.McpOAuthProvider({
        server: name,
        serverUrl: spec.url,
        file: credentials,
        oauth,
        callback: callback.right
      })
      yield* McpOAuth.refreshIfExpired(authProvider, spec.url, timeout)
    }
    // Whether the server's last answer was a 401: the SDK's own error after a failed auth attempt varies.
    let unauthorized = false
    const watch: FetchLike = async (input, init) => {
      const response = await fetch(input, init)
      if (String(input) === url.href) unauthorized = response.status === 401
      return response
    }
    const refused = (error: unknown) => isAuthError(error) || unauthorized
    const authFailure = spec.oauth === false
      ? new ConnectFailure({
        reason: "the server answered HTTP 401 (unauthorized) and OAuth is off for it (oauth: false); check the credentials in its headers",
        auth: false,
        final: true
      })
      : new ConnectFailure({
        reason: `the server requires authorization (HTTP 401); run \`agent mcp auth ${name}\``,
        auth: true
      })
    const transportOptions = {
      requestInit: { headers: spec.headers },
      fetch: watch,
      ...(authProvider ? { authProvider } : {})
    }

    const streamable = new (McpSdkLoader.sdk().StreamableHTTPClientTransport)(url, transportOptions)
    const first = makeClient()
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => streamable.terminateSession().catch(() => undefined)).pipe(
        Effect.timeout("1 second"),
        Effect.ignore,
        Effect.zipRight(closeClient(first))
      )
    )
    const viaStreamable = yield* Effect.either(handshake(first, streamable, timeout))
    if (Either.isRight(viaStreamable)) return { client: first, describeClose: () => "the connection was closed" }
    // An auth error stops the fallback: the SSE endpoint would want the same credentials.
    if (refused(viaStreamable.left)) return yield* authFailure
    // A server that does not answer at all will not answer over SSE either.
    if (isTimeout(viaStreamable.left)) {
      return yield* new ConnectFailure({ reason: describe(viaStreamable.left), auth: false })
    }

    const sse = new (McpSdkLoader.sdk().SSEClientTransport)(url, transportOptions)
    const second = makeClient()
    yield* Effect.addFinalizer(() => closeClient(second))
    const viaSse = yield* Effect.either(handshake(second, sse, timeout))
    if (Either.isRight(viaSse)) return { client: second, describeClose: () => "the connection was closed" }
    if (refused(viaSse.left)) return yield* authFailure
    return yield* new ConnectFailure({
      reason: `Streamable HTTP: ${describe(viaStreamable.left)}; SSE: ${describe(viaSse.left)}`,
      auth: false
    })
  })

const isDirectory = (dir: string) => {
  try {
    return fs.statSync(dir).isDirectory()
  } catch {
    return false
  }
}
