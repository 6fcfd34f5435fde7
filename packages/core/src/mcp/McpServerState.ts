import type { McpConfig, McpServerStatus, SandboxConfig } from "@agent/domain"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { Deferred, Effect, type Fiber, Ref, type Scope } from "effect"
import type { Bus } from "../runtime/Bus.js"
import type { Instance } from "../runtime/Instance.js"
import type { SandboxShape } from "../sandbox/Sandbox.js"
import type * as Tool from "../tool/Tool.js"
import { type LocalSpec, type RemoteSpec, specOf } from "./McpConnect.js"
import { McpRequestError, type McpPrompt } from "./McpShape.js"
import * as McpTools from "./McpTools.js"

// The long-lived state of the Mcp service: one entry per configured server and the status map,
// created once by the layer and handed to the parts of mcp/ that act on it.

/** Connect and `tools/list` timeout when the server's config sets none (OpenCode's `DEFAULT_TIMEOUT`). */
export const DEFAULT_TIMEOUT_MS = 30_000

export interface ServiceOptions {
  readonly servers: Readonly<Record<string, McpConfig>>
  readonly callTimeout?: number
  /** The OAuth credentials file. */
  readonly credentials: string
  readonly instance: Instance["Type"]
  readonly bus: Bus["Type"]
  /** Where servers configured with `sandbox` run, and the top-level `sandbox` keys. */
  readonly sandbox?: { readonly service: SandboxShape; readonly defaults: SandboxConfig | undefined }
}

export interface Connection {
  readonly client: Client
  readonly remote: boolean
  readonly tools: Ref.Ref<ReadonlyArray<Tool.AnyTool>>
  readonly prompts: Ref.Ref<ReadonlyArray<McpPrompt>>
  /** Why the connection ended, once it has. */
  readonly closed: Deferred.Deferred<string>
  readonly describeClose: () => string
}

export type ServerSpec = LocalSpec | RemoteSpec

export interface ServerEntry {
  readonly name: string
  readonly spec: ServerSpec | undefined
  readonly enabled: boolean
  readonly timeout: number
  readonly callTimeout: number
  readonly connection: Ref.Ref<Connection | undefined>
  /** Done once the first attempt of the current supervisor has ended, either way. */
  readonly settled: Ref.Ref<Deferred.Deferred<void>>
  /** The supervisor, from `start` until `stop` (it ends by itself on `needs_auth`). */
  readonly fiber: Ref.Ref<Fiber.RuntimeFiber<void> | undefined>
  /** Serializes connect, disconnect and the auth flow of this server. */
  readonly lock: Effect.Semaphore
}

export interface McpState {
  readonly options: ServiceOptions
  readonly entries: ReadonlyArray<ServerEntry>
  readonly statuses: Ref.Ref<Record<string, McpServerStatus>>
  /** Supervisors live as long as the layer, also those started later by `connect`. */
  readonly layerScope: Scope.Scope
}

/** The entries of the configured servers, each with its first status (`connecting` when it is to be started). */
export const makeState = (options: ServiceOptions): Effect.Effect<McpState, never, Scope.Scope> =>
  Effect.gen(function*() {
    const state: McpState = {
      options,
      entries: [],
      statuses: yield* Ref.make<Record<string, McpServerStatus>>({}),
      layerScope: yield* Effect.scope
    }
    const entries: Array<ServerEntry> = []
    for (const [name, config] of Object.entries(options.servers)) {
      const settled = yield* Deferred.make<void>()
      const entry: ServerEntry = {
        name,
        spec: specOf(config, options.instance),
        enabled: config.enabled !== false,
        timeout: "timeout" in config && config.timeout !== undefined ? config.timeout : DEFAULT_TIMEOUT_MS,
        callTimeout: ("timeout" in config ? config.timeout : undefined) ?? options.callTimeout ?? DEFAULT_TIMEOUT_MS,
        connection: yield* Ref.make<Connection | undefined>(undefined),
        settled: yield* Ref.make(settled),
        fiber: yield* Ref.make<Fiber.RuntimeFiber<void> | undefined>(undefined),
        lock: yield* Effect.makeSemaphore(1)
      }
      entries.push(entry)
      if (config.enabled === false) {
        yield* setStatus(state, name, { status: "disabled" })
        yield* Deferred.succeed(settled, undefined)
      } else if (entry.spec === undefined) {
        yield* setStatus(state, name, { status: "failed", error: "neither a command (type local) nor a url (type remote) is configured" })
        yield* Deferred.succeed(settled, undefined)
      } else {
        yield* setStatus(state, name, { status: "connecting" })
      }
    }
    return { ...state, entries }
  })

/** Records the status and publishes `mcp.status` when it changed. */
export const setStatus = (state: McpState, server: string, status: McpServerStatus) =>
  Ref.modify(state.statuses, (current) => {
    const previous = current[server]
    const same = previous?.status === status.status && previous?.error === status.error
    return [!same, same ? current : { ...current, [server]: status }] as const
  }).pipe(
    Effect.flatMap((changed) =>
      changed ? state.options.bus.publish({ type: "mcp.status", properties: { server, status } }) : Effect.void
    )
  )

export const statusOf = (state: McpState, server: string) => Effect.map(Ref.get(state.statuses), (all) => all[server])

export const statusText = (status: McpServerStatus | undefined) =>
  status === undefined ? "unknown" : status.error ? `${status.status}: ${status.error}` : status.status

/** Marks the current attempt of the entry as ended. */
export const settle = (entry: ServerEntry) =>
  Effect.flatMap(Ref.get(entry.settled), (settled) => Deferred.succeed(settled, undefined))

const findEntry = (state: McpState, server: string) =>
  state.entries.find((entry) => entry.name === server) ??
    state.entries.find((entry) => McpTools.sanitize(entry.name) === server)

const unknownServer = (state: McpState, server: string) =>
  new McpRequestError({
    server,
    detail: `There is no MCP server named ${server}. Configured servers: ${state.entries.map((e) => e.name).join(", ") || "none"}.`
  })

/** The entry of a configured server (by its name or its sanitized name). */
export const configured = (state: McpState, server: string) =>
  Effect.suspend(() => {
    const entry = findEntry(state, server)
    return entry ? Effect.succeed(entry) : Effect.fail(unknownServer(state, server))
  })

/** The servers connected now, with their connections. */
export const connections = (state: McpState) =>
  Effect.gen(function*() {
    const result: Array<{ entry: ServerEntry; connection: Connection }> = []
    for (const entry of state.entries) {
      const connection = yield* Ref.get(entry.connection)
      if (connection) result.push({ entry, connection })
    }
    return result
  })

/** The connection of one server, failing when it is not configured or not connected. */
export const connectionOf = (state: McpState, server: string) =>
  Effect.gen(function*() {
    const entry = yield* configured(state, server)
    const connection = yield* Ref.get(entry.connection)
    if (!connection) {
      return yield* new McpRequestError({
        server: entry.name,
        detail: `The MCP server ${entry.name} is not connected (${statusText(yield* statusOf(state, entry.name))}).`
      })
    }
    return { entry, connection }
  })
