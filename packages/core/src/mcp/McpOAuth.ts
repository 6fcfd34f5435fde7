import type { McpOAuthConfig } from "@agent/domain"
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js"
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens
} from "@modelcontextprotocol/sdk/shared/auth.js"
import { Deferred, Duration, Effect, Either, Exit, Schema } from "effect"
import * as McpSdkLoader from "./McpSdkLoader.js"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"

/**
 * OAuth for remote MCP servers, on the SDK's client side (`auth()` does discovery, dynamic
 * client registration, PKCE, the code exchange and refreshes): where credentials are kept,
 * the `OAuthClientProvider` over them, the loopback callback and the interactive flow.
 */

export type OAuthSettings = typeof McpOAuthConfig.Type

/** OpenCode's callback address: `http://127.0.0.1:19876/mcp/oauth/callback`. */
export const DEFAULT_CALLBACK_PORT = 19_876
export const DEFAULT_CALLBACK_PATH = "/mcp/oauth/callback"
/** How long the interactive flow waits for the browser to come back. */
export const DEFAULT_FLOW_TIMEOUT_MS = 5 * 60_000

/** The credentials file in the data dir; readable by its owner only. */
export const credentialsFile = (dataDir: string) => path.join(dataDir, "mcp-auth.json")

/** Authorizing with an MCP server failed, or its stored credentials cannot be used. */
export class McpAuthError extends Schema.TaggedError<McpAuthError>()("McpAuthError", {
  server: Schema.String,
  detail: Schema.String
}) {
  override get message() {
    return this.detail
  }
}

// ---------------------------------------------------------------------------------------------
// The credentials file

const StoredTokens = Schema.Struct({
  access_token: Schema.String,
  token_type: Schema.String,
  expires_in: Schema.optional(Schema.Number),
  refresh_token: Schema.optional(Schema.String),
  scope: Schema.optional(Schema.String),
  id_token: Schema.optional(Schema.String),
  issuer: Schema.optional(Schema.String)
})

/** What registration returned, kept whole (redirect URIs, grant types, ...). */
const StoredClient = Schema.Struct(
  {
    client_id: Schema.String,
    client_secret: Schema.optional(Schema.String),
    client_id_issued_at: Schema.optional(Schema.Number),
    client_secret_expires_at: Schema.optional(Schema.Number),
    issuer: Schema.optional(Schema.String)
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)

/** One server's credentials; they only count for the URL they were obtained for. */
const StoredEntry = Schema.Struct({
  serverUrl: Schema.String,
  tokens: Schema.optional(StoredTokens),
  /** When the tokens were saved (epoch ms), so `expires_in` can be read as a date. */
  tokensSavedAt: Schema.optional(Schema.Number),
  client: Schema.optional(StoredClient)
})
export type StoredEntry = typeof StoredEntry.Type

const StoredFile = Schema.parseJson(Schema.Record({ key: Schema.String, value: StoredEntry }))
const decodeFile = Schema.decodeUnknownEither(StoredFile)

/** The file exists but is not what this runtime wrote; it is left alone. */
class UnreadableCredentials extends Error {}

const readAll = (file: string): Record<string, StoredEntry> => {
  let text: string
  try {
    text = fs.readFileSync(file, "utf8")
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return {}
    throw new UnreadableCredentials(`cannot read the MCP credentials file ${file}: ${(error as Error).message}`)
  }
  const decoded = decodeFile(text)
  if (Either.isLeft(decoded)) {
    throw new UnreadableCredentials(
      `the MCP credentials file ${file} is not valid (fix or delete it, then authorize again): ${decoded.left.message.split("\n")[0]}`
    )
  }
  return { ...decoded.right }
}

/** Replaces the file atomically, created with mode 0600 (and its directory 0700). */
const writeAll = (file: string, all: Record<string, StoredEntry>) => {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
  const temp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`
  try {
    fs.writeFileSync(temp, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 })
    // The mode given at creation is filtered by the umask; make sure of it.
    fs.chmodSync(temp, 0o600)
    fs.renameSync(temp, file)
  } catch (error) {
    fs.rmSync(temp, { force: true })
    throw error
  }
}

/** The stored credentials of `server`, if they were obtained for `serverUrl`. */
export const readEntry = (file: string, server: string, serverUrl: string): StoredEntry | undefined => {
  const entry = readAll(file)[server]
  return entry?.serverUrl === serverUrl ? entry : undefined
}

/**
 * Changes one server's entry (read, change, write back); `undefined` removes it. Credentials
 * for another URL are dropped. A file that cannot be read is never overwritten.
 */
const updateEntry = (
  file: string,
  server: string,
  serverUrl: string,
  change: (entry: StoredEntry) => StoredEntry | undefined
) => {
  const all = readAll(file)
  const current = all[server]
  const next = change(current?.serverUrl === serverUrl ? current : { serverUrl })
  if (next === undefined) delete all[server]
  else all[server] = next
  writeAll(file, all)
}

/** Removes a server's stored credentials; tells whether there were any. */
export const removeEntry = (file: string, server: string): Effect.Effect<boolean, McpAuthError> =>
  Effect.try({
    try: () => {
      const all = readAll(file)
      if (!(server in all)) return false
      delete all[server]
      writeAll(file, all)
      return true
    },
    catch: (error) => new McpAuthError({ server, detail: errorText(error) })
  })

/** Fails with a clear message when the file exists but cannot be used. */
export const checkFile = (file: string): Either.Either<void, string> => {
  try {
    readAll(file)
    return Either.right(undefined)
  } catch (error) {
    return Either.left(errorText(error))
  }
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error))

// ---------------------------------------------------------------------------------------------
// The provider

export interface Callback {
  /** The redirect URI registered with the server and sent with the authorization request. */
  readonly redirectUrl: string
  /** Where the loopback listener binds. */
  readonly host: string
  readonly port: number
  readonly path: string
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"])

/** The callback address from `oauth.redirectUri` / `oauth.callbackPort`, or OpenCode's default. */
export const callbackOf = (server: string, oauth: OAuthSettings | undefined): Either.Either<Callback, McpAuthError> => {
  if (oauth?.redirectUri === undefined) {
    const port = oauth?.callbackPort ?? DEFAULT_CALLBACK_PORT
    return Either.right({
      redirectUrl: `http://127.0.0.1:${port}${DEFAULT_CALLBACK_PATH}`,
      host: "127.0.0.1",
      port,
      path: DEFAULT_CALLBACK_PATH
    })
  }
  let url: URL
  try {
    url = new URL(oauth.redirectUri)
  } catch {
    return Either.left(
      new McpAuthError({ server, detail: `mcp.${server}.oauth.redirectUri is not a URL: ${oauth.redirectUri}` })
    )
  }
  const port = oauth.callbackPort ?? (url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port))
  // A redirect through some other host still has to end at the local listener.
  const host = LOOPBACK.has(url.hostname) ? url.hostname.replace(/^\[|\]$/g, "") : "127.0.0.1"
  return Either.right({ redirectUrl: url.href, host, port, path: url.pathname })
}

export interface ProviderOptions {
  readonly server: string
  readonly serverUrl: string
  readonly file: string
  readonly oauth: OAuthSettings | undefined
  readonly callback: Callback
  /**
   * Set for the interactive flow: the state to send, and where the authorization URL goes.
   * Without it the provider only uses (and refreshes) what is stored: it registers no client
   * and sends nobody to a browser, so a background connection ends in `needs_auth` instead.
   */
  readonly flow?: { readonly state: string; readonly onRedirect: (url: URL) => void }
}

/**
 * The SDK's `OAuthClientProvider` over the credentials file. The transports call it on a 401
 * (and `auth()` refreshes expired tokens through it); the flow calls `auth()` with it directly.
 */
export class McpOAuthProvider implements OAuthClientProvider {
  /** Only in the interactive flow: a background connection must not register clients. */
  saveClientInformation?: (information: OAuthClientInformationMixed) => void

  private verifier: string | undefined
  /** In the flow, what it obtained; stored tokens are neither sent nor refreshed until it succeeds. */
  private flowTokens: OAuthTokens | undefined
  private flowClient: OAuthClientInformationMixed | undefined

  constructor(private readonly options: ProviderOptions) {
    if (options.flow) {
      this.saveClientInformation = (information) => {
        this.flowClient = information
        if (options.oauth?.clientId !== undefined) return
        updateEntry(options.file, options.server, options.serverUrl, (entry) => ({
          ...entry,
          client: information as typeof StoredClient.Type
        }))
      }
    }
  }

  get redirectUrl(): string {
    return this.options.callback.redirectUrl
  }

  get clientMetadata(): OAuthClientMetadata {
    const oauth = this.options.oauth
    return {
      redirect_uris: [this.options.callback.redirectUrl],
      client_name: "agent",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: oauth?.clientSecret !== undefined ? "client_secret_post" : "none",
      ...(oauth?.scope === undefined ? {} : { scope: oauth.scope })
    }
  }

  state(): string {
    return this.options.flow?.state ?? randomState()
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    const oauth = this.options.oauth
    if (oauth?.clientId !== undefined) {
      return { client_id: oauth.clientId, ...(oauth.clientSecret === undefined ? {} : { client_secret: oauth.clientSecret }) }
    }
    const client = this.flowClient ?? this.storedEntry()?.client
    // A client whose secret has expired has to register again.
    const expires = client?.client_secret_expires_at
    if (client && expires !== undefined && expires !== 0 && expires * 1000 < Date.now()) return undefined
    return client
  }

  tokens(): OAuthTokens | undefined {
    if (this.options.flow) return this.flowTokens
    return this.storedEntry()?.tokens
  }

  saveTokens(tokens: OAuthTokens): void {
    if (this.options.flow) this.flowTokens = tokens
    updateEntry(this.options.file, this.options.server, this.options.serverUrl, (entry) => ({
      ...entry,
      tokens,
      tokensSavedAt: Date.now()
    }))
  }

  redirectToAuthorization(authorizationUrl: URL): void {
    this.options.flow?.onRedirect(authorizationUrl)
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.verifier = codeVerifier
  }

  codeVerifier(): string {
    if (this.verifier === undefined) throw new Error("no PKCE code verifier was saved for this authorization")
    return this.verifier
  }

  invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery"): void {
    if (scope === "verifier" || scope === "all") this.verifier = undefined
    if (scope === "verifier" || scope === "discovery") return
    const dropClient = scope === "all" || scope === "client"
    const dropTokens = scope === "all" || scope === "tokens"
    if (dropClient) this.flowClient = undefined
    if (dropTokens) this.flowTokens = undefined
    // In the flow only a rejected client leaves the file: a failed attempt must not cost the user tokens that still work.
    const removeTokens = dropTokens && !this.options.flow
    if (!dropClient && !removeTokens) return
    updateEntry(this.options.file, this.options.server, this.options.serverUrl, (entry) => {
      const next: StoredEntry = {
        serverUrl: entry.serverUrl,
        ...(dropClient || entry.client === undefined ? {} : { client: entry.client }),
        ...(removeTokens || entry.tokens === undefined
          ? {}
          : { tokens: entry.tokens, ...(entry.tokensSavedAt === undefined ? {} : { tokensSavedAt: entry.tokensSavedAt }) })
      }
      return next.client === undefined && next.tokens === undefined ? undefined : next
    })
  }

  /** What is stored for this server and URL (throws when the file cannot be read). */
  storedEntry(): StoredEntry | undefined {
    return readEntry(this.options.file, this.options.server, this.options.serverUrl)
  }
}

/** Whether the stored access token has outlived its `expires_in` (10 s early, for clock skew). */
export const isExpired = (entry: StoredEntry | undefined, now = Date.now()): boolean =>
  entry?.tokens?.expires_in !== undefined && entry.tokensSavedAt !== undefined &&
  entry.tokensSavedAt + entry.tokens.expires_in * 1000 - 10_000 <= now

/**
 * Before connecting: an access token known to be expired is refreshed first, instead of
 * being sent and refused. Whatever goes wrong here, the connection finds out by its 401.
 */
export const refreshIfExpired = (provider: McpOAuthProvider, serverUrl: string, timeout: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    const entry = provider.storedEntry()
    if (!isExpired(entry) || entry?.tokens?.refresh_token === undefined) return
    const { auth } = yield* McpSdkLoader.load
    yield* Effect.tryPromise(() => auth(provider, { serverUrl })).pipe(Effect.timeout(Duration.millis(timeout)), Effect.ignore)
  })

const randomState = () => randomBytes(24).toString("base64url")

// ---------------------------------------------------------------------------------------------
// The loopback callback

const page = (title: string, text: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head>` +
  `<body style="font-family: sans-serif; margin: 3em"><h1>${title}</h1><p>${escapeHtml(text)}</p></body></html>`

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`)

/**
 * Listens on the callback address until the scope closes; `code` completes with the
 * authorization code of the redirect that carries `state`, or fails with the error the
 * authorization server sent. Requests with another state are answered and ignored.
 */
const listen = (server: string, callback: Callback, state: string) =>
  Effect.gen(function*() {
    const code = yield* Deferred.make<string, McpAuthError>()
    const listener = yield* Effect.acquireRelease(
      Effect.async<http.Server, McpAuthError>((resume) => {
        const httpServer = http.createServer((request, response) => {
          const url = new URL(request.url ?? "/", "http://callback")
          if (request.method !== "GET" || url.pathname !== callback.path) {
            response.writeHead(404, { "content-type": "text/plain" }).end("Not found")
            return
          }
          const send = (status: number, title: string, text: string) =>
            response.writeHead(status, { "content-type": "text/html; charset=utf-8" }).end(page(title, text))
          if (url.searchParams.get("state") !== state) {
            send(400, "Authorization not accepted", "This answer does not belong to the authorization in progress.")
            return
          }
          const error = url.searchParams.get("error")
          if (error !== null) {
            const description = url.searchParams.get("error_description")
            const detail = `The authorization server refused the authorization of ${server}: ${error}${description ? ` (${description})` : ""}.`
            send(400, "Authorization failed", detail)
            Deferred.unsafeDone(code, Exit.fail(new McpAuthError({ server, detail })))
            return
          }
          const value = url.searchParams.get("code")
          if (value === null || value === "") {
            send(400, "Authorization failed", "The answer carries no authorization code.")
            return
          }
          send(200, "Authorization complete", `The MCP server ${server} is authorized. You can close this window.`)
          Deferred.unsafeDone(code, Exit.succeed(value))
        })
        httpServer.once("error", (error: NodeJS.ErrnoException) =>
          resume(Effect.fail(
            new McpAuthError({
              server,
              detail: `Cannot listen for the OAuth callback on ${callback.host}:${callback.port}: ${
                error.code === "EADDRINUSE" ? "the port is in use (set mcp." + server + ".oauth.callbackPort to another)" : error.message
              }.`
            })
          ))
        )
        httpServer.listen(callback.port, callback.host, () => resume(Effect.succeed(httpServer)))
      }),
      (httpServer) =>
        Effect.async<void>((resume) => {
          httpServer.closeAllConnections()
          httpServer.close(() => resume(Effect.void))
        })
    )
    return { code: Deferred.await(code), listener }
  })

// ---------------------------------------------------------------------------------------------
// The interactive flow

export interface FlowOptions {
  readonly server: string
  readonly serverUrl: string
  readonly file: string
  readonly oauth: OAuthSettings | undefined
  /** Receives the authorization URL to show (and open); the flow then waits for the callback. */
  readonly onAuthorizationUrl: (url: string) => Effect.Effect<void>
  readonly timeout?: Duration.DurationInput
}

const describeFailure = (server: string, error: unknown): string => {
  const text = errorText(error)
  if (/does not support dynamic client registration/i.test(text)) {
    return `The authorization server of ${server} does not register clients dynamically; ` +
      `register one and set mcp.${server}.oauth.clientId (and clientSecret).`
  }
  return `Authorizing with the MCP server ${server} failed: ${text}`
}

/**
 * Runs the authorization code flow with PKCE: discovery and (unless a client id is
 * configured) dynamic registration, the authorization URL, the browser's return to the
 * loopback callback, the code exchange. The tokens (and the registered client) are stored.
 */
export const authorize = (options: FlowOptions): Effect.Effect<void, McpAuthError> =>
  Effect.scoped(
    Effect.gen(function*() {
      const { server, serverUrl } = options
      const fail = (error: unknown) => new McpAuthError({ server, detail: describeFailure(server, error) })
      const callback = yield* callbackOf(server, options.oauth)
      const unreadable = checkFile(options.file)
      if (Either.isLeft(unreadable)) return yield* new McpAuthError({ server, detail: unreadable.left })
      const state = randomState()
      const { code } = yield* listen(server, callback, state)
      let redirect: URL | undefined
      const provider = new McpOAuthProvider({
        server,
        serverUrl,
        file: options.file,
        oauth: options.oauth,
        callback,
        flow: { state, onRedirect: (url) => void (redirect = url) }
      })
      const { auth } = yield* McpSdkLoader.load
      const first = yield* Effect.tryPromise({ try: () => auth(provider, { serverUrl }), catch: fail })
      if (first === "AUTHORIZED") return
      if (redirect === undefined) return yield* fail(new Error("the SDK did not produce an authorization URL"))
      yield* options.onAuthorizationUrl(redirect.href)
      const timeout = options.timeout ?? Duration.millis(DEFAULT_FLOW_TIMEOUT_MS)
      const authorizationCode = yield* code.pipe(
        Effect.timeoutFail({
          duration: timeout,
          onTimeout: () =>
            new McpAuthError({
              server,
              detail: `No answer from the browser within ${Duration.format(timeout)}; run the authorization again.`
            })
        })
      )
      const second = yield* Effect.tryPromise({ try: () => auth(provider, { serverUrl, authorizationCode }), catch: fail })
      if (second !== "AUTHORIZED") return yield* fail(new Error("the authorization code was not accepted"))
    })
  )

