import { PermissionService } from "@agent/core"
import { AgentApi, BadRequestError, RemoteAskBody, type RemoteAskFrame } from "@agent/domain"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Option, ParseResult, Queue, Stream } from "effect"
import { SessionRouting } from "../cluster/SessionRouting.js"
import { notFound } from "./HandlerErrors.js"

/** A comment line every so often keeps proxies and the client's body timeout from closing a quiet ask. */
const HEARTBEAT = "15 seconds"

const frame = (value: RemoteAskFrame) => `data: ${JSON.stringify(value)}\n\n`

export const PermissionHandlers = HttpApiBuilder.group(AgentApi, "permission", (handlers) =>
  Effect.gen(function*() {
    const permissions = yield* PermissionService
    // On a replica the asks of every replica are listed, and a reply goes to the ask's session.
    const routing = Option.getOrUndefined(yield* Effect.serviceOption(SessionRouting))

    /**
     * `agent run --approver`'s ask, pending here until someone answers it or its timeout: the
     * response is a stream that says `asked` at once and then how it ended. A client that goes
     * away withdraws the ask (the stream's scope ends the hold).
     */
    const remote = (body: RemoteAskBody) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const frames = yield* Queue.unbounded<RemoteAskFrame>()
        yield* permissions.hold(body, (id) => Queue.offer(frames, { type: "asked", id })).pipe(
          Effect.flatMap((outcome) =>
            Queue.offer(
              frames,
              outcome._tag === "Timeout"
                ? { type: "timeout" }
                : { type: "replied", reply: outcome.reply, ...(outcome.message === undefined ? {} : { message: outcome.message }) }
            )
          ),
          // The server is stopping (the hold was interrupted): end the stream without an answer.
          Effect.ensuring(Queue.shutdown(frames)),
          Effect.catchAllCause((cause) => Effect.logError("remote permission ask failed", cause)),
          Effect.forkScoped
        )
        const answers = Stream.fromQueue(frames).pipe(Stream.takeUntil((value) => value.type !== "asked"), Stream.map(frame))
        const beats = Stream.tick(HEARTBEAT).pipe(Stream.drop(1), Stream.as(": keep-alive\n\n"))
        return Stream.merge(answers, beats, { haltStrategy: "left" }).pipe(Stream.encodeText)
      }))

    return handlers
      .handle("list", () => routing ? routing.permissions() : permissions.list())
      .handle("reply", ({ path, payload }) =>
        (routing ? routing.replyPermission : permissions.reply)({
          requestID: path.requestID,
          reply: payload.reply,
          ...(payload.message !== undefined ? { message: payload.message } : {})
        }).pipe(Effect.mapError(notFound), Effect.as(true)))
      .handleRaw("remote", () =>
        Effect.gen(function*() {
          const body = yield* HttpServerRequest.schemaBodyJson(RemoteAskBody).pipe(
            Effect.mapError((error) =>
              BadRequestError.of(
                ParseResult.isParseError(error)
                  ? `invalid remote ask: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
                  : `invalid remote ask: the body is not JSON`
              )
            )
          )
          return HttpServerResponse.stream(remote(body), {
            contentType: "text/event-stream",
            headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
          })
        }))
  }))
