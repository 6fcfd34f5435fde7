import type { McpConfig, McpServerStatus, SandboxConfig } from "@agent/domain"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { ContentBlock, Tool as McpToolDefinition } from "@modelcontextprotocol/sdk/types.js"
import {
  Context,
  Data,
  Deferred,
  Duration,
  Effect,
  Either,
  Exit,
  Fiber,
  Layer,
  Option,
  Queue,
  Ref,
  Runtime,
  Scope
} from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Bus } from "../runtime/Bus.js"
import { Instance } from "../runtime/Instance.js"
import { VERSION } from "../runtime/Version.js"
import { ConfigService } from "../config/ConfigService.js"
import { ChildProcessTransport, SkippedLineError, type StdioSpec } from "./ChildProcessTransport.js"
import * as McpOAuth from "./McpOAuth.js"
import * as McpSdkLoader from "./McpSdkLoader.js"
import {
  McpRequestError,
  type AuthenticateOptions,
  type McpInstructions,
  type McpPrompt,
  type McpPromptMessage,
  type McpResource,
  type McpResourceContent,
  type McpResourceTemplate,
  type McpShape
} from "./McpShape.js"
import { Sandbox, type SandboxShape } from "../sandbox/Sandbox.js"
import { McpAuthError } from "./McpOAuth.js"
import type * as Tool from "../tool/Tool.js"
import { ToolExecutionError } from "../tool/Tool.js"
import * as McpTools from "./McpTools.js"

/** Connect and `tools/list` timeout when the server's config sets none (OpenCode's `DEFAULT_TIMEOUT`). */
export const DEFAULT_TIMEOUT_MS = 30_000
/** How long the first step waits for servers by default; `AGENT_MCP_GRACE_MS` overrides it. */
export const DEFAULT_GRACE_MS = 3_000
const FIRST_RETRY_MS = 1_000
const MAX_RETRY_MS = 30_000

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

// ---------------------------------------------------------------------------------------------
// Servers and connections

interface LocalSpec extends StdioSpec {
  readonly type: "local"
  /** Run in the sandbox: `true` (the top-level settings) or the server's own keys over them. */
  readonly sandbox?: true | SandboxConfig
}

interface RemoteSpec {
  readonly type: "remote"
  readonly url: string
  readonly headers: Record<string, string>
  /** `false`: a 401 is final, the server is expected to take credentials from `headers`. */
  readonly oauth: McpOAuth.OAuthSettings | false | undefined
}

interface Connection {
  readonly client: Client
  readonly remote: boolean
  readonly tools: Ref.Ref<ReadonlyArray<Tool.AnyTool>>
  readonly prompts: Ref.Ref<ReadonlyArray<McpPrompt>>
  /** Why the connection ended, once it has. */
  readonly closed: Deferred.Deferred<string>
  readonly describeClose: () => string
}

interface ServerEntry {
  readonly name: string
  readonly spec: LocalSpec | RemoteSpec | undefined
  readonly enabled: boolean
  readonly timeout: number
  readonly callTimeout: number
  readonly connection: Ref.Ref<Connection | undefined>
  /** Done once the first attempt of the current supervisor has ended, either way. */
  settled: Deferred.Deferred<void>
  /** The supervisor, from `start` until `stop` (it ends by itself on `needs_auth`). */
  fiber: Fiber.RuntimeFiber<void> | undefined
  /** Serializes connect, disconnect and the auth flow of this server. */
  readonly lock: Effect.Semaphore
}

/**
 * A connection attempt that did not work; `auth` means the server wants credentials first,
 * `final` that retrying cannot help until the user changes something.
 */
class ConnectFailure extends Data.TaggedError("ConnectFailure")<{
  readonly reason: string
  readonly auth: boolean
  readonly final?: boolean
}> {}

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const isAuthError = (error: unknown): boolean => {
  const sdk = McpSdkLoader.ifLoaded()
  return sdk !== undefined && (error instanceof sdk.UnauthorizedError ||
    ((error instanceof sdk.StreamableHTTPError || error instanceof sdk.SseError) && error.code === 401))
}

/** An SDK `McpError` with this code (false before the SDK is loaded: then no SDK call failed). */
const isMcpError = (error: unknown, code?: "RequestTimeout" | "ConnectionClosed"): boolean => {
  const sdk = McpSdkLoader.ifLoaded()
  return sdk !== undefined && error instanceof sdk.McpError && (code === undefined || error.code === sdk.ErrorCode[code])
}

const isTimeout = (error: unknown): boolean => isMcpError(error, "RequestTimeout")

/** The SDK's own timeout error (the SDK is loaded: a request or a connection is under way). */
const timeoutError = (detail: string) => {
  const sdk = McpSdkLoader.sdk()
  return new sdk.McpError(sdk.ErrorCode.RequestTimeout, detail)
}

const statusText = (status: McpServerStatus | undefined) =>
  status === undefined ? "unknown" : status.error ? `${status.status}: ${status.error}` : status.status

interface ServiceOptions {
  readonly servers: Readonly<Record<string, McpConfig>>
  readonly callTimeout?: number
  /** The OAuth credentials file. */
  readonly credentials: string
  readonly instance: Instance["Type"]
  readonly bus: Bus["Type"]
  /** Where servers configured with `sandbox` run, and the top-level `sandbox` keys. */
  readonly sandbox?: { readonly service: SandboxShape; readonly defaults: SandboxConfig | undefined }
}

const makeService = (options: ServiceOptions): Effect.Effect<Mcp["Type"], never, Scope.Scope> =>
  Effect.gen(function*() {
    const { instance, bus } = options
    // Supervisors live as long as the layer, also those started later by `connect`.
    const layerScope = yield* Effect.scope
    const statuses = yield* Ref.make<Record<string, McpServerStatus>>({})

    const setStatus = (server: string, status: McpServerStatus) =>
      Ref.modify(statuses, (current) => {
        const previous = current[server]
        const same = previous?.status === status.status && previous?.error === status.error
        return [!same, same ? current : { ...current, [server]: status }] as const
      }).pipe(
        Effect.flatMap((changed) =>
          changed ? bus.publish({ type: "mcp.status", properties: { server, status } }) : Effect.void
        )
      )

    const statusOf = (server: string) => Effect.map(Ref.get(statuses), (all) => all[server])

    const entries: Array<ServerEntry> = []
    for (const [name, config] of Object.entries(options.servers)) {
      const entry: ServerEntry = {
        name,
        spec: specOf(config, instance),
        enabled: config.enabled !== false,
        timeout: "timeout" in config && config.timeout !== undefined ? config.timeout : DEFAULT_TIMEOUT_MS,
        callTimeout: ("timeout" in config ? config.timeout : undefined) ?? options.callTimeout ?? DEFAULT_TIMEOUT_MS,
        connection: yield* Ref.make<Connection | undefined>(undefined),
        settled: yield* Deferred.make<void>(),
        fiber: undefined,
        lock: yield* Effect.makeSemaphore(1)
      }
      entries.push(entry)
      if (config.enabled === false) {
        yield* setStatus(name, { status: "disabled" })
        yield* Deferred.succeed(entry.settled, undefined)
      } else if (entry.spec === undefined) {
        yield* setStatus(name, { status: "failed", error: "neither a command (type local) nor a url (type remote) is configured" })
        yield* Deferred.succeed(entry.settled, undefined)
      } else {
        yield* setStatus(name, { status: "connecting" })
      }
    }

    const findEntry = (server: string) =>
      entries.find((entry) => entry.name === server) ??
        entries.find((entry) => McpTools.sanitize(entry.name) === server)

    // -- tools ------------------------------------------------------------------------------

    const callTool = (entry: ServerEntry, tool: string): McpTools.McpToolCall => (args, context) =>
      Effect.gen(function*() {
        const id = McpTools.toolKey(entry.name, tool)
        const connection = yield* Ref.get(entry.connection)
        if (!connection) {
          return yield* new ToolExecutionError({
            tool: id,
            detail: `The MCP server ${entry.name} is not connected (${statusText(yield* statusOf(entry.name))}), so ${tool} cannot be called right now.`
          })
        }
        const fork = Runtime.runFork(yield* Effect.runtime<never>())
        // Progress arrives on the SDK's callback; every report is recorded before the result is returned.
        const reports: Array<Fiber.RuntimeFiber<void>> = []
        const run = (effect: Effect.Effect<void>) => void reports.push(fork(effect))
        return yield* Effect.tryPromise({
          try: (signal) =>
            connection.client.callTool({ name: tool, arguments: args }, undefined, {
              signal: AbortSignal.any([signal, context.abort]),
              timeout: entry.callTimeout,
              resetTimeoutOnProgress: true,
              onprogress: (progress) => {
                run(context.metadata({
                  metadata: {
                    progress: progress.progress,
                    ...(progress.total === undefined ? {} : { total: progress.total }),
                    ...(progress.message === undefined ? {} : { message: progress.message })
                  }
                }))
              }
            }),
          catch: (error) => error
        }).pipe(
          Effect.ensuring(Effect.suspend(() => Fiber.awaitAll(reports))),
          Effect.catchAll((error) =>
            Effect.gen(function*() {
              let detail: string
              if (context.abort.aborted) {
                detail = `The call to ${tool} was aborted.`
              } else if (isTimeout(error)) {
                detail = `The MCP tool ${tool} (server ${entry.name}) did not answer within ${entry.callTimeout} ms (the timeout restarts with every progress report).`
              } else if (isMcpError(error, "ConnectionClosed")) {
                detail = `The MCP server ${entry.name} closed the connection during the call to ${tool}: ${connection.describeClose()}.`
              } else if (connection.remote && !isMcpError(error)) {
                detail = `The MCP server ${entry.name} could not be reached during the call to ${tool}: ${errorText(error)}.`
                // Drop the connection and reconnect instead of failing every later call the same way.
                yield* Deferred.succeed(connection.closed, `the server could not be reached: ${errorText(error)}`)
              } else {
                detail = `The MCP tool ${tool} (server ${entry.name}) failed: ${errorText(error)}`
              }
              return yield* new ToolExecutionError({ tool: id, detail })
            })
          )
        )
      })

    const buildTools = (entry: ServerEntry, definitions: ReadonlyArray<McpToolDefinition>) =>
      definitions
        // Tools that only run as tasks cannot be called with a plain `tools/call`.
        .filter((definition) => definition.execution?.taskSupport !== "required")
        .map((definition) => McpTools.makeTool(entry.name, definition, callTool(entry, definition.name)))

    const listTools = (entry: ServerEntry, client: Client) =>
      request(entry, (signal) =>
        paginate(async (cursor) => {
          const page = await client.listTools(cursor ? { cursor } : {}, { signal, timeout: entry.timeout })
          return { items: page.tools, nextCursor: page.nextCursor }
        })
      ).pipe(Effect.map((definitions) => buildTools(entry, definitions)))

    const listPrompts = (entry: ServerEntry, client: Client) =>
      request(entry, (signal) =>
        paginate(async (cursor) => {
          const page = await client.listPrompts(cursor ? { cursor } : {}, { signal, timeout: entry.timeout })
          return { items: page.prompts, nextCursor: page.nextCursor }
        })
      ).pipe(
        Effect.map((prompts) =>
          prompts.map((prompt): McpPrompt => ({
            key: McpTools.promptKey(entry.name, prompt.name),
            server: entry.name,
            name: prompt.name,
            ...(prompt.description === undefined ? {} : { description: prompt.description }),
            arguments: (prompt.arguments ?? []).map((argument) => ({
              name: argument.name,
              ...(argument.description === undefined ? {} : { description: argument.description }),
              ...(argument.required === undefined ? {} : { required: argument.required })
            }))
          }))
        )
      )

    // -- connections ------------------------------------------------------------------------

    type Change = "tools" | "prompts"

    const makeClient = (changes: Queue.Queue<Change>, warn: (text: string) => void) => () => {
      const sdk = McpSdkLoader.sdk()
      const client = new sdk.Client({ name: "agent", version: VERSION }, { capabilities: {} })
      client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, async () => void Queue.unsafeOffer(changes, "tools"))
      client.setNotificationHandler(sdk.PromptListChangedNotificationSchema, async () => void Queue.unsafeOffer(changes, "prompts"))
      // Transport noise (a stray line on stdout, a dropped SSE stream) is not worth failing over;
      // a skipped oversized line may have been an answer, which then never comes: worth a warning.
      client.onerror = (error) => {
        if (error instanceof SkippedLineError) warn(error.message)
      }
      return client
    }

    /** The spec that starts a server configured with `sandbox` in the sandbox; freed with the connection's scope. */
    const sandboxed = (name: string, spec: LocalSpec) =>
      Effect.gen(function*() {
        if (spec.sandbox === undefined) return spec
        const where = options.sandbox
        if (where === undefined) {
          return yield* new ConnectFailure({ reason: "it is configured to run in the sandbox, and this command has no sandbox", auth: false, final: true })
        }
        const config = spec.sandbox === true ? where.defaults : { ...where.defaults, ...spec.sandbox }
        const launch = yield* where.service.prepare({
          plan: yield* where.service.plan(config),
          argv: [spec.command, ...spec.args],
          cwd: spec.cwd,
          env: spec.env,
          keeper: "exec",
          tool: `mcp:${name}`
        }).pipe(Effect.mapError((error) => new ConnectFailure({ reason: error.message, auth: false, final: true })))
        yield* Effect.addFinalizer(() => launch.release)
        return { ...spec, command: launch.file, args: launch.args, env: { ...launch.env } } satisfies LocalSpec
      })

    /** One connection, from handshake to close; returns why it closed. */
    const session = (entry: ServerEntry, spec: LocalSpec | RemoteSpec) =>
      Effect.gen(function*() {
        const changes = yield* Queue.sliding<Change>(8)
        const fork = Runtime.runFork(yield* Effect.runtime<never>())
        const warn = (text: string) => void fork(Effect.logWarning(`MCP server ${entry.name}: ${text}`))
        yield* McpSdkLoader.load
        const opened = spec.type === "local"
          ? yield* connectLocal(yield* sandboxed(entry.name, spec), entry.timeout, makeClient(changes, warn))
          : yield* connectRemote(entry.name, spec, entry.timeout, makeClient(changes, warn), options.credentials)
        const { client } = opened
        const closed = yield* Deferred.make<string>()
        client.onclose = () => Deferred.unsafeDone(closed, Exit.succeed(opened.describeClose()))
        const capabilities = client.getServerCapabilities() ?? {}
        const tools = capabilities.tools
          ? yield* listTools(entry, client).pipe(
            Effect.mapError((error) => new ConnectFailure({ reason: `tools/list failed: ${errorText(error)}`, auth: false }))
          )
          : []
        const prompts = capabilities.prompts
          ? yield* listPrompts(entry, client).pipe(
            Effect.tapError((error) => Effect.logWarning(`MCP server ${entry.name}: prompts/list failed: ${errorText(error)}`)),
            Effect.orElseSucceed(() => [])
          )
          : []
        const connection: Connection = {
          client,
          remote: spec.type === "remote",
          tools: yield* Ref.make<ReadonlyArray<Tool.AnyTool>>(tools),
          prompts: yield* Ref.make<ReadonlyArray<McpPrompt>>(prompts),
          closed,
          describeClose: opened.describeClose
        }

        const refresh = (change: Change) =>
          change === "tools"
            ? listTools(entry, client).pipe(
              Effect.flatMap((next) => Ref.set(connection.tools, next)),
              Effect.zipRight(bus.publish({ type: "mcp.tools.changed", properties: { server: entry.name } }))
            )
            : listPrompts(entry, client).pipe(Effect.flatMap((next) => Ref.set(connection.prompts, next)))
        yield* Effect.forkScoped(
          Queue.take(changes).pipe(
            Effect.flatMap((change) =>
              refresh(change).pipe(
                Effect.catchAll((error) =>
                  Effect.logWarning(`MCP server ${entry.name}: refreshing ${change} failed: ${errorText(error)}`)
                )
              )
            ),
            Effect.forever,
            Effect.catchAllCause(Effect.logError)
          )
        )

        yield* Effect.acquireRelease(Ref.set(entry.connection, connection), () => Ref.set(entry.connection, undefined))
        yield* setStatus(entry.name, { status: "connected" })
        yield* Deferred.succeed(entry.settled, undefined)
        return yield* Deferred.await(closed)
      })

    /** Connects, and reconnects with backoff whenever the connection fails or closes, until the scope closes. */
    const supervise = (entry: ServerEntry, spec: LocalSpec | RemoteSpec) =>
      Effect.gen(function*() {
        let delay = FIRST_RETRY_MS
        let lastReason: string | undefined
        for (;;) {
          const started = Date.now()
          const outcome = yield* Effect.either(Effect.scoped(session(entry, spec)))
          let reason: string
          if (Either.isLeft(outcome)) {
            reason = outcome.left.reason
            if (outcome.left.auth || outcome.left.final) {
              // Reconnecting cannot help until the user authorizes (or fixes the config); `connect` tries again.
              yield* setStatus(entry.name, { status: outcome.left.auth ? "needs_auth" : "failed", error: reason })
              yield* Deferred.succeed(entry.settled, undefined)
              return
            }
          } else {
            reason = `the connection closed: ${outcome.right}`
            if (Date.now() - started >= MAX_RETRY_MS) delay = FIRST_RETRY_MS
          }
          yield* setStatus(entry.name, { status: "failed", error: reason })
          yield* Deferred.succeed(entry.settled, undefined)
          // Once per distinct reason: a server that stays down is retried quietly.
          if (reason !== lastReason) yield* Effect.logWarning(`MCP server ${entry.name}: ${reason}; retrying with backoff`)
          lastReason = reason
          yield* Effect.sleep(Duration.millis(delay))
          delay = Math.min(delay * 2, MAX_RETRY_MS)
          yield* setStatus(entry.name, { status: "connecting", error: reason })
        }
      })

    /** Starts a supervisor for the entry (its spec is known); the caller holds the entry's lock or is the layer. */
    const start = (entry: ServerEntry, spec: LocalSpec | RemoteSpec) =>
      Effect.gen(function*() {
        entry.settled = yield* Deferred.make<void>()
        yield* setStatus(entry.name, { status: "connecting" })
        entry.fiber = yield* Effect.forkIn(
          supervise(entry, spec).pipe(
            Effect.annotateLogs("mcp", entry.name),
            Effect.catchAllCause(Effect.logError)
          ),
          layerScope
        )
      })

    /** Ends the supervisor and with it the connection (its scope closes: the client, the process). */
    const stop = (entry: ServerEntry) =>
      Effect.gen(function*() {
        const fiber = entry.fiber
        entry.fiber = undefined
        if (fiber) yield* Fiber.interrupt(fiber)
        yield* Deferred.succeed(entry.settled, undefined)
      })

    /** Restarts the entry and waits for the first attempt's outcome. */
    const restart = (entry: ServerEntry, spec: LocalSpec | RemoteSpec) =>
      Effect.gen(function*() {
        yield* stop(entry)
        yield* start(entry, spec)
        yield* Deferred.await(entry.settled)
        return (yield* statusOf(entry.name)) ?? { status: "connecting" as const }
      })

    for (const entry of entries) {
      const status = yield* statusOf(entry.name)
      if (entry.spec === undefined || status?.status !== "connecting") continue
      yield* start(entry, entry.spec)
    }

    // -- the service ------------------------------------------------------------------------

    const connections = Effect.gen(function*() {
      const result: Array<{ entry: ServerEntry; connection: Connection }> = []
      for (const entry of entries) {
        const connection = yield* Ref.get(entry.connection)
        if (connection) result.push({ entry, connection })
      }
      return result
    })

    const connectionOf = (server: string) =>
      Effect.gen(function*() {
        const entry = findEntry(server)
        if (!entry) {
          return yield* new McpRequestError({
            server,
            detail: `There is no MCP server named ${server}. Configured servers: ${entries.map((e) => e.name).join(", ") || "none"}.`
          })
        }
        const connection = yield* Ref.get(entry.connection)
        if (!connection) {
          return yield* new McpRequestError({
            server: entry.name,
            detail: `The MCP server ${entry.name} is not connected (${statusText(yield* statusOf(entry.name))}).`
          })
        }
        return { entry, connection }
      })

    // Called every step (or every tool call): untraced, a span would cost more than the call.
    const tools = Effect.fnUntraced(function*() {
      const all: Array<Tool.AnyTool> = []
      const seen = new Set<string>()
      for (const { connection } of yield* connections) {
        for (const tool of yield* Ref.get(connection.tools)) {
          if (seen.has(tool.id)) continue
          seen.add(tool.id)
          all.push(tool)
        }
      }
      return all as ReadonlyArray<Tool.AnyTool>
    })

    const defaultGrace = graceFromEnv(instance.env.AGENT_MCP_GRACE_MS)
    const ready = Effect.fn("Mcp.ready")(function*(grace?: Duration.DurationInput) {
      yield* Effect.forEach(entries, (entry) => Deferred.await(entry.settled), { concurrency: "unbounded", discard: true }).pipe(
        Effect.timeout(grace ?? Duration.millis(defaultGrace)),
        Effect.ignore
      )
    })

    const status = Effect.fn("Mcp.status")(function*() {
      return yield* Ref.get(statuses)
    })

    const prompts = Effect.fn("Mcp.prompts")(function*() {
      const all: Array<McpPrompt> = []
      for (const { connection } of yield* connections) all.push(...(yield* Ref.get(connection.prompts)))
      return all as ReadonlyArray<McpPrompt>
    })

    const getPrompt = Effect.fn("Mcp.getPrompt")(function*(key: string, args: Record<string, string> = {}) {
      for (const { entry, connection } of yield* connections) {
        const prompt = (yield* Ref.get(connection.prompts)).find((candidate) => candidate.key === key)
        if (!prompt) continue
        const result = yield* request(
          entry,
          (signal) => connection.client.getPrompt({ name: prompt.name, arguments: args }, { signal, timeout: entry.timeout })
        ).pipe(
          Effect.mapError((error) =>
            new McpRequestError({ server: entry.name, detail: `The MCP prompt ${key} failed: ${errorText(error)}` })
          )
        )
        const messages: Array<McpPromptMessage> = []
        for (const message of result.messages) {
          const text = promptText(message.content)
          if (text !== undefined) messages.push({ role: message.role, text })
        }
        return { ...(result.description === undefined ? {} : { description: result.description }), messages }
      }
      const server = key.includes(":") ? key.slice(0, key.indexOf(":")) : key
      return yield* new McpRequestError({ server, detail: `No connected MCP server offers the prompt ${key}.` })
    })

    /** A paged resource listing of one server (empty when it offers no resources), as our records. */
    const listPaged = <Raw, A>(
      entry: ServerEntry,
      connection: Connection,
      what: string,
      page: (cursor: string | undefined, signal: AbortSignal) => Promise<{ items: ReadonlyArray<Raw>; nextCursor?: string | undefined }>,
      toItem: (raw: Raw) => A
    ): Effect.Effect<ReadonlyArray<A>, McpRequestError> =>
      (connection.client.getServerCapabilities()?.resources
        ? request(entry, (signal) => paginate((cursor) => page(cursor, signal)))
        : Effect.succeed([])).pipe(
          Effect.map((items) => items.map(toItem)),
          Effect.mapError((error) =>
            new McpRequestError({ server: entry.name, detail: `Listing the ${what} of ${entry.name} failed: ${errorText(error)}` })
          )
        )

    /** One server's list, or every connected server's (a server that fails is logged and left out). */
    const fromServers = <A>(list: (entry: ServerEntry, connection: Connection) => Effect.Effect<ReadonlyArray<A>, McpRequestError>) =>
      (server?: string) =>
        Effect.gen(function*() {
          if (server !== undefined) {
            const { entry, connection } = yield* connectionOf(server)
            return yield* list(entry, connection)
          }
          const lists = yield* Effect.forEach(
            yield* connections,
            ({ entry, connection }) =>
              list(entry, connection).pipe(
                Effect.tapError((error) => Effect.logWarning(error.detail)),
                Effect.orElseSucceed((): ReadonlyArray<A> => [])
              ),
            { concurrency: "unbounded" }
          )
          return lists.flat() as ReadonlyArray<A>
        })

    const listResources = (entry: ServerEntry, connection: Connection) =>
      listPaged(entry, connection, "resources", async (cursor, signal) => {
        const page = await connection.client.listResources(cursor ? { cursor } : {}, { signal, timeout: entry.timeout })
        return { items: page.resources, nextCursor: page.nextCursor }
      }, (resource): McpResource => ({
        server: entry.name,
        uri: resource.uri,
        name: resource.name,
        ...(resource.mimeType === undefined ? {} : { mimeType: resource.mimeType }),
        ...(resource.description === undefined ? {} : { description: resource.description })
      }))

    const resources = Effect.fn("Mcp.resources")(function*(server?: string) {
      return yield* fromServers(listResources)(server)
    })

    const readResource = Effect.fn("Mcp.readResource")(function*(server: string, uri: string) {
      const { entry, connection } = yield* connectionOf(server)
      const result = yield* request(
        entry,
        (signal) => connection.client.readResource({ uri }, { signal, timeout: entry.timeout })
      ).pipe(
        Effect.mapError((error) =>
          new McpRequestError({ server: entry.name, detail: `Reading ${uri} from ${entry.name} failed: ${errorText(error)}` })
        )
      )
      return result.contents.map((content): McpResourceContent => ({
        uri: content.uri,
        ...(content.mimeType === undefined ? {} : { mimeType: content.mimeType }),
        ...("text" in content && typeof content.text === "string" ? { text: content.text } : {}),
        ...("blob" in content && typeof content.blob === "string" ? { blob: content.blob } : {})
      }))
    })

    // Called every step (or every tool call): untraced, a span would cost more than the call.
    const instructions = Effect.fnUntraced(function*() {
      const all: Array<McpInstructions> = []
      for (const { entry, connection } of yield* connections) {
        const text = connection.client.getInstructions()?.trim()
        if (text) all.push({ server: entry.name, text })
      }
      return all as ReadonlyArray<McpInstructions>
    })

    const listTemplates = (entry: ServerEntry, connection: Connection) =>
      listPaged(entry, connection, "resource templates", async (cursor, signal) => {
        const page = await connection.client.listResourceTemplates(cursor ? { cursor } : {}, { signal, timeout: entry.timeout })
        return { items: page.resourceTemplates, nextCursor: page.nextCursor }
      }, (template): McpResourceTemplate => ({
        server: entry.name,
        uriTemplate: template.uriTemplate,
        name: template.name,
        ...(template.mimeType === undefined ? {} : { mimeType: template.mimeType }),
        ...(template.description === undefined ? {} : { description: template.description })
      }))

    const resourceTemplates = Effect.fn("Mcp.resourceTemplates")(function*(server?: string) {
      return yield* fromServers(listTemplates)(server)
    })

    // -- connecting on demand and OAuth ---------------------------------------------------

    const configured = (server: string) =>
      Effect.gen(function*() {
        const entry = findEntry(server)
        if (!entry) {
          return yield* new McpRequestError({
            server,
            detail: `There is no MCP server named ${server}. Configured servers: ${entries.map((e) => e.name).join(", ") || "none"}.`
          })
        }
        return entry
      })

    const connect = Effect.fn("Mcp.connect")(function*(server: string) {
      const entry = yield* configured(server)
      const spec = entry.spec
      if (spec === undefined) {
        return yield* new McpRequestError({
          server: entry.name,
          detail: `The MCP server ${entry.name} cannot connect: its config has neither a command (type local) nor a url (type remote).`
        })
      }
      return yield* entry.lock.withPermits(1)(restart(entry, spec))
    })

    const disconnect = Effect.fn("Mcp.disconnect")(function*(server: string) {
      const entry = yield* configured(server)
      yield* entry.lock.withPermits(1)(
        stop(entry).pipe(Effect.zipRight(setStatus(entry.name, { status: "disabled" })))
      )
    })

    /** The remote spec of a server that can use OAuth. */
    const oauthServer = (server: string) =>
      Effect.gen(function*() {
        const entry = yield* configured(server).pipe(
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
          const running = entry.fiber !== undefined || entry.enabled
          // No background attempt may touch the stored client while the flow registers one.
          yield* stop(entry)
          const outcome = yield* Effect.either(
            McpOAuth.authorize({
              server: entry.name,
              serverUrl: spec.url,
              file: options.credentials,
              oauth,
              onAuthorizationUrl: flow.onAuthorizationUrl,
              ...(flow.timeout === undefined ? {} : { timeout: flow.timeout })
            })
          )
          if (Either.isLeft(outcome)) {
            // The server goes back to what it was doing, with whatever credentials it had.
            if (running) yield* restart(entry, spec)
            return yield* outcome.left
          }
          return yield* restart(entry, spec)
        })
      )
    })

    const logout = Effect.fn("Mcp.logout")(function*(server: string) {
      const { entry, spec } = yield* oauthServer(server)
      return yield* entry.lock.withPermits(1)(
        Effect.gen(function*() {
          const removed = yield* McpOAuth.removeEntry(options.credentials, entry.name)
          const status = entry.fiber !== undefined
            ? yield* restart(entry, spec)
            : (yield* statusOf(entry.name)) ?? { status: "disabled" as const }
          return { removed, status }
        })
      )
    })

    return {
      tools,
      ready,
      status,
      prompts,
      getPrompt,
      resources,
      resourceTemplates,
      readResource,
      instructions,
      connect,
      disconnect,
      authenticate,
      logout,
      credentialsFile: options.credentials
    }
  })

// ---------------------------------------------------------------------------------------------
// Helpers

const graceFromEnv = (value: string | undefined): number => {
  const parsed = value === undefined ? Number.NaN : Number(value)
  return Number.isFinite(parsed) && parsed >= 0 ? parsed : DEFAULT_GRACE_MS
}

/** The text a prompt message carries, if any. */
const promptText = (content: ContentBlock): string | undefined => {
  if (content.type === "text") return content.text
  if (content.type === "resource" && "text" in content.resource && typeof content.resource.text === "string") {
    return content.resource.text
  }
  return undefined
}

/** A request to a server under its timeout; interruption cancels it. */
const request = <A>(entry: ServerEntry, run: (signal: AbortSignal) => Promise<A>) =>
  Effect.tryPromise({ try: run, catch: (error) => error }).pipe(
    Effect.timeoutFail({
      duration: Duration.millis(entry.timeout + 1_000),
      onTimeout: () => timeoutError(`no answer within ${entry.timeout} ms`)
    })
  )

const paginate = async <T>(
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

const specOf = (config: McpConfig, instance: Instance["Type"]): LocalSpec | RemoteSpec | undefined => {
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
const handshake = (client: Client, transport: Transport, timeout: number) =>
  Effect.tryPromise({ try: (signal) => client.connect(transport, { signal, timeout }), catch: (error) => error }).pipe(
    Effect.timeoutFail({
      duration: Duration.millis(timeout),
      onTimeout: () => timeoutError("connect timed out")
    })
  )

const closeClient = (client: Client) =>
  Effect.promise(() => client.close().catch(() => undefined)).pipe(Effect.timeout("5 seconds"), Effect.ignore)

const connectLocal = (spec: LocalSpec, timeout: number, makeClient: () => Client) =>
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

const connectRemote = (
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
