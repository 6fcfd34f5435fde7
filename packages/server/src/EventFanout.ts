import { Cause, Chunk, Deferred, type Duration, Effect, Option, Queue, type Scope, Stream } from "effect"

/** An event as it goes on the wire: the bus event with the server's number for it. */
export interface ServerEvent {
  /**
   * Its place in the stream: what `Last-Event-ID` names. Absent for events that are not replayable
   * (connected, heartbeat). On PostgreSQL it is the event log's position, the same on every replica.
   */
  readonly id?: number
  /** On PostgreSQL, a session's event's number among that session's events (1, 2, ... without gaps). */
  readonly seq?: number
  readonly type: string
  readonly properties: unknown
}

export interface FanoutOptions {
  /** Events kept for `Last-Event-ID` replay (default 2000). */
  readonly replay?: number
  /** Events one client may have waiting; past that it is dropped (default 4096). */
  readonly clientCapacity?: number
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
  /** Events up to this id are not passed on: the client has them from another replica that was ahead. */
  readonly seen: number
  overflowed: boolean
}

export interface Subscription {
  readonly events: Stream.Stream<ServerEvent>
  /** Completes when the client fell behind and was cut off, so the caller can close its connection. */
  readonly dropped: Effect.Effect<void>
}

/** The numbered events after `after` up to `upTo`, in order: where replays older than the buffer come from. */
export type OlderEvents = (after: number, upTo: number) => Stream.Stream<ServerEvent>

/**
 * The shared event log behind a replica's fan-out. It is read only while clients are connected
 * (EventLogFeed.ts): the first client to arrive moves the fan-out to the log's `head` and wakes the
 * reader (`resume`), and replays older than that come from the log (`older`).
 */
export interface LogSource {
  readonly older: OlderEvents
  /** The log's last committed position now. */
  readonly head: () => Effect.Effect<number>
  /** Wakes the log's reader: a client arrived while none was connected. */
  readonly resume: () => void
}

/**
 * The clients of the event stream: each has its own bounded queue, and one that stops reading is
 * cut off with a final `server.overflow` event instead of holding the server's memory. The last
 * events are kept for `Last-Event-ID` replay; with `log`, ids are the event log's positions, and a
 * replay that reaches past the kept events reads the rest from the log (`older`).
 */
export const makeFanout = (options: FanoutOptions, log?: LogSource) =>
  Effect.gen(function*() {
    const older = log?.older
    const replayCapacity = options.replay ?? 2000
    const clientCapacity = options.clientCapacity ?? 4096
    const clients = new Set<Client>()
    const recent: Array<ServerEvent> = []
    /**
     * The id of the last event delivered. With the log it is also where the reader goes on from, and
     * it jumps to the log's head when the first client arrives after none were connected.
     */
    let last = 0

    const hasRoom = (client: Client) => Option.getOrElse(client.queue.unsafeSize(), () => 0) < client.capacity
    /**
     * Passes a numbered event to every client. Ids must grow: one at or below the last is dropped
     * (with the log: a page a reader had in flight when the fan-out jumped to the head).
     */
    const deliver = (event: ServerEvent) => {
      if (event.id! <= last) return
      last = event.id!
      recent.push(event)
      // Trimmed in batches: cutting one event off the front each time moved the whole buffer.
      if (recent.length >= 2 * replayCapacity) recent.splice(0, recent.length - replayCapacity)
      for (const client of clients) {
        if (client.overflowed || event.id! <= client.seen) continue
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

    /** What a client resuming after `lastEventId` missed, up to `upTo` (the last event delivered). */
    const missed = (lastEventId: number, upTo: number): Stream.Stream<ServerEvent> => {
      const kept = recent.slice(-replayCapacity)
      const oldest = kept[0]?.id
      if (!older || (oldest !== undefined && oldest <= lastEventId + 1)) {
        return Stream.fromIterable(kept.filter((event) => event.id! > lastEventId))
      }
      return older(lastEventId, upTo)
    }

    /**
     * Replayed events after `lastEventId` (when given), then live ones; ends if the client falls
     * behind, and `dropped` completes so the caller can close a connection that is not reading.
     */
    const subscribe = (lastEventId?: number): Effect.Effect<Subscription, never, Scope.Scope> =>
      Effect.gen(function*() {
        const queue = yield* Queue.bounded<ServerEvent>(clientCapacity + 1) // one slot beyond the capacity for the final overflow event
        const dropped = yield* Deferred.make<void>()
        // With no client connected the log was not read: where it is now is where this one starts.
        const head = log !== undefined && clients.size === 0 ? yield* log.head() : undefined
        // Registering and taking the replay happen in one synchronous block: no gap, no duplicate.
        const replay = yield* Effect.sync(() => {
          if (head !== undefined && clients.size === 0) {
            // The buffer ends where reading stopped, not at the head: the replay comes from the log.
            recent.length = 0
            last = Math.max(last, head)
            log!.resume()
          }
          // A client ahead of this server (it read another replica that was further on) gets nothing
          // twice: the events up to its id are skipped when they arrive here.
          // (Only with the log: there ids are positions every replica shares; a restarted server on its
          // own numbers from 1 again, and its clients must get those events.)
          const seen = older !== undefined && lastEventId !== undefined ? lastEventId : 0
          const client: Client = { queue, capacity: clientCapacity, dropped, seen, overflowed: false }
          clients.add(client)
          return { client, events: lastEventId === undefined || lastEventId >= last ? Stream.empty : missed(lastEventId, last) }
        })
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            clients.delete(replay.client)
            // Nothing reads the buffer until a client comes back, and then it starts from the log.
            if (log !== undefined && clients.size === 0) recent.length = 0
          }).pipe(Effect.zipRight(Queue.shutdown(queue)))
        )
        return {
          events: replay.events.pipe(
            Stream.concat(Stream.repeatEffectChunkOption(takeBatch(queue))),
            Stream.takeUntil((event) => event.type === "server.overflow")
          ),
          dropped: Deferred.await(dropped)
        }
      })

    return {
      deliver,
      subscribe,
      clients: () => Effect.sync(() => clients.size),
      /** Whether anyone is connected: the log's reader reads only then. */
      wanted: () => clients.size > 0,
      /** The id of the last event delivered: where the log's reader goes on from. */
      position: () => last
    }
  })

export type Fanout = Effect.Effect.Success<ReturnType<typeof makeFanout>>
