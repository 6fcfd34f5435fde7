import { AgentApi } from "@agent/domain"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Chunk, Effect, Stream } from "effect"
import { EventHub, type ServerEvent } from "../EventHub.js"

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
          // `server.connected` once the subscription is live: a client that acts on it (sends a
          // prompt) cannot miss the first events of what it started.
          return Stream.make<Array<ServerEvent>>({ type: "server.connected", properties: {} }).pipe(Stream.concat(subscription.events))
        }))
        // Heartbeats arrive through the hub, in the same queue as the events.
        const body = events.pipe(Stream.mapChunks(frames))
        return HttpServerResponse.stream(body, {
          contentType: "text/event-stream",
          headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
        })
      }))
  }))
