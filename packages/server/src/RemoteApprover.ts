// The approver chain of a headless ask after the rules (and the PermissionRequest hooks) left it
// open: an `agent serve` that holds it (POST /permission/remote, docs/server.md; or the server whose
// own session asks, ServeApprovals.ts) and/or a webhook (docs/permissions.md), until the first answer
// or the timeout; then the fallback. Used by `agent run` and by `agent serve`.
import {
  type ApprovalWebhookBody,
  type DecidedBy,
  type PermissionRequest,
  RemoteAskFrame,
  type RemoteAskBody,
  WebhookAnswer
} from "@agent/domain"
import { Console, Data, Deferred, Duration, Effect, Either, Schema } from "effect"
import { type ApproverServer, type ApproverSettings, describeSettings, summaryOf } from "./ApproverSettings.js"

/** An answer to an ask: as a person gives it at a terminal or on a server. */
export type PermissionAnswer = { readonly reply: "once" | "always" | "reject"; readonly message?: string }

/** What the chain decided, and who decided it. */
export interface Verdict {
  readonly answer: PermissionAnswer
  readonly decidedBy: DecidedBy
}

class ApproverFailed extends Data.TaggedError("ApproverFailed")<{ readonly message: string }> {}

/** How each approver ended; the first that answers (or fails, for the server) ends the chain. */
type Outcome =
  | { readonly _tag: "Answer"; readonly answer: PermissionAnswer; readonly via: "server" | "webhook" }
  | { readonly _tag: "Timeout" }
  | { readonly _tag: "Unavailable"; readonly error: string }

const decodeFrame = Schema.decodeUnknownEither(Schema.parseJson(RemoteAskFrame))
const decodeWebhookAnswer = Schema.decodeUnknownEither(Schema.parseJson(WebhookAnswer))

/** The message at the bottom of a chain of causes (`fetch failed` → `connect ECONNREFUSED ...`). */
const rootCause = (error: unknown): string => {
  let current: unknown = error
  while (current instanceof Error && current.cause !== undefined) current = current.cause
  if (current instanceof ApproverFailed) return current.message
  if (current instanceof Error) {
    const code = (current as { code?: unknown }).code
    return current.message || (typeof code === "string" ? code : current.name)
  }
  return String(current)
}

/** Holds the ask on the server until it says how it ended; `asked` gets the server's id for the ask at once. */
const askServer = (server: ApproverServer, body: RemoteAskBody, asked: Deferred.Deferred<string>) =>
  Effect.tryPromise({
    try: async (signal): Promise<RemoteAskFrame> => {
      const response = await fetch(`${server.url}/permission/remote`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(server.authorization ? { authorization: server.authorization } : {}) },
        body: JSON.stringify(body),
        signal
      })
      if (response.status === 401) {
        throw new ApproverFailed({
          message: `the server refused the credentials: set AGENT_SERVER_PASSWORD (and AGENT_SERVER_USERNAME) or put user:password@ in the url`
        })
      }
      if (!response.ok || !response.body) {
        throw new ApproverFailed({ message: `the server answered ${response.status}: ${(await response.text()).slice(0, 300)}` })
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
      let buffer = ""
      for (;;) {
        const chunk = await reader.read()
        if (chunk.done) throw new ApproverFailed({ message: "the server closed the connection without an answer" })
        buffer += chunk.value
        let end: number
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const data = block.split("\n").filter((line) => line.startsWith("data: ")).map((line) => line.slice(6)).join("\n")
          if (!data) continue
          const frame = decodeFrame(data)
          if (Either.isLeft(frame)) throw new ApproverFailed({ message: `the server sent an unexpected frame: ${data.slice(0, 200)}` })
          if (frame.right.type === "asked") Deferred.unsafeDone(asked, Effect.succeed(frame.right.id))
          else return frame.right
        }
      }
    },
    catch: (error) => new ApproverFailed({ message: rootCause(error) })
  })

/** POSTs the ask to the webhook; its answer when its response carries one. */
const postWebhook = (webhook: NonNullable<ApproverSettings["webhook"]>, body: ApprovalWebhookBody) =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(webhook.url, {
        method: "POST",
        headers: { "content-type": "application/json", ...webhook.headers },
        body: JSON.stringify(body),
        signal
      })
      const text = await response.text()
      if (!response.ok) throw new ApproverFailed({ message: `the webhook answered ${response.status}: ${text.slice(0, 300)}` })
      if (!text.trim()) return undefined
      const answer = decodeWebhookAnswer(text)
      if (Either.isLeft(answer)) throw new ApproverFailed({ message: `the webhook's answer is not {"reply": "once" | "always" | "reject", "message"?}: ${text.slice(0, 200)}` })
      return answer.right.reply === undefined ? undefined : { reply: answer.right.reply, ...(answer.right.message ? { message: answer.right.message } : {}) }
    },
    catch: (error) => new ApproverFailed({ message: rootCause(error) })
  })

const asOutcome = (via: "server" | "webhook") => (answer: PermissionAnswer): Outcome => ({ _tag: "Answer", answer, via })

/**
 * Asks the configured approvers; the first answer wins (the others are withdrawn: the server's
 * stream is closed, which takes the ask off its list). The server failing or going away ends the
 * chain (its fallback), a webhook failing only when no server holds the ask.
 */
export const askApprover = (settings: ApproverSettings, request: PermissionRequest, directory: string) =>
  Effect.gen(function*() {
    const asked = yield* Deferred.make<string>()
    const { server, webhook } = settings
    const viaServer: Effect.Effect<Outcome> = server === undefined ? Effect.never : askServer(server, {
      sessionID: request.sessionID,
      permission: request.permission,
      patterns: request.patterns,
      always: request.always,
      metadata: request.metadata,
      ...(request.tool ? { tool: request.tool } : {}),
      timeout: settings.timeout,
      directory
    }, asked).pipe(
      Effect.map((frame): Outcome =>
        frame.type === "replied"
          ? asOutcome("server")({ reply: frame.reply, ...(frame.message ? { message: frame.message } : {}) })
          : { _tag: "Timeout" }
      ),
      Effect.catchAll((error) => Effect.succeed<Outcome>({ _tag: "Unavailable", error: `${server.url}: ${error.message}` }))
    )
    // Where a person answers the ask besides the webhook: the server holding it for this run, or
    // the server whose own ask it is (`here`, where its id is the request's).
    const holder = server?.url ?? settings.here
    const viaWebhook: Effect.Effect<Outcome> = webhook === undefined ? Effect.never : Effect.gen(function*() {
      // With a server, the webhook gets the link to the ask it holds.
      const id = server !== undefined ? yield* Deferred.await(asked) : settings.here !== undefined ? request.id : undefined
      const body: ApprovalWebhookBody = {
        type: "permission.asked",
        id: request.id,
        sessionID: request.sessionID,
        directory,
        permission: request.permission,
        patterns: request.patterns,
        always: request.always,
        summary: summaryOf(request),
        ...(typeof request.metadata.diff === "string" ? { diff: request.metadata.diff } : {}),
        link: holder && id ? `${holder}/permission/${id}` : null,
        reply_url: holder && id ? `${holder}/permission/${id}/reply` : null,
        timeout: settings.timeout,
        expires: request.time.created + settings.timeout * 1000
      }
      const answer = yield* postWebhook(webhook, body).pipe(
        Effect.catchAll((error): Effect.Effect<Outcome | undefined> =>
          holder === undefined
            ? Effect.succeed({ _tag: "Unavailable", error: `${webhook.url}: ${error.message}` })
            : Effect.as(Console.error(`agent: approval webhook failed (${error.message}); waiting for ${holder}`), undefined)
        )
      )
      if (answer === undefined) {
        return holder === undefined
          ? { _tag: "Unavailable", error: `${webhook.url}: the webhook answered without a reply and no agent serve holds the ask` }
          : yield* Effect.never
      }
      return "reply" in answer ? asOutcome("webhook")(answer) : answer
    })
    return yield* Effect.race(viaServer, viaWebhook).pipe(
      Effect.timeoutTo({
        duration: Duration.seconds(settings.timeout),
        onTimeout: (): Outcome => ({ _tag: "Timeout" }),
        onSuccess: (outcome) => outcome
      })
    )
  }).pipe(Effect.flatMap((outcome) => verdictOf(settings, request, outcome)))

/** The answer for the run, with a line on stderr when the fallback decided. */
const verdictOf = (settings: ApproverSettings, request: PermissionRequest, outcome: Outcome) =>
  Effect.gen(function*() {
    if (outcome._tag === "Answer") {
      return {
        answer: outcome.answer,
        decidedBy: { type: "person", via: outcome.via, ...(outcome.answer.message ? { message: outcome.answer.message } : {}) }
      } satisfies Verdict
    }
    const answer: PermissionAnswer = { reply: settings.fallback === "allow" ? "once" : "reject" }
    const what = `${request.permission} ${request.patterns.join(", ")}`
    const why = outcome._tag === "Timeout"
      ? `no answer from the approver (${describeSettings(settings)}) within ${settings.timeout} s`
      : `the approver could not be reached: ${outcome.error}`
    yield* Console.error(`agent: permission asked for ${what}: ${why}; fallback: ${settings.fallback}`)
    const decidedBy: DecidedBy = outcome._tag === "Timeout"
      ? { type: "timeout", seconds: settings.timeout }
      : { type: "unavailable", error: outcome.error }
    return { answer, decidedBy } satisfies Verdict
  })
