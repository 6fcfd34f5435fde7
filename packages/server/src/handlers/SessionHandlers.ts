import {
  Bus,
  CommandRegistry,
  commandPrompt,
  type ExecuteCommandInput,
  Identifier,
  Instance,
  Permission,
  PermissionService,
  type PromptInput,
  type RunOutcome,
  SessionChanges,
  type RevertInput,
  SessionLoop,
  SessionStore
} from "@agent/core"
import {
  AgentApi,
  type CommandInput,
  BadRequestError,
  ForbiddenError,
  type MessageID,
  NotFoundError,
  type PermissionRuleset,
  type PromptBody,
  ProviderFailedError,
  type RevertError,
  type SessionID,
  type SessionNotFound
} from "@agent/domain"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect, FiberSet, Option } from "effect"
import { readRefusal, shellRefusal, toPromptParts } from "../PromptParts.js"
import { SessionRouting, type SessionUnavailable } from "../cluster/SessionRouting.js"
import { badRequest, notFound, revertError, revertResponse } from "./HandlerErrors.js"

/** The services the session routes use, and the checks they share. */
const sessionContext = Effect.gen(function*() {
  const store = yield* SessionStore
  const loop = yield* SessionLoop
  const permissions = yield* PermissionService
  const commands = yield* CommandRegistry
  const changes = yield* SessionChanges
  const instance = yield* Instance
  // prompt_async runs outlive their request; the server's scope ends them.
  const background = yield* FiberSet.make()

  const bus = yield* Bus
  // On a replica (agent serve --replica) prompts and aborts go to the session's owner.
  const routing = Option.getOrUndefined(yield* Effect.serviceOption(SessionRouting))
  const run = (input: PromptInput & { readonly messageID: MessageID }) =>
    routing
      ? routing.prompt(input).pipe(Effect.catchTag("SessionUnavailable", (error) => Effect.fail(BadRequestError.of(error.message))))
      : loop.prompt(input)
  const abort = (id: SessionID) => routing ? routing.abort(id) : loop.abort(id)
  const unavailable = (error: SessionUnavailable) => Effect.fail(BadRequestError.of(error.message))
  // On a replica a compaction and a revert run on the session's owner, the one that knows whether it runs.
  const compact = (id: SessionID) => routing ? routing.compact(id).pipe(Effect.catchTag("SessionUnavailable", unavailable)) : loop.compact(id)
  const revertFailed = (error: RevertError | SessionNotFound | SessionUnavailable) =>
    error._tag === "SessionUnavailable" ? BadRequestError.of(error.message) : revertError(error)
  const revert = (input: RevertInput) => (routing ? routing.revert(input) : changes.revert(input)).pipe(Effect.mapError(revertFailed))
  const unrevert = (id: SessionID) => (routing ? routing.unrevert(id) : changes.unrevert(id)).pipe(Effect.mapError(revertFailed))
  /** The sessions that are not idle: on a replica, every replica's. */
  const statuses = routing ? routing.statuses : loop.statuses
  /** A command: on a replica it is expanded here and its prompt runs on the session's owner. */
  const executeCommand = (input: ExecuteCommandInput & { readonly messageID: MessageID }) =>
    routing
      ? Effect.gen(function*() {
        const expanded = yield* commands.expand(input)
        const outcome = yield* run(commandPrompt(expanded, input, input.messageID))
        yield* bus.publish({
          type: "command.executed",
          properties: { name: expanded.command.name, sessionID: input.sessionID, arguments: input.arguments ?? "", messageID: input.messageID }
        })
        return { ...outcome, messageID: input.messageID }
      })
      : commands.execute(input)
  const pendingPermissions = routing ? routing.permissions : permissions.list
  const replyPermission = routing ? routing.replyPermission : permissions.reply
  const session = (id: SessionID) => store.get(id).pipe(Effect.mapError(notFound))
  /** What the session's prompt would be decided by, for the files it asks the server to read. */
  const rulesFor = (id: SessionID, agent: string | undefined) =>
    loop.rules({ sessionID: id, ...(agent !== undefined ? { agent } : {}) }).pipe(
      Effect.catchTags({
        SessionNotFound: (error) => Effect.fail(notFound(error)),
        AgentNotFound: (error) => Effect.fail(badRequest(error))
      })
    )
  /** Rules that arrive over the API are session rules, whatever source they claim. */
  const apiRules = (rules: PermissionRuleset) => Permission.asSession(Permission.strip(rules), "set over the API")
  return {
    routing,
    store,
    loop,
    commands,
    changes,
    instance,
    background,
    bus,
    session,
    rulesFor,
    apiRules,
    run,
    abort,
    compact,
    revert,
    unrevert,
    statuses,
    executeCommand,
    pendingPermissions,
    replyPermission
  }
})
type SessionContext = Effect.Effect.Success<typeof sessionContext>

/**
 * Tells event-stream clients (`agent run --attach`) how the run of their prompt ended, or
 * why it never started: a `prompt_async` caller has no other way to learn it.
 */
const announce = <A extends RunOutcome, E extends { readonly _tag: string; readonly message: string }, R>(
  bus: Bus["Type"],
  sessionID: SessionID,
  messageID: MessageID,
  run: Effect.Effect<A, E, R>
) =>
  run.pipe(
    Effect.tap((outcome) =>
      bus.publish({
        type: "prompt.finished",
        properties: {
          sessionID,
          messageID,
          reason: outcome.reason,
          ...(outcome.error ? { error: outcome.error } : {}),
          ...(outcome.message?.info.role === "assistant" ? { assistantID: outcome.message.info.id } : {}),
          usage: outcome.usage
        }
      })
    ),
    Effect.tapError((error) =>
      bus.publish({
        type: "prompt.finished",
        properties: {
          sessionID,
          messageID,
          reason: "error",
          error: { name: error._tag, data: { message: error.message } },
          usage: { cost: 0, tokens: 0, steps: 0 }
        }
      })
    )
  )

/** A prompt run to its end; the answer, or what an aborted run left. */
const prompt = (context: SessionContext, id: SessionID, body: PromptBody) =>
  Effect.gen(function*() {
    const { bus, instance, rulesFor, run, session, store } = context
    yield* session(id)
    const parts = yield* toPromptParts(body.parts, instance, rulesFor(id, body.agent))
    if (parts.length === 0) return yield* BadRequestError.of("parts: a prompt needs at least one part")
    const messageID = body.messageID ?? (Identifier.ascending("message") as MessageID)
    const outcome = yield* announce(bus, id, messageID, run({
      sessionID: id,
      parts,
      messageID,
      ...(body.agent !== undefined ? { agent: body.agent } : {}),
      ...(body.model !== undefined ? { model: body.model } : {}),
      ...(body.system !== undefined ? { system: body.system } : {}),
      ...(body.noReply !== undefined ? { noReply: body.noReply } : {}),
      ...(body.tools !== undefined ? { tools: body.tools } : {}),
      ...(body.maxSteps !== undefined ? { maxSteps: body.maxSteps } : {}),
      ...(body.variant !== undefined ? { variant: body.variant } : {})
    })).pipe(
      Effect.catchTags({
        SessionNotFound: (error) => Effect.fail(notFound(error)),
        AgentNotFound: (error) => Effect.fail(badRequest(error)),
        ModelNotConfigured: (error) => Effect.fail(badRequest(error))
      })
    )
    if (outcome.message) return outcome.message
    // An aborted run has no outcome message: answer with what it left, as it was stored.
    const messages = yield* store.messages(id)
    const answer = messages.findLast((message) => message.info.role === "assistant" && message.info.parentID === messageID)
    return answer ?? (yield* store.getMessage(id, messageID).pipe(Effect.mapError(notFound)))
  })

/** `/command`: runs a command of the session's agent; `@path` and shell pieces in its arguments follow the session's rules. */
const command = (context: SessionContext, id: SessionID, payload: typeof CommandInput.Type) =>
  Effect.gen(function*() {
    const { executeCommand, instance, rulesFor, session, store } = context
    yield* session(id)
    const messageID = payload.messageID ?? (Identifier.ascending("message") as MessageID)
    // `@path` in the arguments reads a file into the message: the same rules as a file part.
    // A shell piece the arguments change runs only when the bash rules allow it without asking.
    const ruleset = payload.arguments.trim() === "" ? undefined : yield* rulesFor(id, payload.agent)
    const outcome = yield* announce(context.bus, id, messageID, executeCommand({
      sessionID: id,
      command: payload.command,
      arguments: payload.arguments,
      ...(ruleset
        ? {
          mayRead: (file, kind) => readRefusal(file, kind, instance, ruleset)?.message,
          mayRun: (command) => shellRefusal(command, ruleset)
        }
        : {}),
      messageID,
      ...(payload.agent !== undefined ? { agent: payload.agent } : {}),
      ...(payload.model !== undefined ? { model: payload.model } : {}),
      ...(payload.maxSteps !== undefined ? { maxSteps: payload.maxSteps } : {}),
      ...(payload.variant !== undefined ? { variant: payload.variant } : {})
    })).pipe(
      Effect.catchTags({
        CommandNotFound: (error) => Effect.fail(notFound(error)),
        SessionNotFound: (error) => Effect.fail(notFound(error)),
        CommandError: (error) => Effect.fail(error.forbidden ? ForbiddenError.of(error.message) : badRequest(error)),
        AgentNotFound: (error) => Effect.fail(badRequest(error)),
        ModelNotConfigured: (error) => Effect.fail(badRequest(error))
      })
    )
    if (outcome.message) return outcome.message
    // Run on another replica: the answer is in the store.
    const messages = context.routing ? yield* store.messages(id) : []
    const answer = messages.findLast((message) => message.info.role === "assistant" && message.info.parentID === outcome.messageID)
    return answer ?? (yield* store.getMessage(id, outcome.messageID).pipe(Effect.mapError(notFound)))
  })

export const SessionHandlers = HttpApiBuilder.group(AgentApi, "session", (handlers) =>
  Effect.gen(function*() {
    const context = yield* sessionContext
    const { abort, apiRules, background, changes, compact, instance, loop, pendingPermissions, replyPermission, revert, rulesFor, session, statuses, store, unrevert } =
      context
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.gen(function*() {
          const page = yield* store.list({
            ...(urlParams.search !== undefined ? { search: urlParams.search } : {}),
            ...(urlParams.limit !== undefined ? { limit: urlParams.limit } : {})
          })
          const start = urlParams.start !== undefined ? Number(urlParams.start) : undefined
          return start !== undefined && Number.isFinite(start) ? page.items.filter((item) => item.time.updated >= start) : page.items
        }))
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          if (payload.parentID) yield* session(payload.parentID)
          return yield* store.create({
            ...(payload.parentID !== undefined ? { parentID: payload.parentID } : {}),
            ...(payload.title !== undefined ? { title: payload.title } : {}),
            ...(payload.agent !== undefined ? { agent: payload.agent } : {}),
            ...(payload.model !== undefined ? { model: { id: payload.model.modelID, providerID: payload.model.providerID } } : {}),
            ...(payload.permission !== undefined ? { permission: apiRules(payload.permission) } : {})
          })
        }))
      .handle("status", () => statuses().pipe(Effect.map((found) => Object.fromEntries(found))))
      .handle("get", ({ path }) => session(path.id))
      .handle("update", ({ path, payload }) =>
        store.update(path.id, {
          ...(payload.title !== undefined ? { title: payload.title } : {}),
          ...(payload.permission !== undefined ? { permission: apiRules(payload.permission) } : {}),
          ...(payload.time?.archived !== undefined ? { archived: payload.time.archived } : {})
        }).pipe(Effect.mapError(notFound)))
      .handle("delete", ({ path }) =>
        Effect.gen(function*() {
          yield* session(path.id)
          yield* abort(path.id)
          yield* store.remove(path.id).pipe(Effect.mapError(notFound))
          return true
        }))
      .handle("children", ({ path }) => session(path.id).pipe(Effect.zipRight(store.children(path.id))))
      .handle("todo", ({ path }) => session(path.id).pipe(Effect.zipRight(store.todos(path.id))))
      .handle("diff", ({ path }) => changes.diff(path.id).pipe(Effect.mapError(notFound)))
      .handle("revert", ({ path, payload }) =>
        revert({
          sessionID: path.id,
          messageID: payload.messageID,
          ...(payload.partID !== undefined ? { partID: payload.partID } : {})
        }).pipe(Effect.map(revertResponse)))
      .handle("unrevert", ({ path }) =>
        unrevert(path.id).pipe(Effect.map(revertResponse)))
      .handle("messages", ({ path, urlParams }) =>
        Effect.gen(function*() {
          yield* session(path.id)
          if (urlParams.limit === undefined && urlParams.before === undefined) return yield* store.messages(path.id)
          const page = yield* store.messagePage(path.id, {
            limit: urlParams.limit ?? 100,
            ...(urlParams.before !== undefined ? { before: urlParams.before } : {})
          })
          return [...page.items].reverse()
        }))
      .handle("prompt", ({ path, payload }) => prompt(context, path.id, payload))
      .handle("message", ({ path }) => store.getMessage(path.id, path.messageID).pipe(Effect.mapError(notFound)))
      .handle("promptAsync", ({ path, payload }) =>
        Effect.gen(function*() {
          yield* session(path.id)
          // Bad parts are the caller's error, reported now rather than lost in the background.
          const parts = yield* toPromptParts(payload.parts, instance, rulesFor(path.id, payload.agent))
          if (parts.length === 0) return yield* BadRequestError.of("parts: a prompt needs at least one part")
          yield* prompt(context, path.id, payload).pipe(
            Effect.catchAllCause((cause) => Effect.logError("prompt_async failed", cause)),
            FiberSet.run(background)
          )
        }))
      .handle("abort", ({ path }) => session(path.id).pipe(Effect.zipRight(abort(path.id)), Effect.as(true)))
      .handle("fork", ({ path, payload }) =>
        store.fork(path.id, payload.messageID !== undefined ? { messageID: payload.messageID } : {}).pipe(
          Effect.mapError(notFound)
        ))
      .handle("summarize", ({ path }) =>
        session(path.id).pipe(
          Effect.zipRight(compact(path.id)),
          Effect.catchTags({
            SessionNotFound: (error) => Effect.fail(notFound(error)),
            AgentNotFound: (error) => Effect.fail(badRequest(error)),
            ModelNotConfigured: (error) => Effect.fail(badRequest(error))
          }),
          Effect.as(true)
        ))
      .handle("summary", ({ path }) =>
        loop.summarize(path.id).pipe(
          Effect.map((text) => ({ text })),
          Effect.catchTags({
            SessionNotFound: (error) => Effect.fail(notFound(error)),
            AgentNotFound: (error) => Effect.fail(badRequest(error)),
            ModelNotConfigured: (error) => Effect.fail(badRequest(error)),
            ProviderError: (error) => Effect.fail(ProviderFailedError.of(`the summary model failed: ${error.message}`))
          })
        ))
      .handle("command", ({ path, payload }) => command(context, path.id, payload))
      .handle("respond", ({ path, payload }) =>
        Effect.gen(function*() {
          const pending = yield* pendingPermissions()
          if (!pending.some((request) => request.id === path.permissionID && request.sessionID === path.id)) {
            return yield* NotFoundError.of(`no pending permission request ${path.permissionID} in session ${path.id}`)
          }
          yield* replyPermission({
            requestID: path.permissionID,
            reply: payload.response,
            ...(payload.message !== undefined ? { message: payload.message } : {})
          }).pipe(Effect.mapError(notFound))
          return true
        }))
  }))
