// `agent serve`'s own sessions and the people who are not watching them: its `notify` webhooks are
// told of their permission asks and of each prompt's end (`prompt.finished`), and with
// `permission.approver` (a webhook, a timeout) an ask is also sent to the approver, whose answer,
// or after the timeout the fallback, replies to it unless a client answers first
// (docs/permissions.md, "On agent serve"). Nothing is subscribed when neither is configured.
import { Bus, ConfigService, Instance, PermissionService, SessionStore } from "@agent/core"
import type { BusEventOf, PermissionRequest } from "@agent/domain"
import * as HttpServer from "@effect/platform/HttpServer"
import { Effect, Fiber, Layer, Stream } from "effect"
import * as os from "node:os"
import { type ApproverSettings, serveApproverSettings } from "./ApproverSettings.js"
import { askNotification, endNotification, makeNotifier, type Notifier, silent } from "./Notify.js"
import { askApprover } from "./RemoteApprover.js"

/** The server's own url, for the links a webhook gets (a wildcard address is named by the host's name). */
export const ownUrl = (address: HttpServer.Address): string => {
  if (address._tag !== "TcpAddress") return "http://localhost"
  const wildcard = address.hostname === "0.0.0.0" || address.hostname === "::"
  const host = wildcard ? os.hostname() : address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname
  return `http://${host}:${address.port}`
}

/**
 * An ask only a person may answer goes to no webhook (a webhook may be a script) and never to an
 * `allow` fallback, as for `agent run` (RunTarget.ts).
 */
export const settingsFor = (settings: ApproverSettings, request: PermissionRequest): ApproverSettings =>
  request.requiresPerson === undefined
    ? settings
    : { ...(settings.here === undefined ? {} : { here: settings.here }), timeout: settings.timeout, fallback: "deny" }

/** The text a prompt's run answered with, for the end's notification. */
const answerText = (store: SessionStore["Type"], event: BusEventOf<"prompt.finished">) =>
  event.properties.assistantID === undefined
    ? Effect.succeed("")
    : store.getMessage(event.properties.sessionID, event.properties.assistantID).pipe(
      Effect.map((message) => message.parts.flatMap((part) => (part.type === "text" && !part.synthetic ? [part.text] : [])).join("\n").trim()),
      Effect.orElseSucceed(() => "")
    )

export const layer: Layer.Layer<never, never, HttpServer.HttpServer | Bus | ConfigService | Instance | PermissionService | SessionStore> = Layer
  .scopedDiscard(
    Effect.gen(function*() {
      const config = yield* (yield* ConfigService).get()
      const server = yield* HttpServer.HttpServer
      const approver = serveApproverSettings(config.approver, ownUrl(server.address))
      const notifier: Notifier = yield* makeNotifier(config.notify)
      if (approver === undefined && notifier === silent) return
      const bus = yield* Bus
      const permissions = yield* PermissionService
      const store = yield* SessionStore
      const { directory } = yield* Instance
      // The approver's holds, by request id: a client's answer ends them.
      const holding = new Map<string, Fiber.RuntimeFiber<void>>()

      const hold = (settings: ApproverSettings, request: PermissionRequest) =>
        askApprover(settings, request, directory).pipe(
          Effect.flatMap((verdict) =>
            Effect.gen(function*() {
              holding.delete(request.id)
              const { reply, message } = verdict.answer
              // Someone may have answered while the verdict was being reached: theirs stands.
              const answered = yield* permissions.reply({ requestID: request.id, reply, ...(message ? { message } : {}) }).pipe(
                Effect.as(true),
                Effect.orElseSucceed(() => false)
              )
              if (answered && reply === "reject") {
                // Who decided, for event-stream clients (an attached `agent run` lists it in its `permission_denials`).
                yield* bus.publish({
                  type: "permission.denied",
                  properties: {
                    sessionID: request.sessionID,
                    permission: request.permission,
                    patterns: request.patterns,
                    ...(request.tool ? { tool: request.tool } : {}),
                    decidedBy: verdict.decidedBy
                  }
                })
              }
            })
          ),
          Effect.ensuring(Effect.sync(() => holding.delete(request.id))),
          Effect.catchAllCause((cause) => Effect.logError("permission approver stopped", cause))
        )

      const asked = (request: PermissionRequest) =>
        Effect.gen(function*() {
          // Another process's ask held here (`agent run --approver`) has its own approver and notify.
          if (request.metadata.remote === true) return
          // Answered already (`--auto-approve` answers at once): nobody needs telling.
          if (!(yield* permissions.list()).some((pending) => pending.id === request.id)) return
          yield* notifier.send(askNotification(request, directory))
          if (approver === undefined) return
          holding.set(request.id, yield* Effect.forkScoped(hold(settingsFor(approver, request), request)))
        })

      const events = yield* bus.subscribe({ types: ["permission.asked", "permission.replied", "prompt.finished"] })
      yield* events.pipe(
        Stream.runForEach((event) => {
          switch (event.type) {
            case "permission.asked":
              return asked(event.properties)
            case "permission.replied": {
              const held = holding.get(event.properties.requestID)
              holding.delete(event.properties.requestID)
              return held ? Fiber.interrupt(held) : Effect.void
            }
            case "prompt.finished":
              return answerText(store, event).pipe(
                Effect.flatMap((answer) => notifier.send(endNotification(event.properties.sessionID, directory, { reason: event.properties.reason, answer })))
              )
          }
        }),
        Effect.catchAllCause((cause) => Effect.logError("the server's approvals stopped", cause)),
        Effect.forkScoped
      )
    })
  )
