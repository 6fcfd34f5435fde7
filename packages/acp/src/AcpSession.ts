// One editor session on one runtime: its explicit state (mode, model, what the editor was shown,
// the turn in progress), and what the connection does with it: the bus events that reach it,
// permission questions, a prompt's turn, cancel.
import {
  AgentRegistry,
  Bus,
  CommandRegistry,
  Identifier,
  PermissionService,
  ProviderRegistry,
  SessionLoop
} from "@agent/core"
import {
  type BusEvent,
  type MessageID,
  parseModelRef,
  type PermissionRequest,
  type SessionID,
  type TokenUsage
} from "@agent/domain"
import * as Acp from "@agentclientprotocol/sdk"
import { Context, Deferred, Effect, Either } from "effect"
import type { AcpRuntime } from "./AcpRuntimes.js"
import { promptParts, stopReasonOf, toolKind } from "./AcpTranslate.js"
import { makeView, updatesOf, type ViewState } from "./AcpView.js"

/** A prompt being answered. */
export interface Turn {
  readonly messageID: MessageID
  /** Set by `session/cancel` (or the client leaving): the answer is `cancelled` whatever the run did. */
  cancelled: boolean
  /** Settled once the pump has sent every update of the run (it saw our `prompt.finished`). */
  readonly flushed: Deferred.Deferred<void>
  /** Settled when the turn is over and answered. */
  readonly ended: Deferred.Deferred<void>
  /** Permission questions waiting on the editor, to withdraw on cancel. */
  readonly asks: Map<string, AbortController>
}

export interface AcpSession {
  readonly id: SessionID
  readonly runtime: AcpRuntime
  /** The primary agent the next prompt runs (the ACP mode). */
  mode: string
  /** `provider/model` chosen in the editor, else the agent's or config's. */
  model: string | undefined
  readonly view: ViewState
  turn: Turn | undefined
  /** Context window of each model seen, for `usage_update`. */
  readonly windows: Map<string, number>
  /** The last assistant message's model and the session's cost so far. */
  last: { readonly providerID: string; readonly modelID: string } | undefined
}

export const makeSession = (id: SessionID, runtime: AcpRuntime, mode: string, model: string | undefined): AcpSession => ({
  id,
  runtime,
  mode,
  model,
  view: makeView(),
  turn: undefined,
  windows: new Map(),
  last: undefined
})

/** What a session needs of its connection. */
export interface AcpPeer {
  /** Sends one update; a closed connection drops it. */
  readonly notify: (sessionID: SessionID, update: Acp.SessionUpdate) => Effect.Effect<void>
  readonly requestPermission: (params: Acp.RequestPermissionRequest, signal: AbortSignal) => Effect.Effect<Acp.RequestPermissionResponse, unknown>
}

/** The session an event is about (the session itself for session events). */
export const sessionOf = (event: BusEvent): SessionID | undefined => {
  const properties = event.properties as Record<string, unknown>
  if (typeof properties.sessionID === "string") return properties.sessionID as SessionID
  const part = properties.part as { sessionID?: SessionID } | undefined
  if (part?.sessionID !== undefined) return part.sessionID
  const info = properties.info as { sessionID?: SessionID; id?: SessionID } | undefined
  if (event.type.startsWith("session.")) return info?.id
  return info?.sessionID
}

const tokensInContext = (tokens: TokenUsage) => tokens.input + tokens.cache.read + tokens.cache.write + tokens.output

/** The context window of the model of the session's last step (0 when the model is not known). */
const windowOf = (session: AcpSession) =>
  Effect.gen(function*() {
    const last = session.last
    if (last === undefined) return 0
    const key = `${last.providerID}/${last.modelID}`
    const known = session.windows.get(key)
    if (known !== undefined) return known
    const providers = Context.get(session.runtime.context, ProviderRegistry)
    const size = yield* providers.resolve(last).pipe(Effect.map((model) => model.info.limit.context), Effect.orElseSucceed(() => 0))
    session.windows.set(key, size)
    return size
  })

/** An event of the session's own runs while a turn is on: its updates, in order. */
export const showEvent = (peer: AcpPeer, session: AcpSession, event: BusEvent) =>
  Effect.gen(function*() {
    if (event.type === "message.updated" && event.properties.info.role === "assistant") {
      session.last = { providerID: event.properties.info.providerID, modelID: event.properties.info.modelID }
    }
    if (event.type === "message.part.updated" && event.properties.part.type === "step-finish") {
      const size = yield* windowOf(session)
      const cost = event.properties.part.cost
      if (size > 0) {
        yield* peer.notify(session.id, {
          sessionUpdate: "usage_update",
          used: tokensInContext(event.properties.part.tokens),
          size,
          ...(cost > 0 ? { cost: { amount: cost, currency: "USD" } } : {})
        })
      }
    }
    for (const update of updatesOf(session.view, event, session.runtime.directory)) yield* peer.notify(session.id, update)
  })

/** The options of a permission question: ids are the CLI's answers. */
const permissionOptions = (request: PermissionRequest): Array<Acp.PermissionOption> => {
  const always = request.always.length > 0 ? ` (${request.permission} ${request.always.join(", ")})` : ""
  return [
    { optionId: "once", name: "Allow once", kind: "allow_once" },
    { optionId: "always", name: `Allow always${always}`, kind: "allow_always" },
    { optionId: "reject", name: "Reject", kind: "reject_once" },
    { optionId: "reject-always", name: `Reject always${always}`, kind: "reject_always" }
  ]
}

/** Feedback an editor may send with a rejection (`_meta.feedback`): the model reads it and goes on. */
const feedbackOf = (response: Acp.RequestPermissionResponse) => {
  const meta = (response.outcome as { _meta?: Record<string, unknown> | null })._meta ?? response._meta
  const feedback = meta?.feedback
  return typeof feedback === "string" && feedback.trim() !== "" ? feedback : undefined
}

/** Asks the editor about one permission request and answers it with the editor's choice. */
export const askEditor = (peer: AcpPeer, session: AcpSession, request: PermissionRequest) =>
  Effect.gen(function*() {
    const permissions = Context.get(session.runtime.context, PermissionService)
    const controller = new AbortController()
    session.turn?.asks.set(request.id, controller)
    const patterns = request.patterns.join(", ")
    const params: Acp.RequestPermissionRequest = {
      sessionId: session.id,
      toolCall: {
        toolCallId: request.tool?.callID ?? request.id,
        title: request.requiresPerson === undefined ? `${request.permission} ${patterns}` : `${request.permission} ${patterns} (${request.requiresPerson})`,
        kind: toolKind(request.permission),
        rawInput: request.metadata
      },
      options: permissionOptions(request)
    }
    const answer = yield* peer.requestPermission(params, controller.signal).pipe(Effect.either)
    session.turn?.asks.delete(request.id)
    const response = Either.getOrUndefined(answer)
    const outcome = response?.outcome
    const chosen = outcome?.outcome === "selected" ? outcome.optionId : "reject"
    const feedback = response === undefined ? undefined : feedbackOf(response)
    yield* permissions.reply(
      chosen === "once" || chosen === "always"
        ? { requestID: request.id, reply: chosen }
        : { requestID: request.id, reply: "reject", ...(chosen === "reject-always" ? { remember: true } : {}), ...(feedback ? { message: feedback } : {}) }
    ).pipe(Effect.ignore)
  })

/** A `/name args` prompt for one of the commands. */
const commandOf = (blocks: ReadonlyArray<Acp.ContentBlock>, names: ReadonlySet<string>) => {
  const first = blocks[0]
  if (first?.type !== "text") return undefined
  const match = /^\/(\S+)\s*([\s\S]*)$/.exec(first.text.trim())
  if (!match || !names.has(match[1]!)) return undefined
  return { name: match[1]!, arguments: match[2]!, rest: blocks.slice(1) }
}

/** Why a prompt could not be answered, as a JSON-RPC error. */
export class TurnFailed extends Error {
  constructor(readonly error: Acp.RequestError) {
    super(error.message)
  }
}

/**
 * Runs one prompt to its end: the run on the session loop, then, once the pump has sent every
 * update of it, the ACP stop reason (or a JSON-RPC error naming what went wrong).
 */
export const runTurn = (session: AcpSession, blocks: ReadonlyArray<Acp.ContentBlock>) =>
  Effect.gen(function*() {
    const services = session.runtime.context
    const loop = Context.get(services, SessionLoop)
    const commands = Context.get(services, CommandRegistry)
    const bus = Context.get(services, Bus)
    const messageID = Identifier.ascending("message") as MessageID
    const turn: Turn = { messageID, cancelled: false, flushed: yield* Deferred.make<void>(), ended: yield* Deferred.make<void>(), asks: new Map() }
    // Checked and taken with nothing in between: two prompts at once cannot both start.
    if (session.turn !== undefined) {
      return yield* Effect.fail(Acp.RequestError.invalidRequest(undefined, `session ${session.id} is already answering a prompt; cancel it first (session/cancel)`))
    }
    session.turn = turn
    // Whatever happens to the run (a defect included), the session is free again and the turn over.
    const release = Effect.suspend(() => {
      if (session.turn === turn) session.turn = undefined
      return Deferred.succeed(turn.ended, undefined)
    })
    return yield* answerTurn(session, turn, blocks, { loop, commands, bus }).pipe(Effect.ensuring(release))
  })

/** The run of a turn and its answer (see `runTurn`). */
const answerTurn = (
  session: AcpSession,
  turn: Turn,
  blocks: ReadonlyArray<Acp.ContentBlock>,
  services: { readonly loop: SessionLoop["Type"]; readonly commands: CommandRegistry["Type"]; readonly bus: Bus["Type"] }
) =>
  Effect.gen(function*() {
    const { loop, commands, bus } = services
    const messageID = turn.messageID
    const model = session.model === undefined ? undefined : parseModelRef(session.model)
    const common = { sessionID: session.id, agent: session.mode, messageID, ...(model ? { model } : {}), tools: { question: false } }
    const names = new Set((yield* commands.list()).map((command) => command.name))
    const command = commandOf(blocks, names)
    const run = command === undefined
      ? loop.prompt({ ...common, parts: promptParts(blocks) })
      : commands.execute({ ...common, command: command.name, arguments: command.arguments, parts: promptParts(command.rest) })
    const outcome = yield* Effect.either(run)
    // Our own end marker: the pump answers it once every earlier event of the run was sent.
    yield* bus.publish({
      type: "prompt.finished",
      properties: {
        sessionID: session.id,
        messageID,
        reason: Either.isRight(outcome) ? outcome.right.reason : "error",
        usage: Either.isRight(outcome) ? outcome.right.usage : { cost: 0, tokens: 0, steps: 0 }
      }
    })
    yield* Deferred.await(turn.flushed).pipe(Effect.timeout("5 seconds"), Effect.ignore)
    if (turn.cancelled) return { stopReason: "cancelled" } satisfies Acp.PromptResponse
    if (Either.isLeft(outcome)) {
      const error = outcome.left
      return yield* Effect.fail(
        error._tag === "ModelNotConfigured"
          ? Acp.RequestError.authRequired(undefined, error.message)
          : Acp.RequestError.invalidParams(undefined, error.message)
      )
    }
    const { reason, error, message } = outcome.right
    const finish = message?.info.role === "assistant" ? message.info.finish : undefined
    const stopReason = stopReasonOf(reason, finish)
    if (stopReason !== undefined) return { stopReason } satisfies Acp.PromptResponse
    const why = error?.data.message ?? `the run stopped (${reason})`
    return yield* Effect.fail(new Acp.RequestError(-32603, `Internal error: ${why}`, { reason, error }))
  })

/** `session/cancel`: withdraws the editor's open questions and aborts the run (the prompt answers `cancelled`). */
export const cancelTurn = (session: AcpSession) =>
  Effect.gen(function*() {
    const turn = session.turn
    if (turn === undefined) return
    turn.cancelled = true
    for (const controller of turn.asks.values()) controller.abort()
    const loop = Context.get(session.runtime.context, SessionLoop)
    yield* loop.abort(session.id)
  })

/** The primary agents, as ACP modes. */
export const modesOf = (session: AcpSession) =>
  Effect.gen(function*() {
    const agents = Context.get(session.runtime.context, AgentRegistry)
    const list = yield* agents.list()
    const availableModes = list
      .filter((agent) => agent.mode !== "subagent" && agent.hidden !== true)
      .map((agent) => ({ id: agent.name, name: agent.name, ...(agent.description ? { description: agent.description } : {}) }))
    return { currentModeId: session.mode, availableModes } satisfies Acp.SessionModeState
  })
