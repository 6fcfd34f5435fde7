// The session entity's handlers: they run on the replica that owns the session and call this
// process's loop, permission and question services, as one process does.
import {
  type PromptInput,
  type PromptPartInput,
  QuestionService,
  PermissionService,
  SessionChanges,
  SessionLoop,
  SessionStore
} from "@agent/core"
import type { Session, SessionID } from "@agent/domain"
import { Effect, Layer } from "effect"
import * as fs from "node:fs/promises"
import { promptAction } from "./Handover.js"
import { RunningTools } from "./RunningTools.js"
import { type PromptPayload, promptOptions, type PromptResult, SessionEntity } from "./SessionEntity.js"
import { SessionUnavailable } from "./SessionRouting.js"

/** Refuses a session whose project directory this replica cannot see: its tools would run elsewhere. */
const reachable = (session: Session, runner: string) =>
  Effect.tryPromise(() => fs.stat(session.directory)).pipe(
    Effect.flatMap((stat) => stat.isDirectory() ? Effect.void : Effect.fail(new Error("not a directory"))),
    Effect.catchAll((error) =>
      Effect.fail(
        new SessionUnavailable({
          sessionID: session.id,
          reason: `replica ${runner} cannot see the project directory ${session.directory} of session ${session.id} (${
            (error as { error?: { code?: string } }).error?.code ?? (error as Error).message
          }): every replica needs the project at the same path, on a shared volume (docs/cluster.md)`
        })
      )
    )
  )

/** The loop's input from the message (the optional fields left out rather than undefined). */
const promptInput = (input: PromptPayload): PromptInput => ({
  sessionID: input.sessionID,
  messageID: input.messageID,
  // Decoded by the entity's schema from what PromptParts.ts made on the replica that got the request.
  parts: input.parts as unknown as ReadonlyArray<PromptPartInput>,
  ...promptOptions(input)
})

/**
 * The handlers. A prompt's handler is interrupted only when the session leaves this replica (it
 * stops, or its shard moves; a client going away does not interrupt it). The tool call running
 * then gets up to `graceMs` to finish, so a deploy does not cut a command about to end; then the
 * run here is aborted, and the persisted prompt goes to the next owner, which resumes the run.
 */
export const layer = (runner: string, graceMs: number, onTakeOver: (sessionID: string) => Effect.Effect<void>) =>
  Layer.unwrapEffect(Effect.map(RunningTools, (tools) => entities(runner, graceMs, onTakeOver, tools.of)))

/** The entity's handlers; their build runs once for each session that comes to this replica. */
const entities = (
  runner: string,
  graceMs: number,
  onTakeOver: (sessionID: string) => Effect.Effect<void>,
  toolRunning: (sessionID: string) => ReadonlySet<string>
) =>
  SessionEntity.toLayer(
    Effect.gen(function*() {
      const handOver = (sessionID: SessionID) =>
        Effect.gen(function*() {
          const deadline = Date.now() + graceMs
          // The calls running now, not those the run starts meanwhile (it would never stop).
          const calls = [...toolRunning(sessionID)]
          const unfinished = () => calls.some((id) => toolRunning(sessionID).has(id))
          if (calls.length > 0) yield* Effect.logInfo(`session ${sessionID} leaves ${runner}: letting its tool call finish (up to ${graceMs} ms)`)
          while (unfinished() && Date.now() < deadline) yield* Effect.sleep("20 millis")
          yield* loop.abort(sessionID)
        })
      const loop = yield* SessionLoop
      const store = yield* SessionStore
      const permissions = yield* PermissionService
      const questions = yield* QuestionService
      const changes = yield* SessionChanges
      /** Revert and unrevert put files back in the project: only where it is visible. */
      const inProject = <A, E>(sessionID: SessionID, effect: Effect.Effect<A, E>) =>
        store.get(sessionID).pipe(Effect.flatMap((session) => reachable(session, runner)), Effect.zipRight(effect))
      const reverted = (result: { readonly restored: ReadonlyArray<string>; readonly conflicts: ReadonlyArray<string> }) => ({
        restored: [...result.restored],
        conflicts: [...result.conflicts]
      })

      const run = (input: PromptPayload) =>
        Effect.gen(function*() {
          const session = yield* store.get(input.sessionID)
          yield* reachable(session, runner)
          const action = promptAction(yield* store.messages(input.sessionID), input)
          if (action === "done") {
            yield* Effect.logInfo(`session ${input.sessionID}: prompt ${input.messageID} already ran; nothing to do`)
            return { reason: "completed" as const, usage: { cost: 0, tokens: 0, steps: 0 } }
          }
          if (action === "resume") {
            // The previous owner is dead or stopped: what it left running will never finish.
            const marked = yield* store.takeOver(input.sessionID)
            yield* onTakeOver(input.sessionID)
            yield* Effect.logInfo(`session ${input.sessionID}: taken over on ${runner} (${marked} tool call(s) marked interrupted); resuming`)
            return yield* loop.resume(input.sessionID)
          }
          return yield* loop.prompt(promptInput(input))
        })

      return SessionEntity.of({
        Prompt: ({ payload }) =>
          run(payload).pipe(
            Effect.map((outcome): PromptResult => ({
              reason: outcome.reason,
              ...(outcome.error ? { error: outcome.error } : {}),
              usage: outcome.usage,
              runner
            })),
            Effect.onInterrupt(() => handOver(payload.sessionID))
          ),
        Abort: ({ payload }) => loop.abort(payload.sessionID),
        ReplyPermission: ({ payload }) =>
          permissions.reply({
            requestID: payload.requestID,
            reply: payload.reply,
            ...(payload.message !== undefined ? { message: payload.message } : {})
          }),
        ReplyQuestion: ({ payload }) => questions.reply(payload.requestID, payload.answers),
        RejectQuestion: ({ payload }) => questions.reject(payload.requestID),
        // A compaction is a run of the session: it waits for the run in progress here.
        Compact: ({ payload }) =>
          loop.compact(payload.sessionID).pipe(
            Effect.map((outcome): PromptResult => ({
              reason: outcome.reason,
              ...(outcome.error ? { error: outcome.error } : {}),
              usage: outcome.usage,
              runner
            }))
          ),
        Revert: ({ payload }) =>
          inProject(
            payload.sessionID,
            changes.revert({
              sessionID: payload.sessionID,
              messageID: payload.messageID,
              ...(payload.partID !== undefined ? { partID: payload.partID } : {})
            })
          ).pipe(Effect.map(reverted)),
        Unrevert: ({ payload }) => inProject(payload.sessionID, changes.unrevert(payload.sessionID)).pipe(Effect.map(reverted))
      })
    }),
    // A prompt joins the run in progress and an abort reaches it while it runs: messages are not queued behind each other.
    { concurrency: "unbounded", maxIdleTime: "5 minutes" }
  )
