// `agent run --attach <url>`: the run happens on a running `agent serve`, driven over its HTTP
// API and followed on its event stream (loaded only when it runs; see RunCommand.ts). It loads
// the typed client and the domain schemas, not the runtime.
import { ascending } from "@agent/core/runtime/Identifier"
import {
  AgentNotFound,
  BusEvent,
  type BusEventOf,
  type MessageID,
  parseModelRef,
  type PermissionID,
  type SessionID
} from "@agent/domain"
import { serveApproverSettings } from "@agent/server/ApproverSettings"
import * as Client from "@agent/server/Client"
import * as HttpClientError from "@effect/platform/HttpClientError"
import { Console, Data, Deferred, Effect, Option, Queue, Schema, Stream } from "effect"
import { type AgentChoice, checkAgent, fallbackChoice } from "./AgentChoice.js"
import { UsageError } from "./ExitCode.js"
import type { RunInput } from "./RunCommand.js"
import type { RunReport } from "./RunResult.js"
import { answerOf, atTerminal, type RunTarget, runOn, type TurnRequest } from "./RunTarget.js"

/** The server could not be reached, or failed: exit 1. */
export class AttachError extends Data.TaggedError("AttachError")<{ readonly message: string }> {}

/** Errors the server reports that are the user's to fix (as in a local run: exit 2). */
const USAGE_ERRORS = new Set(["AgentNotFound", "ModelNotConfigured", "SessionNotFound", "CommandNotFound", "CommandError", "ConfigError", "DefaultAgentError"])

/** Flags that mean nothing to a server, which runs in its own directory. */
const unsupported = (input: RunInput) => [...(Option.isSome(input.dir) ? ["--dir"] : [])]

interface Server extends Client.ClientOptions {
  /** The url as shown in messages, without credentials. */
  readonly url: string
}

/** The url and credentials: `user:pass@` in the url, else AGENT_SERVER_USERNAME / AGENT_SERVER_PASSWORD. */
const parseServer = (value: string) =>
  Effect.gen(function*() {
    const url = yield* Effect.try(() => new URL(value)).pipe(
      Effect.mapError(() => new UsageError({ message: `--attach: not a url: ${value} (expected e.g. http://127.0.0.1:4096)` }))
    )
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      return yield* new UsageError({ message: `--attach: expected an http:// or https:// url, got ${value}` })
    }
    const username = url.username ? decodeURIComponent(url.username) : process.env.AGENT_SERVER_USERNAME || undefined
    const password = url.password ? decodeURIComponent(url.password) : process.env.AGENT_SERVER_PASSWORD || undefined
    url.username = ""
    url.password = ""
    const baseUrl = url.toString().replace(/\/+$/, "")
    return { url: baseUrl, baseUrl, ...(username ? { username } : {}), ...(password ? { password } : {}) } satisfies Server
  })

/** The message at the bottom of a chain of causes (`fetch failed` → `connect ECONNREFUSED ...`). */
const rootCause = (error: unknown): string => {
  let current: unknown = error
  while (current instanceof Error && current.cause !== undefined) current = current.cause
  if (current instanceof Error) {
    const code = (current as { code?: unknown }).code
    return current.message || (typeof code === "string" ? code : current.name)
  }
  return String(current)
}

/** What went wrong with a request, for the user: unreachable, refused, or the server's own answer. */
const explain = (server: Server) => (error: unknown): AttachError | UsageError => {
  if (HttpClientError.isHttpClientError(error)) {
    if (error._tag === "RequestError") return new AttachError({ message: `cannot reach the agent server at ${server.url}: ${rootCause(error)}` })
    if (error.response.status === 403) {
      return new UsageError({
        message: `the agent server at ${server.url} refused the request (403): it answers only to its own names (see --allowed-host on agent serve)`
      })
    }
    if (error.response.status === 401) {
      return new UsageError({
        message: `the agent server at ${server.url} refused the credentials: set AGENT_SERVER_PASSWORD (and AGENT_SERVER_USERNAME) or put user:password@ in the url`
      })
    }
    return new AttachError({ message: `the agent server at ${server.url} answered ${error.response.status} to ${error.request.method} ${error.request.url}` })
  }
  const tag = (error as { _tag?: unknown })._tag
  // The API's own errors name the problem with what was sent (an unknown agent, a bad part).
  if (tag === "NotFoundError" || tag === "BadRequest" || tag === "BusyError" || tag === "Forbidden") {
    return new UsageError({ message: (error as Error).message })
  }
  if (tag === "ParseError") {
    return new AttachError({ message: `the agent server at ${server.url} sent an answer this client cannot read (another version?): ${(error as Error).message}` })
  }
  return new AttachError({ message: `the agent server at ${server.url} failed: ${error instanceof Error ? error.message : String(error)}` })
}

type PromptFinished = BusEventOf<"prompt.finished">["properties"]

const decodeEvent = Schema.decodeUnknownOption(BusEvent)

export const attach = (input: RunInput, value: string, report: RunReport) =>
  Effect.gen(function*() {
    const flags = unsupported(input)
    if (flags.length > 0) {
      return yield* new UsageError({
        message: `${flags.join(", ")} cannot be combined with --attach: the server runs in the directory it was started in`
      })
    }
    if (Option.isSome(input.command) && input.file.length > 0) {
      return yield* new UsageError({ message: "--file cannot be combined with --command and --attach: the server's command route takes no files" })
    }
    if (input.interactive && !atTerminal()) {
      return yield* new UsageError({ message: "--interactive needs a terminal on stdin and stderr" })
    }
    const server = yield* parseServer(value)
    const client = yield* Client.make(server)
    // Reachable, and the credentials are right, before anything is read or sent.
    yield* client.instance.health().pipe(Effect.mapError(explain(server)))
    return yield* runOn(input, remoteTarget(server, client), report)
  })

/** What the parts of one attached run share: the server, its client, and the turns waiting for their end. */
interface Attachment {
  readonly server: Server
  readonly client: Client.AgentClient
  readonly failure: ReturnType<typeof explain>
  /** Each sent turn's end, by its user message id. */
  readonly waiters: Map<string, Deferred.Deferred<PromptFinished, UsageError>>
  /** Fails when the event stream is gone for good: no run can be followed any more. */
  lost: Deferred.Deferred<never, AttachError> | undefined
}

const remoteTarget = (server: Server, client: Client.AgentClient): RunTarget<AttachError | UsageError> => {
  const failure = explain(server)
  const attachment: Attachment = { server, client, failure, waiters: new Map(), lost: undefined }

  /** A reply the server did not take: said on stderr, the run goes on (it may wait for another answer). */
  const warn = (what: string) => (error: unknown) => Console.error(`agent: ${what}: ${failure(error).message}`)

  return {
    directory: process.cwd(),
    approvesItself: false,
    approvals: `the database of the agent server at ${server.url}`,
    chooseAgent: chooseAgent(attachment),
    findSession: (id) =>
      client.session.get({ path: { id: id as SessionID }, urlParams: {} }).pipe(
        Effect.map((session) => session.id),
        Effect.catchAll((error) => {
          const tag = (error as { _tag?: unknown })._tag
          return Effect.fail(tag === "NotFoundError" || tag === "ParseError" ? new UsageError({ message: `session not found: ${id}` }) : failure(error))
        })
      ),
    latestSession: client.session.list({ urlParams: { limit: 1 } }).pipe(
      Effect.map((sessions) => sessions[0]?.id),
      Effect.mapError(failure)
    ),
    createSession: (title) =>
      client.session.create({ urlParams: {}, payload: title !== undefined ? { title } : {} }).pipe(
        Effect.map((session) => session.id),
        Effect.mapError(failure)
      ),
    forkSession: (id) =>
      client.session.fork({ path: { id }, urlParams: {}, payload: {} }).pipe(
        Effect.map((session) => session.id),
        Effect.mapError(failure)
      ),
    subscribe: subscribe(attachment),
    replyPermission: (request, answer) =>
      client.permission.reply({
        path: { requestID: request.id as PermissionID },
        urlParams: {},
        payload: { reply: answer.reply, ...(answer.message !== undefined ? { message: answer.message } : {}) }
      }).pipe(Effect.asVoid, Effect.catchAll(warn("the server did not take the permission answer"))),
    replyQuestion: (request, answers) =>
      (answers === undefined
        ? client.question.reject({ path: { requestID: request.id }, urlParams: {} })
        : client.question.reply({ path: { requestID: request.id }, urlParams: {}, payload: { answers } })).pipe(
          Effect.asVoid,
          Effect.catchAll(warn("the server did not take the answers"))
        ),
    turn: turn(attachment),
    abort: (sessionID) =>
      client.session.abort({ path: { id: sessionID }, urlParams: {} }).pipe(
        Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("no answer within 5 s") }),
        Effect.asVoid,
        Effect.catchAll(warn(`could not abort the run on the server (session ${sessionID})`))
      ),
    totals: (sessionID) => client.session.get({ path: { id: sessionID }, urlParams: {} }).pipe(Effect.timeout("5 seconds"), Effect.option),
    // The server holds its own asks and configuration: its `notify` and its approver apply to the
    // run (ServeApprovals.ts); this process's own are a local run's.
    approverConfig: undefined,
    notifyConfig: undefined,
    serverApprover: Client.shownApprover(server).pipe(
      Effect.map((approver) => serveApproverSettings(approver, server.url)),
      Effect.catchAll((error) => Effect.as(warn("could not read the server's approver (asks nobody answers here are rejected)")(error), undefined))
    ),
    describe: (agent, model) => Effect.succeed({ model: model ?? null, agent: agent ?? null, tools: null, mcpServers: null, hooks: [] })
  }
}

/** Whether an event is about one of `sessions`; a subagent's new session joins them. */
const belongsTo = (sessions: Set<string>, event: BusEvent): boolean => {
  switch (event.type) {
    case "session.created":
    case "session.updated":
    case "session.deleted": {
      const info = event.properties.info
      if (info.parentID !== undefined && sessions.has(info.parentID)) sessions.add(info.id)
      return sessions.has(info.id)
    }
    case "message.updated":
      return sessions.has(event.properties.info.sessionID)
    case "message.part.updated":
      return sessions.has(event.properties.part.sessionID)
    default: {
      const owner = (event.properties as { readonly sessionID?: string }).sessionID
      return owner !== undefined && sessions.has(owner)
    }
  }
}

/** Follows the server's events of one session (and its subagents'), once connected. */
const subscribe = (attachment: Attachment) => (sessionID: SessionID) =>
  Effect.gen(function*() {
    const gone = yield* Deferred.make<never, AttachError>()
    attachment.lost = gone
    const connected = yield* Deferred.make<void, AttachError>()
    // Only this session and its subagents' sessions; kept here, so the server never waits on us.
    const sessions = new Set<string>([sessionID])
    const ours = (event: BusEvent) => belongsTo(sessions, event)
    // Read as fast as the server sends, so it never drops this client for falling behind.
    const queue = yield* Queue.unbounded<BusEvent>()
    // A lost connection ends the run with an error rather than risking a wait for an end that
    // never comes (a restarted server knows nothing of the run); `-s` continues the session.
    const wire = Client.events(attachment.server).pipe(Stream.concat(Stream.fail(new Error("the server closed the event stream"))))
    yield* wire.pipe(
      Stream.runForEach((wireEvent) =>
        Effect.gen(function*() {
          if (wireEvent.type === "server.connected") return yield* Deferred.succeed(connected, undefined)
          const event = decodeEvent({ type: wireEvent.type, properties: wireEvent.properties })
          if (Option.isSome(event) && ours(event.value)) yield* Queue.offer(queue, event.value)
        })
      ),
      Effect.catchAll((error) =>
        Effect.gen(function*() {
          yield* Effect.logDebug("event stream ended", error)
          const problem = new AttachError({
            message: (yield* Deferred.isDone(connected))
              ? `lost the connection to the agent server at ${attachment.server.url} (session ${sessionID}; -s ${sessionID} continues it)`
              : `cannot follow the events of the agent server at ${attachment.server.url}: ${error.message}`
          })
          yield* Deferred.fail(connected, problem)
          yield* Deferred.fail(gone, problem)
        })
      ),
      Effect.forkScoped
    )
    yield* Deferred.await(connected)
    // A prompt is over once the events before its end have been handled.
    return Stream.fromQueue(queue).pipe(
      Stream.tap((event) =>
        event.type === "prompt.finished"
          ? Effect.suspend(() => {
            const waiter = attachment.waiters.get(event.properties.messageID)
            return waiter ? Deferred.succeed(waiter, event.properties) : Effect.void
          })
          : Effect.void
      )
    )
  })


/** Sends one turn and waits for its end on the event stream. */
const turn = (attachment: Attachment) => (request: TurnRequest) =>
  Effect.gen(function*() {
    const { client, failure, waiters } = attachment
    const id = request.sessionID
    const messageID = ascending("message") as MessageID
    const finished = yield* Deferred.make<PromptFinished, UsageError>()
    waiters.set(messageID, finished)
    const options = {
      messageID,
      ...(request.agent !== undefined ? { agent: request.agent } : {}),
      ...(request.maxSteps !== undefined ? { maxSteps: request.maxSteps } : {}),
      ...(request.variant !== undefined ? { variant: request.variant } : {})
    }
    if (request.command) {
      // The command route answers when the run is over, which may be long after an HTTP client
      // gives up; the end comes on the event stream, and the reply only matters as an error.
      yield* client.session.command({
        path: { id },
        urlParams: {},
        payload: {
          ...options,
          command: request.command.name,
          arguments: request.command.arguments,
          ...(request.model !== undefined ? { model: request.model } : {})
        }
      }).pipe(
        Effect.catchAll((error) => {
          const problem = failure(error)
          return problem._tag === "UsageError" ? Deferred.fail(finished, problem) : Effect.logDebug("command request ended", problem.message)
        }),
        Effect.fork
      )
    } else {
      const model = request.model !== undefined ? parseModelRef(request.model) : undefined
      yield* client.session.promptAsync({
        path: { id },
        urlParams: {},
        payload: {
          ...options,
          parts: request.parts,
          ...(model ? { model } : {}),
          ...(request.questions ? {} : { tools: { question: false } })
        }
      }).pipe(Effect.mapError(failure))
    }
    const ending = yield* Deferred.await(finished).pipe(
      Effect.raceFirst(attachment.lost ? Deferred.await(attachment.lost) : Effect.never),
      Effect.ensuring(Effect.sync(() => waiters.delete(messageID))),
      Effect.either
    )
    // Lost on the way: the run's end is unknown here, reported like a failed run (with a result event).
    if (ending._tag === "Left" && ending.left._tag === "AttachError") {
      return { reason: "error" as const, error: { name: "AttachError", data: { message: ending.left.message } }, usage: { cost: 0, tokens: 0, steps: 0 }, answer: "" }
    }
    const done = yield* ending
    if (done.reason === "error" && done.error && USAGE_ERRORS.has(done.error.name)) {
      return yield* new UsageError({ message: done.error.data.message })
    }
    const answer = done.assistantID
      ? yield* client.session.message({ path: { id, messageID: done.assistantID }, urlParams: {} }).pipe(
        Effect.map((message) => answerOf(message.parts)),
        Effect.mapError(failure)
      )
      : ""
    return { reason: done.reason, ...(done.error ? { error: done.error } : {}), usage: done.usage, answer }
  })


/** `--agent` against the server's agents; the server checks its own default agent when it runs. */
const chooseAgent = ({ client, failure }: Attachment) => (wanted: string | undefined) =>
  Effect.gen(function*() {
    if (wanted === undefined) return { agent: undefined } satisfies AgentChoice
    const agents = yield* client.instance.agents({ urlParams: {} }).pipe(Effect.mapError(failure))
    const check = checkAgent(wanted, agents)
    if (check instanceof AgentNotFound) return yield* check
    if (check.runs) return { agent: wanted } satisfies AgentChoice
    // The server lists its default agent first.
    const fallback = agents.find((agent) => agent.mode !== "subagent" && !agent.hidden)
    return fallback ? fallbackChoice(check.why, fallback.name, agents) : { agent: undefined, note: check.why }
  })
