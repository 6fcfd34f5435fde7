// The session methods of an ACP connection: new, load (with the whole conversation replayed),
// resume, list, close, modes and models, authenticate. Prompt and cancel are in AcpSession.ts.
import { AgentRegistry, CommandRegistry, ConfigService, Instance, ProviderRegistry, providerCatalog, SessionStore } from "@agent/core"
import { parseModelRef, type SessionID } from "@agent/domain"
import * as Acp from "@agentclientprotocol/sdk"
import { Context, Effect, type Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { AcpOptions, ClientFeatures } from "./AcpOptions.js"
import type { AcpRuntime, AcpRuntimes } from "./AcpRuntimes.js"
import { type AcpPeer, type AcpSession, makeSession, modesOf } from "./AcpSession.js"
import { replayOf } from "./AcpTranslate.js"


export interface SessionOpsDeps {
  readonly options: AcpOptions
  readonly runtimes: AcpRuntimes
  readonly sessions: Map<string, AcpSession>
  readonly peer: AcpPeer
  readonly features: () => ClientFeatures
  /** The connection's scope: notifications sent after a response are forked in it. */
  readonly scope: Scope.Scope
}

/** An absolute directory, or a clear error naming the problem. */
const checkCwd = (cwd: string) =>
  Effect.gen(function*() {
    if (!path.isAbsolute(cwd)) return yield* Effect.fail(Acp.RequestError.invalidParams(undefined, `cwd must be an absolute path, got "${cwd}"`))
    const stat = yield* Effect.sync(() => fs.statSync(cwd, { throwIfNoEntry: false }))
    if (stat === undefined) return yield* Effect.fail(Acp.RequestError.invalidParams(undefined, `cwd: no such directory: ${cwd}`))
    if (!stat.isDirectory()) return yield* Effect.fail(Acp.RequestError.invalidParams(undefined, `cwd: not a directory: ${cwd}`))
    return cwd
  })

/** The configured models that can be used, and the one a session uses now. */
const modelOption = (runtime: AcpRuntime, current: string | undefined) =>
  Effect.gen(function*() {
    const config = yield* Context.get(runtime.context, ConfigService).get()
    const instance = Context.get(runtime.context, Instance)
    const usable = providerCatalog(config, instance.env).filter((provider) => provider.problem === undefined)
    const options = usable.flatMap((provider) =>
      provider.models.map((model) => ({ value: `${provider.id}/${model.modelID}`, name: model.name || `${provider.id}/${model.modelID}` }))
    )
    const fallback = yield* Context.get(runtime.context, ProviderRegistry).defaultModel().pipe(
      Effect.map((ref) => `${ref.providerID}/${ref.modelID}`),
      Effect.orElseSucceed(() => undefined)
    )
    const currentValue = current ?? fallback ?? options[0]?.value
    if (currentValue === undefined) return []
    const all = options.some((option) => option.value === currentValue) ? options : [{ value: currentValue, name: currentValue }, ...options]
    return [{ id: "model", name: "Model", category: "model", type: "select", currentValue, options: all }] satisfies Array<Acp.SessionConfigOption>
  })

export const makeSessionOps = (deps: SessionOpsDeps) => {
  const { options, runtimes, sessions, peer } = deps

  const find = (sessionId: string) =>
    Effect.suspend(() => {
      const session = sessions.get(sessionId)
      return session === undefined ? Effect.fail(Acp.RequestError.sessionNotFound(sessionId)) : Effect.succeed(session)
    })

  /** The default model must be usable before a session starts: else the editor is told what to set. */
  const checkModel = (runtime: AcpRuntime, model: string | undefined) =>
    Effect.gen(function*() {
      const providers = Context.get(runtime.context, ProviderRegistry)
      const chosen = model === undefined ? undefined : parseModelRef(model)
      const ref = chosen ?? (yield* providers.defaultModel())
      yield* providers.resolve(ref)
    }).pipe(Effect.catchTag("ModelNotConfigured", (error) => Effect.fail(Acp.RequestError.authRequired(undefined, error.message))))

  const defaultMode = (runtime: AcpRuntime) =>
    Effect.gen(function*() {
      const agents = Context.get(runtime.context, AgentRegistry)
      if (options.agent !== undefined) {
        const agent = yield* agents.get(options.agent).pipe(
          Effect.mapError(() => Acp.RequestError.invalidParams(undefined, `--agent: no such agent: ${options.agent}`))
        )
        return agent.name
      }
      return (yield* agents.defaultAgent().pipe(Effect.mapError((error) => Acp.RequestError.invalidParams(undefined, error.message)))).name
    })

  /** The session's modes and models, as `session/new` and `session/load` answer them. */
  const describe = (session: AcpSession) =>
    Effect.gen(function*() {
      return { modes: yield* modesOf(session), configOptions: yield* modelOption(session.runtime, session.model) }
    })

  /** After the answer: the commands the session can run (sent once the client knows the session). */
  const announceCommands = (session: AcpSession) =>
    Effect.gen(function*() {
      yield* Effect.sleep("10 millis")
      const commands = yield* Context.get(session.runtime.context, CommandRegistry).list()
      yield* peer.notify(session.id, {
        sessionUpdate: "available_commands_update",
        availableCommands: commands.map((command) => ({
          name: command.name,
          description: command.description ?? command.name,
          input: { hint: "arguments" }
        }))
      })
    }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("acp: commands", cause)), Effect.forkIn(deps.scope))

  const open = (
    params: { readonly cwd: string; readonly mcpServers?: ReadonlyArray<Acp.McpServer> | undefined },
    sessionID: string | undefined
  ) =>
    Effect.gen(function*() {
      const cwd = yield* checkCwd(params.cwd)
      const runtime = yield* runtimes.get(cwd, params.mcpServers ?? [])
      const store = Context.get(runtime.context, SessionStore)
      if (sessionID === undefined) {
        yield* checkModel(runtime, options.model)
        const created = yield* store.create({})
        const session = makeSession(created.id, runtime, yield* defaultMode(runtime), options.model)
        sessions.set(session.id, session)
        return session
      }
      const stored = yield* store.get(sessionID as SessionID).pipe(Effect.mapError(() => Acp.RequestError.sessionNotFound(sessionID)))
      const existing = sessions.get(stored.id)
      if (existing !== undefined && existing.runtime === runtime) return existing
      if (existing?.turn !== undefined) {
        return yield* Effect.fail(Acp.RequestError.invalidRequest(undefined, `session ${sessionID} is answering a prompt; cancel it first`))
      }
      const messages = yield* store.messages(stored.id)
      const lastUser = [...messages].reverse().find((message) => message.info.role === "user")?.info
      const mode = stored.agent ?? (lastUser?.role === "user" ? lastUser.agent : undefined) ?? (yield* defaultMode(runtime))
      const model = stored.model ? `${stored.model.providerID}/${stored.model.id}` : options.model
      const session = makeSession(stored.id, runtime, mode, model)
      sessions.set(session.id, session)
      return session
    })

  return {
    find,
    newSession: (params: Acp.NewSessionRequest) =>
      Effect.gen(function*() {
        const session = yield* open(params, undefined)
        const described = yield* describe(session)
        yield* announceCommands(session)
        return { sessionId: session.id, ...described } satisfies Acp.NewSessionResponse
      }),
    loadSession: (params: Acp.LoadSessionRequest) =>
      Effect.gen(function*() {
        const session = yield* open(params, params.sessionId)
        // The whole conversation, in order, before the answer.
        const messages = yield* Context.get(session.runtime.context, SessionStore).messages(session.id)
        for (const message of messages) {
          for (const part of message.parts) {
            for (const update of replayOf(part, message.info.role, session.runtime.directory)) yield* peer.notify(session.id, update)
          }
        }
        const described = yield* describe(session)
        yield* announceCommands(session)
        return described satisfies Acp.LoadSessionResponse
      }),
    resumeSession: (params: Acp.ResumeSessionRequest) =>
      Effect.gen(function*() {
        const session = yield* open(params, params.sessionId)
        const described = yield* describe(session)
        yield* announceCommands(session)
        return described satisfies Acp.ResumeSessionResponse
      }),
    closeSession: (sessionId: string) =>
      Effect.gen(function*() {
        const session = yield* find(sessionId)
        if (session.turn !== undefined) {
          return yield* Effect.fail(Acp.RequestError.invalidRequest(undefined, `session ${sessionId} is answering a prompt; cancel it first`))
        }
        sessions.delete(sessionId)
        return {}
      }),
    listSessions: (params: Acp.ListSessionsRequest) => listSessions(deps, params),
    setMode: (sessionId: string, modeId: string) => Effect.flatMap(find(sessionId), (session) => setMode(peer, session, modeId)),
    setConfigOption: (params: Acp.SetSessionConfigOptionRequest) => Effect.flatMap(find(params.sessionId), (session) => setConfigOption(session, params)),
    authenticate: (methodId: string) => authenticate(deps, methodId)
  }
}

/** `session/list`: the sessions started in `cwd` (else `--dir`), newest first. */
export const listSessions = (deps: SessionOpsDeps, params: Acp.ListSessionsRequest) =>
  Effect.gen(function*() {
    const cwd = yield* checkCwd(params.cwd ?? deps.options.directory)
    const runtime = yield* deps.runtimes.get(cwd, [])
    const page = yield* Context.get(runtime.context, SessionStore).list({ limit: 100, ...(params.cursor ? { cursor: params.cursor } : {}) })
    return {
      sessions: page.items
        .filter((session) => session.directory === cwd)
        .map((session) => ({ sessionId: session.id, cwd: session.directory, title: session.title, updatedAt: new Date(session.time.updated).toISOString() })),
      ...(page.next ? { nextCursor: page.next } : {})
    } satisfies Acp.ListSessionsResponse
  })

/** `session/set_mode`: the primary agent the next prompt runs. */
export const setMode = (peer: AcpPeer, session: AcpSession, modeId: string) =>
  Effect.gen(function*() {
    const modes = yield* modesOf(session)
    if (!modes.availableModes.some((mode) => mode.id === modeId)) {
      const names = modes.availableModes.map((mode) => mode.id).join(", ")
      return yield* Effect.fail(Acp.RequestError.invalidParams(undefined, `no such mode: ${modeId} (modes: ${names})`))
    }
    session.mode = modeId
    yield* peer.notify(session.id, { sessionUpdate: "current_mode_update", currentModeId: modeId })
    return {}
  })

/** `session/set_config_option`: the model (the one option). */
export const setConfigOption = (session: AcpSession, params: Acp.SetSessionConfigOptionRequest) =>
  Effect.gen(function*() {
    if (params.configId !== "model") {
      return yield* Effect.fail(Acp.RequestError.invalidParams(undefined, `no such option: ${params.configId} (options: model)`))
    }
    const value = params.value
    const current = yield* modelOption(session.runtime, session.model)
    const choices = current.flatMap((option) => (option.options as Array<Acp.SessionConfigSelectOption>).map((choice) => choice.value))
    if (typeof value !== "string" || !choices.includes(value)) {
      return yield* Effect.fail(Acp.RequestError.invalidParams(undefined, `model: not a configured, usable model: ${String(value)} (models: ${choices.join(", ")})`))
    }
    session.model = value
    return { configOptions: yield* modelOption(session.runtime, session.model) } satisfies Acp.SetSessionConfigOptionResponse
  })

/** `authenticate`: the provider's key is there, or an error naming what to set. */
export const authenticate = (deps: SessionOpsDeps, methodId: string) =>
  Effect.gen(function*() {
    const runtime = yield* deps.runtimes.get(deps.options.directory, [])
    const config = yield* Context.get(runtime.context, ConfigService).get()
    const provider = providerCatalog(config, Context.get(runtime.context, Instance).env).find((entry) => entry.id === methodId)
    if (provider === undefined) return yield* Effect.fail(Acp.RequestError.invalidParams(undefined, `no such auth method: ${methodId}`))
    if (provider.problem !== undefined) return yield* Effect.fail(Acp.RequestError.authRequired(undefined, `${provider.name}: ${provider.problem}`))
    return {}
  })
