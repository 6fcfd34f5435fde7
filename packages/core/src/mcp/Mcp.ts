import type { McpServerStatus } from "@agent/domain"
import { Context, Deferred, Duration, Effect, Layer, Option, Ref, type Scope } from "effect"
import { ConfigService } from "../config/ConfigService.js"
import { Bus } from "../runtime/Bus.js"
import { Instance } from "../runtime/Instance.js"
import { Sandbox } from "../sandbox/Sandbox.js"
import { makeCatalog } from "./McpCatalog.js"
import * as McpOAuth from "./McpOAuth.js"
import { McpAuthError } from "./McpOAuth.js"
import { makeState, type ServiceOptions } from "./McpServerState.js"
import { makeControl } from "./McpServerControl.js"
import type { McpShape } from "./McpShape.js"
import { startAll } from "./McpSupervisor.js"
import { makeTools } from "./McpToolCalls.js"

// The Mcp service: its Tag, its layer and the wiring of its parts. The parts live beside it:
// McpConnect (transports), McpServerState (the layer's state), McpSupervisor (connect and
// reconnect), McpToolCalls (tools), McpCatalog (prompts, resources), McpServerControl (connect, OAuth).

export { DEFAULT_TIMEOUT_MS } from "./McpServerState.js"
/** How long the first step waits for servers by default; `AGENT_MCP_GRACE_MS` overrides it. */
export const DEFAULT_GRACE_MS = 3_000

export type { McpServerStatus }
export * from "./McpShape.js"
export { McpAuthError }

/**
 * The MCP servers of the configuration (`mcp.<name>`). They connect in parallel in the
 * background when the layer is built and reconnect after a crash; `tools()` always answers
 * with what is connected now, so a slow or broken server never holds a run up for longer
 * than the grace period the caller gives `ready`.
 */
export class Mcp extends Context.Tag("@agent/core/Mcp")<Mcp, McpShape>() {
  static readonly layer: Layer.Layer<Mcp, never, ConfigService | Instance | Bus> = Layer.scoped(
    Mcp,
    Effect.gen(function*() {
      const config = yield* (yield* ConfigService).get()
      const instance = yield* Instance
      const bus = yield* Bus
      // Only servers configured with `sandbox` use it; a composition without one refuses to start those.
      const sandbox = yield* Effect.serviceOption(Sandbox)
      return yield* makeService({
        servers: config.mcp ?? {},
        ...(Option.isSome(sandbox) ? { sandbox: { service: sandbox.value, defaults: config.sandbox } } : {}),
        ...(config.experimental?.mcp_timeout === undefined ? {} : { callTimeout: config.experimental.mcp_timeout }),
        credentials: McpOAuth.credentialsFile(instance.paths.data),
        instance,
        bus
      })
    })
  )
}

const makeService = (options: ServiceOptions): Effect.Effect<Mcp["Type"], never, Scope.Scope> =>
  Effect.gen(function*() {
    const state = yield* makeState(options)
    yield* startAll(state)

    const defaultGrace = graceFromEnv(options.instance.env.AGENT_MCP_GRACE_MS)
    const ready = Effect.fn("Mcp.ready")(function*(grace?: Duration.DurationInput) {
      yield* Effect.forEach(
        state.entries,
        (entry) => Effect.flatMap(Ref.get(entry.settled), Deferred.await),
        { concurrency: "unbounded", discard: true }
      ).pipe(
        Effect.timeout(grace ?? Duration.millis(defaultGrace)),
        Effect.ignore
      )
    })

    const status = Effect.fn("Mcp.status")(function*() {
      return yield* Ref.get(state.statuses)
    })

    return {
      tools: makeTools(state),
      ready,
      status,
      ...makeCatalog(state),
      ...makeControl(state),
      credentialsFile: options.credentials
    }
  })

const graceFromEnv = (value: string | undefined): number => {
  const parsed = value === undefined ? Number.NaN : Number(value)
  return Number.isFinite(parsed) && parsed >= 0 ? parsed : DEFAULT_GRACE_MS
}
