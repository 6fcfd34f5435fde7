// The API's routes that change a running session, on a replica: sent as messages to the session's
// entity, so they run on the replica that owns it (SessionOwner.ts). What the handlers read of runs
// (statuses, pending asks) comes from the cluster's tables, so every replica answers alike.
import { type LoopError, PermissionService, QuestionNotFound, QuestionService, type RunOutcome, SessionLoop, SessionStore } from "@agent/core"
import { PermissionRequestNotFound, type SessionID } from "@agent/domain"
import { AlreadyProcessingMessage, MailboxFull, PersistenceError } from "@effect/cluster/ClusterError"
import { Cause, Effect, Layer } from "effect"
import * as AskRegistry from "./AskRegistry.js"
import type { ClusterSettings } from "./ClusterSettings.js"
import { promptOptions, type PromptResult, SessionEntity } from "./SessionEntity.js"
import * as RunStatusRegistry from "./RunStatusRegistry.js"
import { SessionRouting, type SessionRoutingShape, type SessionUnavailable } from "./SessionRouting.js"

const cut = (what: string) => (cause: Cause.Cause<unknown>) =>
  Effect.die(new Error(`the cluster could not deliver ${what}: ${Cause.pretty(cause)}`))

type TransportError = MailboxFull | AlreadyProcessingMessage | PersistenceError

const isTransportError = (error: unknown): boolean =>
  error instanceof MailboxFull || error instanceof AlreadyProcessingMessage || error instanceof PersistenceError

/** The transport's failures (a full mailbox, the database) are defects of the request, named. */
const delivered = (what: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, TransportError>, R> =>
  effect.pipe(Effect.catchIf(isTransportError, (error) => cut(what)(Cause.fail(error)))) as Effect.Effect<A, Exclude<E, TransportError>, R>

const outcome = (result: PromptResult): RunOutcome => ({
  reason: result.reason,
  ...(result.error ? { error: result.error } : {}),
  usage: result.usage
})

export const layer = (settings: ClusterSettings) =>
  Layer.scoped(
    SessionRouting,
    Effect.gen(function*() {
      const runner = `${settings.host}:${settings.port}`
      const client = yield* SessionEntity.client
      const asks = yield* AskRegistry.make(settings.prefix, runner)
      const statuses = yield* RunStatusRegistry.make(settings.prefix, runner, settings.lockExpirationMs)
      const loop = yield* SessionLoop
      const store = yield* SessionStore
      const permissions = yield* PermissionService
      const questions = yield* QuestionService
      /** The session as the revert left it, read back from the store. */
      const withSession = (sessionID: SessionID) => (result: { readonly restored: ReadonlyArray<string>; readonly conflicts: ReadonlyArray<string> }) =>
        store.get(sessionID).pipe(Effect.map((session) => ({ session, restored: result.restored, conflicts: result.conflicts })))

      return {
        prompt: (input) =>
          client(input.sessionID).Prompt({
            sessionID: input.sessionID,
            messageID: input.messageID,
            parts: input.parts as unknown as ReadonlyArray<Record<string, unknown>>,
            ...promptOptions(input)
          }).pipe(delivered("the prompt"), Effect.map(outcome)) as Effect.Effect<RunOutcome, LoopError | SessionUnavailable>,
        abort: (sessionID) => client(sessionID).Abort({ sessionID }).pipe(Effect.catchAllCause(cut("the abort"))),
        compact: (sessionID) =>
          client(sessionID).Compact({ sessionID }).pipe(delivered("the compaction"), Effect.map(outcome)) as Effect.Effect<
            RunOutcome,
            LoopError | SessionUnavailable
          >,
        revert: (input) =>
          client(input.sessionID).Revert({
            sessionID: input.sessionID,
            messageID: input.messageID,
            ...(input.partID !== undefined ? { partID: input.partID } : {})
          }).pipe(delivered("the revert"), Effect.flatMap(withSession(input.sessionID))),
        unrevert: (sessionID) => client(sessionID).Unrevert({ sessionID }).pipe(delivered("the unrevert"), Effect.flatMap(withSession(sessionID))),
        statuses: () => loop.statuses().pipe(Effect.flatMap(statuses.all)),
        permissions: asks.permissions,
        replyPermission: (input) =>
          Effect.gen(function*() {
            const ask = yield* asks.whereIs("permission", input.requestID)
            if (ask === undefined) return yield* new PermissionRequestNotFound({ requestID: input.requestID })
            // An ask waiting here is answered here: a run's, or another process's held for it
            // (POST /permission/remote), whose session may be owned by another replica or none.
            if (ask.runner === runner) return yield* permissions.reply(input)
            return yield* client(ask.sessionID).ReplyPermission(input).pipe(delivered("the reply"))
          }),
        questions: asks.questions,
        replyQuestion: (requestID, answers) =>
          Effect.gen(function*() {
            const ask = yield* asks.whereIs("question", requestID)
            if (ask === undefined) return yield* new QuestionNotFound({ requestID })
            if (ask.runner === runner) return yield* questions.reply(requestID, answers)
            return yield* client(ask.sessionID).ReplyQuestion({ requestID, answers: answers.map((list) => [...list]) }).pipe(delivered("the answer"))
          }),
        rejectQuestion: (requestID) =>
          Effect.gen(function*() {
            const ask = yield* asks.whereIs("question", requestID)
            if (ask === undefined) return yield* new QuestionNotFound({ requestID })
            if (ask.runner === runner) return yield* questions.reject(requestID)
            return yield* client(ask.sessionID).RejectQuestion({ requestID }).pipe(delivered("the rejection"))
          })
      } satisfies SessionRoutingShape
    })
  )
