import { Deferred, Duration, Effect, Either, Exit, Fiber, Queue, Ref, Runtime } from "effect"
import type * as Tool from "../tool/Tool.js"
import { VERSION } from "../runtime/Version.js"
import { SkippedLineError } from "./ChildProcessTransport.js"
import { ConnectFailure, connectLocal, connectRemote, errorText, type LocalSpec } from "./McpConnect.js"
import * as McpSdkLoader from "./McpSdkLoader.js"
import {
  type Connection,
  type McpState,
  type ServerEntry,
  type ServerSpec,
  setStatus,
  settle,
  statusOf
} from "./McpServerState.js"
import type { McpPrompt } from "./McpShape.js"
import { listPrompts, listTools } from "./McpToolCalls.js"

// The life of one server: a connection from handshake to close, and the supervisor that
// reconnects with backoff until it is stopped.

const FIRST_RETRY_MS = 1_000
const MAX_RETRY_MS = 30_000

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
const sandboxed = (state: McpState, name: string, spec: LocalSpec) =>
  Effect.gen(function*() {
    if (spec.sandbox === undefined) return spec
    const where = state.options.sandbox
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
const session = (state: McpState, entry: ServerEntry, spec: ServerSpec) =>
  Effect.gen(function*() {
    const changes = yield* Queue.sliding<Change>(8)
    const fork = Runtime.runFork(yield* Effect.runtime<never>())
    const warn = (text: string) => void fork(Effect.logWarning(`MCP server ${entry.name}: ${text}`))
    yield* McpSdkLoader.load
    const opened = spec.type === "local"
      ? yield* connectLocal(yield* sandboxed(state, entry.name, spec), entry.timeout, makeClient(changes, warn))
      : yield* connectRemote(entry.name, spec, entry.timeout, makeClient(changes, warn), state.options.credentials)
    const { client } = opened
    const closed = yield* Deferred.make<string>()
    client.onclose = () => Deferred.unsafeDone(closed, Exit.succeed(opened.describeClose()))
    const capabilities = client.getServerCapabilities() ?? {}
    const tools = capabilities.tools
      ? yield* listTools(state, entry, client).pipe(
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
        ? listTools(state, entry, client).pipe(
          Effect.flatMap((next) => Ref.set(connection.tools, next)),
          Effect.zipRight(state.options.bus.publish({ type: "mcp.tools.changed", properties: { server: entry.name } }))
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
    yield* setStatus(state, entry.name, { status: "connected" })
    yield* settle(entry)
    return yield* Deferred.await(closed)
  })

/** Connects, and reconnects with backoff whenever the connection fails or closes, until the scope closes. */
const supervise = (state: McpState, entry: ServerEntry, spec: ServerSpec) =>
  Effect.gen(function*() {
    let delay = FIRST_RETRY_MS
    let lastReason: string | undefined
    for (;;) {
      const started = Date.now()
      const outcome = yield* Effect.either(Effect.scoped(session(state, entry, spec)))
      let reason: string
      if (Either.isLeft(outcome)) {
        reason = outcome.left.reason
        if (outcome.left.auth || outcome.left.final) {
          // Reconnecting cannot help until the user authorizes (or fixes the config); `connect` tries again.
          yield* setStatus(state, entry.name, { status: outcome.left.auth ? "needs_auth" : "failed", error: reason })
          yield* settle(entry)
          return
        }
      } else {
        reason = `the connection closed: ${outcome.right}`
        if (Date.now() - started >= MAX_RETRY_MS) delay = FIRST_RETRY_MS
      }
      yield* setStatus(state, entry.name, { status: "failed", error: reason })
      yield* settle(entry)
      // Once per distinct reason: a server that stays down is retried quietly.
      if (reason !== lastReason) yield* Effect.logWarning(`MCP server ${entry.name}: ${reason}; retrying with backoff`)
      lastReason = reason
      yield* Effect.sleep(Duration.millis(delay))
      delay = Math.min(delay * 2, MAX_RETRY_MS)
      yield* setStatus(state, entry.name, { status: "connecting", error: reason })
    }
  })

/** Starts a supervisor for the entry (its spec is known); the caller holds the entry's lock or is the layer. */
export const start = (state: McpState, entry: ServerEntry, spec: ServerSpec) =>
  Effect.gen(function*() {
    yield* Ref.set(entry.settled, yield* Deferred.make<void>())
    yield* setStatus(state, entry.name, { status: "connecting" })
    const fiber = yield* Effect.forkIn(
      supervise(state, entry, spec).pipe(
        Effect.annotateLogs("mcp", entry.name),
        Effect.catchAllCause(Effect.logError)
      ),
      state.layerScope
    )
    yield* Ref.set(entry.fiber, fiber)
  })

/** Ends the supervisor and with it the connection (its scope closes: the client, the process). */
export const stop = (entry: ServerEntry) =>
  Effect.gen(function*() {
    const fiber = yield* Ref.getAndSet(entry.fiber, undefined)
    if (fiber) yield* Fiber.interrupt(fiber)
    yield* settle(entry)
  })

/** Restarts the entry and waits for the first attempt's outcome. */
export const restart = (state: McpState, entry: ServerEntry, spec: ServerSpec) =>
  Effect.gen(function*() {
    yield* stop(entry)
    yield* start(state, entry, spec)
    yield* Deferred.await(yield* Ref.get(entry.settled))
    return (yield* statusOf(state, entry.name)) ?? { status: "connecting" as const }
  })

/** Starts the servers whose first status is `connecting`; the layer calls it once. */
export const startAll = (state: McpState) =>
  Effect.forEach(state.entries, (entry) =>
    Effect.gen(function*() {
      const status = yield* statusOf(state, entry.name)
      if (entry.spec === undefined || status?.status !== "connecting") return
      yield* start(state, entry, entry.spec)
    }), { discard: true })
