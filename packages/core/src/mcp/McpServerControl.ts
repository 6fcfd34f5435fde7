import { Effect, Either, Ref } from "effect"
import * as McpOAuth from "./McpOAuth.js"
import { McpAuthError } from "./McpOAuth.js"
import { configured, type McpState, setStatus, statusOf } from "./McpServerState.js"
import { McpRequestError, type AuthenticateOptions } from "./McpShape.js"
import { restart, stop } from "./McpSupervisor.js"

// What the user does to a server: connect or disconnect it, and the OAuth flow (authorize, log out).

/** The Mcp methods `connect`, `disconnect`, `authenticate` and `logout` over the layer's state. */
export const makeControl = (state: McpState) => {
  const connect = Effect.fn("Mcp.connect")(function*(server: string) {
    const entry = yield* configured(state, server)
    const spec = entry.spec
    if (spec === undefined) {
      return yield* new McpRequestError({
        server: entry.name,
        detail: `The MCP server ${entry.name} cannot connect: its config has neither a command (type local) nor a url (type remote).`
      })
    }
    return yield* entry.lock.withPermits(1)(restart(state, entry, spec))
  })

  const disconnect = Effect.fn("Mcp.disconnect")(function*(server: string) {
    const entry = yield* configured(state, server)
    yield* entry.lock.withPermits(1)(
      stop(entry).pipe(Effect.zipRight(setStatus(state, entry.name, { status: "disabled" })))
    )
  })

  /** The remote spec of a server that can use OAuth. */
  const oauthServer = (server: string) =>
    Effect.gen(function*() {
      const entry = yield* configured(state, server).pipe(
        Effect.mapError((error) => new McpAuthError({ server, detail: error.detail }))
      )
      const spec = entry.spec
      if (spec?.type !== "remote") {
        return yield* new McpAuthError({
          server: entry.name,
          detail: spec === undefined
            ? `The MCP server ${entry.name} has no url in its config; OAuth is for remote servers.`
            : `The MCP server ${entry.name} is a local (stdio) server; OAuth is for remote servers.`
        })
      }
      return { entry, spec }
    })

  const authenticate = Effect.fn("Mcp.authenticate")(function*(server: string, flow: AuthenticateOptions) {
    const { entry, spec } = yield* oauthServer(server)
    const oauth = spec.oauth
    if (oauth === false) {
      return yield* new McpAuthError({
        server: entry.name,
        detail: `OAuth is switched off for the MCP server ${entry.name} (mcp.${entry.name}.oauth is false).`
      })
    }
    return yield* entry.lock.withPermits(1)(
      Effect.gen(function*() {
        const running = (yield* Ref.get(entry.fiber)) !== undefined || entry.enabled
        // No background attempt may touch the stored client while the flow registers one.
        yield* stop(entry)
        const outcome = yield* Effect.either(
          McpOAuth.authorize({
            server: entry.name,
            serverUrl: spec.url,
            file: state.options.credentials,
            oauth,
            onAuthorizationUrl: flow.onAuthorizationUrl,
            ...(flow.timeout === undefined ? {} : { timeout: flow.timeout })
          })
        )
        if (Either.isLeft(outcome)) {
          // The server goes back to what it was doing, with whatever credentials it had.
          if (running) yield* restart(state, entry, spec)
          return yield* outcome.left
        }
        return yield* restart(state, entry, spec)
      })
    )
  })

  const logout = Effect.fn("Mcp.logout")(function*(server: string) {
    const { entry, spec } = yield* oauthServer(server)
    return yield* entry.lock.withPermits(1)(
      Effect.gen(function*() {
        const removed = yield* McpOAuth.removeEntry(state.options.credentials, entry.name)
        const status = (yield* Ref.get(entry.fiber)) !== undefined
          ? yield* restart(state, entry, spec)
          : (yield* statusOf(state, entry.name)) ?? { status: "disabled" as const }
        return { removed, status }
      })
    )
  })

  return { connect, disconnect, authenticate, logout }
}
