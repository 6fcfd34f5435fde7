import { OAuthMcpServer } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { freePort, makeContext, runTool, startMcp, toolById } from "./helpers.js"

const needsAuth = {
  status: "needs_auth",
  error: "the server requires authorization (HTTP 401); run `agent mcp auth protected`"
}

/** The stored entry of the server `protected`, read as the user would. */
const storedEntry = (file: string) => JSON.parse(fs.readFileSync(file, "utf8")).protected

/** An OAuth-protected server and the `Mcp` layer configured for it, before any authorization. */
const setup = (options: { readonly accessTokenSeconds?: number } = {}) =>
  Effect.gen(function*() {
    const server = yield* OAuthMcpServer.start(options)
    const callbackPort = yield* freePort
    const harness = yield* startMcp({ mcp: { protected: { type: "remote", url: server.url, oauth: { callbackPort } } } })
    yield* harness.mcp.ready("10 seconds")
    return { server, callbackPort, ...harness }
  })

/** Runs `agent mcp auth`'s flow, playing the browser with fetch; returns the URL and what the browser saw. */
const authorizeInBrowser = (mcp: Effect.Effect.Success<ReturnType<typeof setup>>["mcp"]) =>
  Effect.gen(function*() {
    const urls: Array<string> = []
    let browser: Fiber.RuntimeFiber<{ location: string; status: number; body: string }> | undefined
    const status = yield* mcp.authenticate("protected", {
      onAuthorizationUrl: (url) =>
        Effect.gen(function*() {
          urls.push(url)
          browser = yield* Effect.fork(OAuthMcpServer.followInBrowser(url))
        })
    })
    return { status, urls, page: yield* Fiber.join(browser!) }
  })

describe("OAuth for remote MCP servers", () => {
  it.scopedLive("needs_auth first; the flow registers, authorizes through the loopback callback and stores tokens 0600; tools then work", () =>
    Effect.gen(function*() {
      const { server, callbackPort, mcp, box } = yield* setup()
      expect((yield* mcp.status()).protected).toEqual(needsAuth)
      expect(yield* mcp.tools()).toEqual([])
      // A background connection neither registers a client nor starts an authorization.
      expect(server.provider.log).toEqual([])
      expect(mcp.credentialsFile).toBe(path.join(box.instance.paths.data, "mcp-auth.json"))
      expect(fs.existsSync(mcp.credentialsFile)).toBe(false)

      const { status, urls, page } = yield* authorizeInBrowser(mcp)
      expect(urls).toHaveLength(1)
      const authorization = new URL(urls[0]!)
      expect(`${authorization.origin}${authorization.pathname}`).toBe(new URL("/authorize", server.url).href)
      expect(authorization.searchParams.get("response_type")).toBe("code")
      expect(authorization.searchParams.get("code_challenge_method")).toBe("S256")
      expect(authorization.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(authorization.searchParams.get("redirect_uri")).toBe(`http://127.0.0.1:${callbackPort}/mcp/oauth/callback`)
      expect(authorization.searchParams.get("resource")).toBe(server.url)
      expect(authorization.searchParams.get("state")!.length).toBeGreaterThan(20)
      expect(page.location.startsWith(`http://127.0.0.1:${callbackPort}/mcp/oauth/callback?code=`)).toBe(true)
      expect(page.status).toBe(200)
      expect(page.body).toContain("Authorization complete")

      expect(status).toEqual({ status: "connected" })
      expect(server.provider.log).toEqual(["register", "authorize", "code"])

      const file = mcp.credentialsFile
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)
      const [clientId] = [...server.provider.clients.keys()]
      const entry = storedEntry(file)
      expect(entry.serverUrl).toBe(server.url)
      expect(entry.client.client_id).toBe(clientId)
      expect(entry.client.redirect_uris).toEqual([`http://127.0.0.1:${callbackPort}/mcp/oauth/callback`])
      expect(server.provider.accessTokens.has(entry.tokens.access_token)).toBe(true)
      expect(server.provider.refreshTokens.has(entry.tokens.refresh_token)).toBe(true)

      const { context } = makeContext()
      const whoami = yield* toolById(mcp, "protected_whoami")
      expect((yield* runTool(whoami, { greeting: "hi" }, context)).output).toBe(`hi client ${clientId}`)

      // disconnect / connect on demand: the stored tokens are used, nothing is asked again.
      yield* mcp.disconnect("protected")
      expect((yield* mcp.status()).protected).toEqual({ status: "disabled" })
      expect(yield* mcp.tools()).toEqual([])
      expect(yield* mcp.connect("protected")).toEqual({ status: "connected" })
      expect((yield* runTool(yield* toolById(mcp, "protected_whoami"), {}, context)).output).toBe(`hello client ${clientId}`)
      expect(server.provider.log).toEqual(["register", "authorize", "code"])
    }), 60_000)

  it.scopedLive("a token the server no longer accepts is refreshed, mid-session and on reconnect", () =>
    Effect.gen(function*() {
      const { server, mcp } = yield* setup()
      yield* authorizeInBrowser(mcp)
      const file = mcp.credentialsFile
      const first = storedEntry(file).tokens
      const { context } = makeContext()

      server.provider.expireAccessTokens()
      const whoami = yield* toolById(mcp, "protected_whoami")
      expect((yield* runTool(whoami, {}, context)).output).toMatch(/^hello client /)
      const second = storedEntry(file).tokens
      expect(second.access_token).not.toBe(first.access_token)
      expect(second.refresh_token).not.toBe(first.refresh_token)
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)

      server.provider.expireAccessTokens()
      expect(yield* mcp.connect("protected")).toEqual({ status: "connected" })
      const third = storedEntry(file).tokens
      expect(third.access_token).not.toBe(second.access_token)
      expect(server.provider.log).toEqual(["register", "authorize", "code", "refresh", "refresh"])
      expect((yield* runTool(yield* toolById(mcp, "protected_whoami"), {}, context)).output).toMatch(/^hello client /)
    }), 60_000)

  it.scopedLive("a token known to be expired is refreshed before connecting, so it is never sent", () =>
    Effect.gen(function*() {
      // Tokens that live 5 s are inside the 10 s margin: expired as far as the client is concerned.
      const { server, mcp } = yield* setup({ accessTokenSeconds: 5 })
      yield* authorizeInBrowser(mcp)
      expect(server.provider.log).toEqual(["register", "authorize", "code", "refresh"])
      // From the code exchange on, every request to the MCP endpoint carried a token it accepted.
      const codeExchange = server.requests.indexOf("POST /token 200")
      const mcpRequests = server.requests.slice(codeExchange).filter((line) => line.startsWith("POST /mcp"))
      expect(mcpRequests.length).toBeGreaterThan(0)
      expect(mcpRequests.filter((line) => !/^POST \/mcp \+bearer 20[02]$/.test(line))).toEqual([])
      expect((yield* mcp.status()).protected).toEqual({ status: "connected" })
    }), 60_000)

  it.scopedLive("a refused authorization fails clearly and keeps the tokens that work", () =>
    Effect.gen(function*() {
      const { server, mcp } = yield* setup()
      yield* authorizeInBrowser(mcp)
      const before = fs.readFileSync(mcp.credentialsFile, "utf8")

      const error = yield* Effect.flip(mcp.authenticate("protected", {
        onAuthorizationUrl: (url) =>
          Effect.promise(async () => {
            // The user says no: the authorization server sends the browser back with an error.
            const parameters = new URL(url).searchParams
            const callback = new URL(parameters.get("redirect_uri")!)
            callback.searchParams.set("error", "access_denied")
            callback.searchParams.set("error_description", "the user declined")
            callback.searchParams.set("state", parameters.get("state")!)
            await fetch(callback)
          })
      }))
      expect(error.message).toBe(
        "The authorization server refused the authorization of protected: access_denied (the user declined)."
      )
      expect(fs.readFileSync(mcp.credentialsFile, "utf8")).toBe(before)
      expect((yield* mcp.status()).protected).toEqual({ status: "connected" })
      // The browser never got to the server: nothing was asked of it.
      expect(server.provider.log).toEqual(["register", "authorize", "code"])
    }), 60_000)

  it.scopedLive("logout forgets the credentials and the server needs auth again", () =>
    Effect.gen(function*() {
      const { mcp } = yield* setup()
      yield* authorizeInBrowser(mcp)
      expect(yield* mcp.logout("protected")).toEqual({ removed: true, status: needsAuth })
      expect(JSON.parse(fs.readFileSync(mcp.credentialsFile, "utf8"))).toEqual({})
      expect(yield* mcp.logout("protected")).toEqual({ removed: false, status: needsAuth })
    }), 60_000)

  it.scopedLive("oauth: false makes a 401 final: no discovery, no auth flow", () =>
    Effect.gen(function*() {
      const server = yield* OAuthMcpServer.start()
      const { mcp } = yield* startMcp({ mcp: { keyed: { type: "remote", url: server.url, oauth: false } } })
      yield* mcp.ready("10 seconds")
      expect((yield* mcp.status()).keyed).toEqual({
        status: "failed",
        error: "the server answered HTTP 401 (unauthorized) and OAuth is off for it (oauth: false); check the credentials in its headers"
      })
      expect(server.requests).toEqual(["POST /mcp 401"])
      const error = yield* Effect.flip(mcp.authenticate("keyed", { onAuthorizationUrl: () => Effect.void }))
      expect(error.message).toBe("OAuth is switched off for the MCP server keyed (mcp.keyed.oauth is false).")
    }), 30_000)

  it.scopedLive("unknown and local servers get a clear error from the flow", () =>
    Effect.gen(function*() {
      const { mcp } = yield* startMcp({ mcp: { local: { type: "local", command: ["node", "-e", ""], enabled: false } } })
      const unknown = yield* Effect.flip(mcp.authenticate("nope", { onAuthorizationUrl: () => Effect.void }))
      expect(unknown.message).toBe("There is no MCP server named nope. Configured servers: local.")
      const local = yield* Effect.flip(mcp.authenticate("local", { onAuthorizationUrl: () => Effect.void }))
      expect(local.message).toBe("The MCP server local is a local (stdio) server; OAuth is for remote servers.")
    }), 30_000)

  it.scopedLive("a credentials file that cannot be read is reported and left alone", () =>
    Effect.gen(function*() {
      const server = yield* OAuthMcpServer.start()
      const { mcp, box } = yield* startMcp({ mcp: { protected: { type: "remote", url: server.url } } })
      box.write("home/.local/share/agent/mcp-auth.json", "{ not json")
      expect(mcp.credentialsFile).toBe(box.path("home/.local/share/agent/mcp-auth.json"))
      const status = yield* mcp.connect("protected")
      expect(status.status).toBe("failed")
      expect(status.error).toMatch(/^the MCP credentials file .*mcp-auth\.json is not valid \(fix or delete it, then authorize again\): /)
      const error = yield* Effect.flip(mcp.authenticate("protected", { onAuthorizationUrl: () => Effect.void }))
      expect(error.message).toBe(status.error)
      expect(fs.readFileSync(mcp.credentialsFile, "utf8")).toBe("{ not json")
    }), 30_000)
})
