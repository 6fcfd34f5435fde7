// `agent acp`: the runtime as an Agent Client Protocol agent on a pair of byte streams (the
// process's stdio). Built on the SDK's v1-stable app API; the bus events of each runtime are
// turned into `session/update`s in this process, by one pump per runtime.
import { Bus, ConfigService, EditorFiles, EditorTerminal, Instance, makeAppLayer, providerCatalog, VERSION } from "@agent/core"
import type { BusEvent, ConfigError, SessionID } from "@agent/domain"
import * as Acp from "@agentclientprotocol/sdk"
import { Cause, Context, Deferred, Effect, Exit, Layer, Option, Runtime, type Scope, Stream } from "effect"
import type { AcpOptions, ClientFeatures } from "./AcpOptions.js"
import { type AcpRuntime, makeAcpRuntimes } from "./AcpRuntimes.js"
import { type AcpPeer, type AcpSession, askEditor, cancelTurn, runTurn, sessionOf, showEvent } from "./AcpSession.js"
import { makeSessionOps } from "./AcpSessionOps.js"
import { clientFiles, clientTerminal, type PortDeps } from "./AcpEditorPorts.js"

/** The bus events an editor's session is shown or answered from (`route`); the others never reach the pump. */
const ROUTED = [
  "session.created",
  "permission.asked",
  "permission.replied",
  "prompt.finished",
  "message.updated",
  "message.part.updated",
  "message.part.delta",
  "todo.updated"
] as const

/** The connection's state: its sessions (by their id and their subagents' ids) and the client's features. */
interface Connection {
  readonly sessions: Map<string, AcpSession>
  /** Subagent sessions, by id, to the editor session they belong to. */
  readonly owners: Map<SessionID, AcpSession>
  features: ClientFeatures
}

/** A failure as the JSON-RPC error the client reads. */
const rpcError = (cause: Cause.Cause<unknown>): Acp.RequestError => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (error instanceof Acp.RequestError) return error
    if (error && typeof error === "object" && "_tag" in error && (error as { _tag: string })._tag === "ConfigError") {
      return Acp.RequestError.invalidParams(undefined, `configuration: ${(error as ConfigError).message}`)
    }
    return Acp.RequestError.internalError(undefined, error instanceof Error ? error.message : String(error))
  }
  return Acp.RequestError.internalError(undefined, Cause.pretty(cause))
}

/**
 * Serves one ACP client until it disconnects: then every running turn is aborted (its interrupted
 * parts stored) and the runtimes are closed with the scope.
 */
export const serveAcp = (options: AcpOptions): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const scope = yield* Effect.scope
    const state: Connection = { sessions: new Map(), owners: new Map(), features: { readTextFile: false, writeTextFile: false, terminal: false } }
    let client: Acp.AgentContext | undefined

    const promise = <A>(effect: Effect.Effect<A, unknown>): Promise<A> =>
      Runtime.runPromiseExit(runtime)(effect).then((exit) => {
        if (Exit.isSuccess(exit)) return exit.value
        throw rpcError(exit.cause)
      })

    const peer: AcpPeer = {
      notify: (sessionID, update) =>
        client === undefined ? Effect.void : Effect.promise(() => client!.notify("session/update", { sessionId: sessionID, update }).catch(() => undefined)),
      requestPermission: (params, signal) =>
        client === undefined
          ? Effect.fail(new Error("no client"))
          : Effect.tryPromise(() => client!.request("session/request_permission", params, { cancellationSignal: signal, stopWaitingOnCancel: true }))
    }

    /** One pump per runtime: its bus, in order, to the sessions of this connection. */
    const pump = (built: AcpRuntime) =>
      Effect.gen(function*() {
        const bus = Context.get(built.context, Bus)
        const events = yield* bus.subscribe({ types: ROUTED })
        yield* events.pipe(
          Stream.runForEach((event) => route(event)),
          Effect.catchAllCause((cause) => Effect.logError("acp: event pump failed", cause)),
          Effect.forkScoped
        )
      })

    const route = (event: BusEvent) =>
      Effect.gen(function*() {
        const id = sessionOf(event)
        if (id === undefined) return
        if (event.type === "session.created" && event.properties.info.parentID !== undefined) {
          const parent = state.sessions.get(event.properties.info.parentID) ?? state.owners.get(event.properties.info.parentID)
          if (parent !== undefined) state.owners.set(id, parent)
          return
        }
        const own = state.sessions.get(id)
        const session = own ?? state.owners.get(id)
        if (session === undefined) return
        if (event.type === "permission.asked") {
          // Waits for a person: off the pump, so the run's updates keep flowing.
          yield* Effect.forkIn(askEditor(peer, session, event.properties).pipe(Effect.catchAllCause((cause) => Effect.logError("acp: permission", cause))), scope)
          return
        }
        if (event.type === "permission.replied") {
          // Answered or withdrawn elsewhere (the run was aborted): the editor stops asking.
          session.turn?.asks.get(event.properties.requestID)?.abort()
          return
        }
        if (own === undefined || session.turn === undefined) return
        if (event.type === "prompt.finished") {
          if (event.properties.messageID === session.turn.messageID) yield* Deferred.succeed(session.turn.flushed, undefined)
          return
        }
        yield* showEvent(peer, session, event)
      })

    const ports: PortDeps = {
      target: (sessionID) => state.sessions.get(sessionID) ?? state.owners.get(sessionID as SessionID),
      own: (sessionID) => state.sessions.get(sessionID),
      features: () => state.features,
      client: () => client
    }
    const editorFiles = Layer.succeed(EditorFiles, clientFiles(ports))
    const editorTerminal = Layer.succeed(EditorTerminal, clientTerminal(ports))
    const appLayer = options.appLayer ?? ((instance: Layer.Layer<Instance>) => makeAppLayer({ instance }))
    const runtimes = yield* makeAcpRuntimes({
      ...options,
      // Runtimes are built after `initialize`: what the client offered is known. Without it, the ports keep their local defaults.
      appLayer: (instance) => {
        const { readTextFile, writeTextFile, terminal } = state.features
        const withFiles = readTextFile || writeTextFile ? appLayer(instance).pipe(Layer.provide(editorFiles)) : appLayer(instance)
        return terminal ? withFiles.pipe(Layer.provide(editorTerminal)) : withFiles
      }
    }, pump)
    const ops = makeSessionOps({ options, runtimes, sessions: state.sessions, peer, features: () => state.features, scope })

    const app = Acp.agent({ name: "agent" })
      .onRequest("initialize", ({ params }) =>
        promise(Effect.gen(function*() {
          const capabilities = params.clientCapabilities
          state.features = {
            readTextFile: capabilities?.fs?.readTextFile === true,
            writeTextFile: capabilities?.fs?.writeTextFile === true,
            // `AGENT_ACP_TERMINAL=off`: for an editor whose terminals do not run a command line in a shell.
            terminal: capabilities?.terminal === true && options.env.AGENT_ACP_TERMINAL !== "off"
          }
          const catalog = yield* authMethods(options)
          return {
            // Version 1 is the one this agent speaks; a client asking for another reads it here and decides.
            protocolVersion: Acp.PROTOCOL_VERSION,
            agentCapabilities: {
              loadSession: true,
              promptCapabilities: { image: true, audio: false, embeddedContext: true },
              mcpCapabilities: { http: true, sse: true },
              sessionCapabilities: { list: {}, resume: {}, close: {} }
            },
            agentInfo: { name: "agent", title: "agent", version: VERSION },
            authMethods: catalog
          } satisfies Acp.InitializeResponse
        })))
      .onRequest("authenticate", ({ params }) => promise(ops.authenticate(params.methodId)))
      .onRequest("session/new", ({ params }) => promise(ops.newSession(params)))
      .onRequest("session/load", ({ params }) => promise(ops.loadSession(params)))
      .onRequest("session/resume", ({ params }) => promise(ops.resumeSession(params)))
      .onRequest("session/list", ({ params }) => promise(ops.listSessions(params)))
      .onRequest("session/close", ({ params }) => promise(ops.closeSession(params.sessionId)))
      .onRequest("session/set_mode", ({ params }) => promise(ops.setMode(params.sessionId, params.modeId)))
      .onRequest("session/set_config_option", ({ params }) => promise(ops.setConfigOption(params)))
      .onRequest("session/prompt", ({ params, signal }) =>
        promise(Effect.gen(function*() {
          const session = yield* ops.find(params.sessionId)
          // `$/cancel_request` for the prompt itself: the same as `session/cancel`.
          const onAbort = () => Runtime.runFork(runtime)(cancelTurn(session))
          signal.addEventListener("abort", onAbort, { once: true })
          return yield* runTurn(session, params.prompt).pipe(Effect.ensuring(Effect.sync(() => signal.removeEventListener("abort", onAbort))))
        })))
      .onNotification("session/cancel", ({ params }) =>
        promise(Effect.gen(function*() {
          const session = state.sessions.get(params.sessionId)
          if (session !== undefined) yield* cancelTurn(session)
        })))
      .onConnect((connection) => {
        client = connection.client
      })

    const connection = app.connect(Acp.ndJsonStream(options.output, options.input))
    yield* Effect.promise(() => connection.closed)
    // The client is gone: abort what runs, let the runs store their interrupted parts, then close.
    const running = [...state.sessions.values()].flatMap((session) => (session.turn === undefined ? [] : [session]))
    client = undefined
    yield* Effect.forEach(running, (session) =>
      Effect.gen(function*() {
        const turn = session.turn
        yield* cancelTurn(session)
        if (turn !== undefined) yield* Deferred.await(turn.ended).pipe(Effect.timeout("10 seconds"), Effect.ignore)
      }), { concurrency: "unbounded", discard: true })
  })

/** The providers as auth methods: each says where its key comes from, or what to set. */
const authMethods = (options: AcpOptions) =>
  Effect.gen(function*() {
    const instance = Instance.layerWith({ directory: options.directory, env: options.env })
    const loaded = yield* Effect.flatMap(ConfigService, (service) => service.get()).pipe(
      Effect.provide(ConfigService.layer.pipe(Layer.provide(instance))),
      Effect.option
    )
    // A broken config is reported where it matters (session/new names the file and key).
    if (Option.isNone(loaded)) return []
    return providerCatalog(loaded.value, options.env).map((provider): Acp.AuthMethod => ({
      id: provider.id,
      name: provider.name,
      description: provider.problem ?? (provider.credentials ? `key from ${provider.credentials}` : "no key needed")
    }))
  })
