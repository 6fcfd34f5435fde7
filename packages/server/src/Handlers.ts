import {
  AgentRegistry,
  Bus,
  CommandRegistry,
  ConfigService,
  Identifier,
  SessionChanges,
  Instance,
  InstructionLoader,
  Mcp,
  Permission,
  PermissionService,
  QuestionService,
  redactSecrets,
  SessionLoop,
  SessionStore,
  shownConfig,
  SkillRegistry,
  type RunOutcome,
  VERSION
} from "@agent/core"
import {
  Agent,
  AgentApi,
  BadRequestError,
  BusyError,
  ForbiddenError,
  type RevertError,
  type MessageID,
  NotFoundError,
  type PermissionRuleset,
  type PromptBody,
  ProviderFailedError,
  type Session,
  type SessionID
} from "@agent/domain"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Chunk, Effect, FiberSet, Layer, Stream } from "effect"
import * as path from "node:path"
import { EventHub, type ServerEvent } from "./EventHub.js"
import { readRefusal, shellRefusal, toPromptParts } from "./PromptParts.js"


const notFound = (error: { readonly message: string }) => NotFoundError.of(error.message)
const revertError = (error: RevertError | { readonly _tag: "SessionNotFound"; readonly message: string }) =>
  error._tag === "SessionNotFound" || error.reason === "point_not_found"
    ? NotFoundError.of(error.message)
    : error.reason === "busy"
    ? BusyError.of(error.message)
    : BadRequestError.of(error.message)
const revertResponse = (result: { readonly session: Session; readonly restored: ReadonlyArray<string>; readonly conflicts: ReadonlyArray<string> }) => ({
  ...result.session,
  restored: result.restored,
  conflicts: result.conflicts
})
const badRequest = (error: { readonly message: string }) => BadRequestError.of(error.message)

export const SessionHandlers = HttpApiBuilder.group(AgentApi, "session", (handlers) =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const loop = yield* SessionLoop
    const permissions = yield* PermissionService
    const commands = yield* CommandRegistry
    const changes = yield* SessionChanges
    const instance = yield* Instance
    // prompt_async runs outlive their request; the server's scope ends them.
    const background = yield* FiberSet.make()

    const bus = yield* Bus
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

    /**
     * Tells event-stream clients (`agent run --attach`) how the run of their prompt ended, or
     * why it never started: a `prompt_async` caller has no other way to learn it.
     */
    const announce = <A extends RunOutcome, E extends { readonly _tag: string; readonly message: string }, R>(
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

    const prompt = (id: SessionID, body: PromptBody) =>
      Effect.gen(function*() {
        yield* session(id)
        const parts = yield* toPromptParts(body.parts, instance, rulesFor(id, body.agent))
        if (parts.length === 0) return yield* BadRequestError.of("parts: a prompt needs at least one part")
        const messageID = body.messageID ?? (Identifier.ascending("message") as MessageID)
        const outcome = yield* announce(id, messageID, loop.prompt({
          sessionID: id,
          parts,
          messageID,
          ...(body.agent !== undefined ? { agent: body.agent } : {}),
          ...(body.model !== undefined ? { model: body.model } : {}),
          ...(body.system !== undefined ? { system: body.system } : {}),
          ...(body.noReply !== undefined ? { noReply: body.noReply } : {}),
          ...(body.tools !== undefined ? { tools: body.tools } : {}),
          ...(body.maxSteps !== undefined ? { maxSteps: body.maxSteps } : {})
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
      .handle("status", () =>
        loop.statuses().pipe(Effect.map((statuses) => Object.fromEntries(statuses))))
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
          yield* loop.abort(path.id)
          yield* store.remove(path.id).pipe(Effect.mapError(notFound))
          return true
        }))
      .handle("children", ({ path }) => session(path.id).pipe(Effect.zipRight(store.children(path.id))))
      .handle("todo", ({ path }) => session(path.id).pipe(Effect.zipRight(store.todos(path.id))))
      .handle("diff", ({ path }) => changes.diff(path.id).pipe(Effect.mapError(notFound)))
      .handle("revert", ({ path, payload }) =>
        changes.revert({
          sessionID: path.id,
          messageID: payload.messageID,
          ...(payload.partID !== undefined ? { partID: payload.partID } : {})
        }).pipe(Effect.mapError(revertError), Effect.map(revertResponse)))
      .handle("unrevert", ({ path }) =>
        changes.unrevert(path.id).pipe(Effect.mapError(revertError), Effect.map(revertResponse)))
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
      .handle("prompt", ({ path, payload }) => prompt(path.id, payload))
      .handle("message", ({ path }) => store.getMessage(path.id, path.messageID).pipe(Effect.mapError(notFound)))
      .handle("promptAsync", ({ path, payload }) =>
        Effect.gen(function*() {
          yield* session(path.id)
          // Bad parts are the caller's error, reported now rather than lost in the background.
          const parts = yield* toPromptParts(payload.parts, instance, rulesFor(path.id, payload.agent))
          if (parts.length === 0) return yield* BadRequestError.of("parts: a prompt needs at least one part")
          yield* prompt(path.id, payload).pipe(
            Effect.catchAllCause((cause) => Effect.logError("prompt_async failed", cause)),
            FiberSet.run(background)
          )
        }))
      .handle("abort", ({ path }) => session(path.id).pipe(Effect.zipRight(loop.abort(path.id)), Effect.as(true)))
      .handle("fork", ({ path, payload }) =>
        store.fork(path.id, payload.messageID !== undefined ? { messageID: payload.messageID } : {}).pipe(
          Effect.mapError(notFound)
        ))
      .handle("summarize", ({ path }) =>
        session(path.id).pipe(
          Effect.zipRight(loop.compact(path.id)),
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
      .handle("command", ({ path, payload }) =>
        Effect.gen(function*() {
          yield* session(path.id)
          const messageID = payload.messageID ?? (Identifier.ascending("message") as MessageID)
          // `@path` in the arguments reads a file into the message: the same rules as a file part.
          // A shell piece the arguments change runs only when the bash rules allow it without asking.
          const ruleset = payload.arguments.trim() === "" ? undefined : yield* rulesFor(path.id, payload.agent)
          const outcome = yield* announce(path.id, messageID, commands.execute({
            sessionID: path.id,
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
            ...(payload.maxSteps !== undefined ? { maxSteps: payload.maxSteps } : {})
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
          return yield* store.getMessage(path.id, outcome.messageID).pipe(Effect.mapError(notFound))
        }))
      .handle("respond", ({ path, payload }) =>
        Effect.gen(function*() {
          const pending = yield* permissions.list()
          if (!pending.some((request) => request.id === path.permissionID && request.sessionID === path.id)) {
            return yield* NotFoundError.of(`no pending permission request ${path.permissionID} in session ${path.id}`)
          }
          yield* permissions.reply({
            requestID: path.permissionID,
            reply: payload.response,
            ...(payload.message !== undefined ? { message: payload.message } : {})
          }).pipe(Effect.mapError(notFound))
          return true
        }))
  }))

export const PermissionHandlers = HttpApiBuilder.group(AgentApi, "permission", (handlers) =>
  Effect.gen(function*() {
    const permissions = yield* PermissionService
    return handlers
      .handle("list", () => permissions.list())
      .handle("reply", ({ path, payload }) =>
        permissions.reply({
          requestID: path.requestID,
          reply: payload.reply,
          ...(payload.message !== undefined ? { message: payload.message } : {})
        }).pipe(Effect.mapError(notFound), Effect.as(true)))
  }))

export const QuestionHandlers = HttpApiBuilder.group(AgentApi, "question", (handlers) =>
  Effect.gen(function*() {
    const questions = yield* QuestionService
    return handlers
      .handle("list", () => questions.list())
      .handle("reply", ({ path, payload }) =>
        questions.reply(path.requestID, payload.answers).pipe(Effect.mapError(notFound), Effect.as(true)))
      .handle("reject", ({ path }) => questions.reject(path.requestID).pipe(Effect.mapError(notFound), Effect.as(true)))
  }))

export const InstanceHandlers = HttpApiBuilder.group(AgentApi, "instance", (handlers) =>
  Effect.gen(function*() {
    const agents = yield* AgentRegistry
    const config = yield* ConfigService
    const mcp = yield* Mcp
    const commands = yield* CommandRegistry
    const instance = yield* Instance
    const instructions = yield* InstructionLoader
    const skills = yield* SkillRegistry
    return handlers
      .handle("commands", () => commands.list())
      .handle("instructions", ({ urlParams }) =>
        Effect.all({
          system: instructions.sources(),
          attached: urlParams.sessionID ? instructions.attached(urlParams.sessionID) : Effect.succeed([])
        }))
      .handle("skills", () =>
        Effect.map(skills.list(), (list) => list.map((skill) => ({ name: skill.name, description: skill.description, location: skill.location }))))
      // Secrets stay on the server: keys, headers and {env:}/{file:} texts are masked (ConfigRedaction.ts).
      .handle("agents", () =>
        Effect.zipWith(agents.list(), config.info(), (list, info) =>
          list.map((agent) => new Agent({ ...agent, options: redactSecrets(agent.options, info.substitutions) }))))
      .handle("config", () => Effect.map(config.info(), shownConfig))
      .handle("mcp", () => mcp.status())
      .handle("path", () =>
        Effect.succeed({
          home: instance.home,
          state: instance.paths.data,
          config: instance.paths.config,
          worktree: instance.worktree,
          directory: instance.directory
        }))
      .handle("health", () => Effect.succeed({ healthy: true as const, version: VERSION }))
      .handle("memory", () =>
        Effect.sync(() => {
          const { rss, heapTotal, heapUsed, external, arrayBuffers } = process.memoryUsage()
          return { rss, heapTotal, heapUsed, external, arrayBuffers }
        }))
  }))

export const McpHandlers = HttpApiBuilder.group(AgentApi, "mcp", (handlers) =>
  Effect.gen(function*() {
    const mcp = yield* Mcp
    const known = (name: string) =>
      mcp.status().pipe(
        Effect.filterOrFail(
          (statuses) => name in statuses,
          (statuses) => NotFoundError.of(`no MCP server named "${name}"; configured: ${Object.keys(statuses).join(", ") || "none"}`)
        )
      )
    return handlers
      .handle("connect", ({ path }) =>
        known(path.name).pipe(
          Effect.zipRight(mcp.connect(path.name).pipe(Effect.mapError(badRequest))),
          Effect.map((status) => status.status === "connected")
        ))
      .handle("disconnect", ({ path }) =>
        known(path.name).pipe(Effect.zipRight(mcp.disconnect(path.name).pipe(Effect.mapError(badRequest))), Effect.as(true)))
      .handle("logout", ({ path }) =>
        known(path.name).pipe(
          Effect.zipRight(mcp.logout(path.name).pipe(Effect.mapError(badRequest))),
          Effect.map(({ removed }) => ({ success: true as const, removed }))
        ))
  }))

const encoder = new TextEncoder()
const frame = (event: ServerEvent) => `${event.id !== undefined ? `id: ${event.id}\n` : ""}data: ${JSON.stringify(event)}\n\n`
/** The events that are ready together go out in one socket write, not one write each. */
const frames = (events: Chunk.Chunk<ServerEvent>): Chunk.Chunk<Uint8Array> => {
  let text = ""
  for (const event of events) text += frame(event)
  return Chunk.of(encoder.encode(text))
}

export const EventHandlers = HttpApiBuilder.group(AgentApi, "event", (handlers) =>
  Effect.gen(function*() {
    const hub = yield* EventHub
    return handlers.handleRaw("subscribe", () =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const header = request.headers["last-event-id"]
        const lastEventId = header !== undefined && /^\d+$/.test(header) ? Number(header) : undefined
        // The subscription belongs to the stream, so it lives as long as the connection.
        const events = Stream.unwrapScoped(Effect.gen(function*() {
          const subscription = yield* hub.subscribe(lastEventId)
          // A client that stopped reading cannot even take its final event: close its socket.
          yield* subscription.dropped.pipe(
            Effect.zipRight(Effect.sleep("1 second")),
            Effect.zipRight(Effect.sync(() => NodeHttpServerRequest.toServerResponse(request).destroy())),
            Effect.forkScoped
          )
          return subscription.events
        }))
        // Heartbeats arrive through the hub, in the same queue as the events.
        const body = Stream.make<Array<ServerEvent>>({ type: "server.connected", properties: {} }).pipe(
          Stream.concat(events),
          Stream.mapChunks(frames)
        )
        return HttpServerResponse.stream(body, {
          contentType: "text/event-stream",
          headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
        })
      }))
  }))

export const ApiHandlers = Layer.mergeAll(
  SessionHandlers,
  PermissionHandlers,
  QuestionHandlers,
  InstanceHandlers,
  McpHandlers,
  EventHandlers
)
