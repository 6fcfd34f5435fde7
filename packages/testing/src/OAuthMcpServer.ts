import { InvalidGrantError, InvalidTokenError } from "@modelcontextprotocol/sdk/server/auth/errors.js"
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js"
import type { AuthorizationParams, OAuthServerProvider } from "@modelcontextprotocol/sdk/server/auth/provider.js"
import { getOAuthProtectedResourceMetadataUrl, mcpAuthRouter } from "@modelcontextprotocol/sdk/server/auth/router.js"
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import type { OAuthClientInformationFull, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js"
import { Effect } from "effect"
import express from "express"
import { randomUUID } from "node:crypto"
import type * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as z from "zod"

/**
 * An authorization server that approves every request at once (the user is always logged in
 * and always consents), issuing access tokens that live `accessTokenSeconds` and refresh
 * tokens that rotate on every use.
 */
export class ApprovingProvider implements OAuthServerProvider {
  readonly clients = new Map<string, OAuthClientInformationFull>()
  readonly codes = new Map<string, { client: OAuthClientInformationFull; params: AuthorizationParams }>()
  readonly accessTokens = new Map<string, AuthInfo>()
  readonly refreshTokens = new Map<string, { clientId: string; scopes: Array<string>; resource?: URL }>()
  /** What the server was asked to do, in order: register, authorize, code, refresh. */
  readonly log: Array<string> = []

  constructor(private readonly accessTokenSeconds: number) {}

  get clientsStore() {
    return {
      getClient: (clientId: string) => this.clients.get(clientId),
      registerClient: (client: Omit<OAuthClientInformationFull, "client_id" | "client_id_issued_at">) => {
        const full: OAuthClientInformationFull = { ...client, client_id: randomUUID(), client_id_issued_at: Math.floor(Date.now() / 1000) }
        this.clients.set(full.client_id, full)
        this.log.push("register")
        return full
      }
    }
  }

  async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: express.Response) {
    this.log.push("authorize")
    const code = randomUUID()
    this.codes.set(code, { client, params })
    const target = new URL(params.redirectUri)
    target.searchParams.set("code", code)
    if (params.state !== undefined) target.searchParams.set("state", params.state)
    res.redirect(target.href)
  }

  async challengeForAuthorizationCode(_client: OAuthClientInformationFull, code: string) {
    const entry = this.codes.get(code)
    if (!entry) throw new InvalidGrantError("unknown authorization code")
    return entry.params.codeChallenge
  }

  async exchangeAuthorizationCode(client: OAuthClientInformationFull, code: string): Promise<OAuthTokens> {
    const entry = this.codes.get(code)
    if (!entry || entry.client.client_id !== client.client_id) throw new InvalidGrantError("unknown authorization code")
    this.codes.delete(code)
    this.log.push("code")
    return this.issue(client.client_id, entry.params.scopes ?? [], entry.params.resource)
  }

  async exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string): Promise<OAuthTokens> {
    const entry = this.refreshTokens.get(refreshToken)
    if (!entry || entry.clientId !== client.client_id) throw new InvalidGrantError("unknown refresh token")
    this.refreshTokens.delete(refreshToken)
    this.log.push("refresh")
    return this.issue(client.client_id, entry.scopes, entry.resource)
  }

  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const info = this.accessTokens.get(token)
    if (!info || (info.expiresAt ?? 0) < Date.now() / 1000) throw new InvalidTokenError("invalid or expired token")
    return info
  }

  /** Every access token issued so far stops working (refresh tokens still do). */
  expireAccessTokens() {
    for (const [token, info] of this.accessTokens) this.accessTokens.set(token, { ...info, expiresAt: 0 })
  }

  private issue(clientId: string, scopes: Array<string>, resource: URL | undefined): OAuthTokens {
    const access = randomUUID()
    const refresh = randomUUID()
    this.accessTokens.set(access, {
      token: access,
      clientId,
      scopes,
      expiresAt: Math.floor(Date.now() / 1000) + this.accessTokenSeconds,
      ...(resource ? { resource } : {})
    })
    this.refreshTokens.set(refresh, { clientId, scopes, ...(resource ? { resource } : {}) })
    return {
      access_token: access,
      token_type: "bearer",
      expires_in: this.accessTokenSeconds,
      refresh_token: refresh,
      scope: scopes.join(" ")
    }
  }
}

/** An MCP server with one tool, `whoami`, that answers with the OAuth client the call came from. */
const mcpServer = () => {
  const server = new McpServer({ name: "protected", version: "1.0.0" })
  server.registerTool(
    "whoami",
    { description: "Tells which OAuth client is calling", inputSchema: { greeting: z.string().optional() } },
    async ({ greeting }, extra) => ({
      content: [{ type: "text", text: `${greeting ?? "hello"} client ${extra.authInfo?.clientId ?? "nobody"}` }]
    })
  )
  return server
}

export interface Running {
  /** The MCP endpoint: `http://127.0.0.1:<port>/mcp`. */
  readonly url: string
  readonly provider: ApprovingProvider
  /** `METHOD path status` of every answered request, with `+bearer` when it carried a token. */
  readonly requests: Array<string>
}

/**
 * The SDK's own server side on a loopback port: its auth router (metadata, dynamic
 * registration, authorize, token), its bearer middleware in front of a Streamable HTTP MCP
 * endpoint. Closed when the scope closes.
 */
export const start = (options: { readonly accessTokenSeconds?: number } = {}) =>
  Effect.acquireRelease(
    Effect.async<Running & { readonly server: http.Server }>((resume) => {
      const provider = new ApprovingProvider(options.accessTokenSeconds ?? 3_600)
      const requests: Array<string> = []
      const app = express()
      app.use((request, response, next) => {
        const line = `${request.method} ${request.path}${request.headers.authorization ? " +bearer" : ""}`
        response.on("finish", () => requests.push(`${line} ${response.statusCode}`))
        next()
      })
      const server = app.listen(0, "127.0.0.1", () => {
        const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
        const url = `${base}/mcp`
        app.use(mcpAuthRouter({
          provider,
          issuerUrl: new URL(base),
          resourceServerUrl: new URL(url),
          scopesSupported: ["mcp:tools"]
        }))
        const bearer = requireBearerAuth({
          verifier: provider,
          resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(new URL(url))
        })
        app.post("/mcp", bearer, express.json(), async (request, response) => {
          const mcp = mcpServer()
          const transport = new StreamableHTTPServerTransport({})
          response.on("close", () => {
            void transport.close()
            void mcp.close()
          })
          await mcp.connect(transport)
          await transport.handleRequest(request, response, request.body)
        })
        // Stateless: no standalone SSE stream and no session to end.
        app.get("/mcp", bearer, (_request, response) => void response.status(405).end())
        app.delete("/mcp", bearer, (_request, response) => void response.status(405).end())
        resume(Effect.succeed({ url, provider, requests, server }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

/**
 * Plays the user's browser: follows the authorization URL to the authorization server,
 * which redirects (the user approves at once) to the loopback callback, and loads that.
 */
export const followInBrowser = (authorizationUrl: string) =>
  Effect.promise(async () => {
    const approval = await fetch(authorizationUrl, { redirect: "manual" })
    const location = approval.headers.get("location")
    if (approval.status !== 302 || !location) {
      throw new Error(`the authorization server answered ${approval.status}: ${await approval.text()}`)
    }
    const callback = await fetch(location)
    return { location, status: callback.status, body: await callback.text() }
  })
