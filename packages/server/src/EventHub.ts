import { Bus } from "@agent/core"
import type { BusEvent } from "@agent/domain"
import { Cause, Chunk, Context, Deferred, type Duration, Effect, Layer, Option, Queue, Schedule, type Scope, Stream } from "effect"

/** An event as it goes on the wire: the bus event with the server's sequence number. */
export interface ServerEvent {
  /** Absent for events that are not replayable (connected, heartbeat). */
  readonly id?: number
  readonly type: string
  readonly properties: unknown
}

export interface EventHubOptions {
  /** Events kept for `Last-Event-ID` replay (default 2000). */
  readonly replay?: number
  /** Events one client may have waiting; past that it is dropped (default 4096). */
  readonly clientCapacity?: number
  /** Text deltas of one part are merged over this window (default 50 ms). */
  readonly coalesce?: Duration.DurationInput
  /** Every client gets a `server.heartbeat` this often (default 10 s), so proxies keep the connection. */
  readonly heartbeat?: Duration.DurationInput
  /**
   * After an event, a client's stream waits this long for more before it writes (default 5 ms):
   * one socket write for a burst instead of one per event (each write on a loopback socket costs
   * the server ~0.2 ms of kernel time in bench:server).
   */
  readonly batch?: Duration.DurationInput
}

interface Client {
  readonly queue: Queue.Queue<ServerEvent>
  readonly capacity: number
  readonly dropped: Deferred.Deferred<void>
  overflowed: boolean
}

interface PendingDelta {
  readonly properties: Extract<BusEvent, { type: "message.part.delta" }>["properties"]
  delta: string
}

/**
 * Fans the bus out to SSE clients. One bus subscription numbers every event, keeps the
 * last ones for replay, merges bursts of text deltas, and hands each client its own
 * bounded queue: a client that stops reading is cut off with a final `server.overflow`
 * event instead of holding the server's memory.
 */
export class EventHub extends Context.Tag("@agent/server/EventHub")<
  EventHub,
  {
    /**
     * Replayed events after `lastEventId` (when given), then live ones; ends if the client falls
     * behind, and `dropped` completes so the caller can close a connection that is not reading.
     */
    readonly subscribe: (
      lastEventId?: number
    ) => Effect.Effect<{ readonly events: Stream.Stream<ServerEvent>; readonly dropped: Effect.Effect<void> }, never, Scope.Scope>
    /** How many clients are connected now. */
    readonly clients: () => Effect.Effect<number>
  }
>() {
  static readonly layer = (options: EventHubOptions = {}): Layer.Layer<EventHub, never, Bus> =>
    Layer.scoped(
      EventHub,
      Effect.gen(function*() {
        const bus = yield* Bus
        const replayCapacity = options.replay ?? 2000
        const clientCapacity = options.clientCapacity ?? 4096
        const clients = new Set<Client>()
        const recent: Array<ServerEvent> = []
        const pending = new Map<string, PendingDelta>()
        let sequence = 0

        const hasRoom = (client: Client) => Option.getOrElse(client.queue.unsafeSize(), () => 0) < client.capacity
        const deliver = (event: ServerEvent) => {
          recent.push(event)
          // Trimmed in batches: cutting one event off the front each time moved the whole buffer.
          if (recent.length >= 2 * replayCapacity) recent.splice(0, recent.length - replayCapacity)
          for (const client of clients) {
            if (client.overflowed) continue
            if (hasRoom(client)) {
              client.queue.unsafeOffer(event)
              continue
            }
            client.overflowed = true
            client.queue.unsafeOffer({
              type: "server.overflow",
              properties: {
                message: "this client fell too far behind and was disconnected; reconnect with Last-Event-ID to resume",
                lastEventId: event.id! - 1
              }
            })
            Deferred.unsafeDone(client.dropped, Effect.void)
          }
        }
        const emit = (type: string, properties: unknown) => deliver({ id: ++sequence, type, properties })
        const flushDeltas = () => {
          for (const { properties, delta } of pending.values()) emit("message.part.delta", { ...properties, delta })
          pending.clear()
        }

        const events = yield* bus.subscribe({ capacity: 65_536 })
        yield* events.pipe(
          Stream.runForEach((event) =>
            Effect.sync(() => {
              if (event.type === "message.part.delta") {
                const key = `${event.properties.partID}:${event.properties.field}`
                const open = pending.get(key)
                if (open) open.delta += event.properties.delta
                else pending.set(key, { properties: event.properties, delta: event.properties.delta })
                return
              }
              // Anything else about the run flushes the merged text first, so order is kept.
              flushDeltas()
              emit(event.type, event.properties)
            })
          ),
          Effect.catchAllCause(Effect.logError),
          Effect.forkScoped
        )
        yield* Effect.sync(flushDeltas).pipe(
          Effect.repeat({ schedule: Schedule.spaced(options.coalesce ?? "50 millis") }),
          Effect.catchAllCause(Effect.logError),
          Effect.forkScoped
        )
        // One timer for all clients, into the same queues as the events: merging a timer stream
        // into each client's stream would fork a fiber for every chunk it pulls.
        const heartbeat: ServerEvent = { type: "server.heartbeat", properties: {} }
        yield* Effect.sync(() => {
          for (const client of clients) {
            if (!client.overflowed && hasRoom(client)) {
              client.queue.unsafeOffer(heartbeat)
            }
          }
        }).pipe(
          Effect.delay(options.heartbeat ?? "10 seconds"),
          Effect.forever,
          Effect.catchAllCause(Effect.logError),
          Effect.forkScoped
        )

        const batchWindow = options.batch ?? "5 millis"
        /** What is waiting now, plus what arrives within the batch window; the stream ends when the queue shuts down. */
        const takeBatch = (queue: Queue.Queue<ServerEvent>) =>
          Queue.takeBetween(queue, 1, clientCapacity + 1).pipe(
            Effect.flatMap((first) =>
              Effect.sleep(batchWindow).pipe(
                Effect.zipRight(Queue.takeAll(queue)),
                Effect.map((rest) => Chunk.appendAll(first, rest))
              )
            ),
            Effect.catchAllCause((cause) =>
              Effect.flatMap(Queue.isShutdown(queue), (down) =>
                down && Cause.isInterruptedOnly(cause) ? Effect.fail(Option.none()) : Effect.failCause(Cause.map(cause, Option.some))
              )
            )
          )

        const subscribe = (lastEventId?: number) =>
          Effect.gen(function*() {
            const client: Client = {
              // one slot beyond the capacity for the final overflow event
              queue: yield* Queue.bounded<ServerEvent>(clientCapacity + 1),
              capacity: clientCapacity,
              dropped: yield* Deferred.make<void>(),
              overflowed: false
            }
            // Registering and taking the replay happen in one synchronous block: no gap, no duplicate.
            const replay = yield* Effect.sync(() => {
              clients.add(client)
              return lastEventId === undefined ? [] : recent.slice(-replayCapacity).filter((event) => event.id! > lastEventId)
            })
            yield* Effect.addFinalizer(() =>
              Effect.sync(() => clients.delete(client)).pipe(Effect.zipRight(Queue.shutdown(client.queue)))
            )
            return {
              events: Stream.fromIterable(replay).pipe(
                Stream.concat(Stream.repeatEffectChunkOption(takeBatch(client.queue))),
                Stream.takeUntil((event) => event.type === "server.overflow")
              ),
              dropped: Deferred.await(client.dropped)
            }
          })

        return EventHub.of({ subscribe, clients: () => Effect.sync(() => clients.size) })
      })
    )
}
