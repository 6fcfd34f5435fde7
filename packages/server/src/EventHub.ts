import { Bus, makeEventLog, makeTimedDeltaMerge } from "@agent/core"
import type { BusEvent } from "@agent/domain"
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, type Duration, Effect, Layer, Queue, type Scope, Stream } from "effect"
import { type FanoutOptions, makeFanout, type ServerEvent, type Subscription } from "./EventFanout.js"
import { type EventLogFeedOptions, followLog, olderEvents } from "./EventLogFeed.js"

export type { ServerEvent, Subscription } from "./EventFanout.js"

export interface EventHubOptions extends FanoutOptions, EventLogFeedOptions {
  /** Text deltas of one part are merged over this window (default 50 ms; on PostgreSQL the log's writer merges them). */
  readonly coalesce?: Duration.DurationInput
}

/** Numbers this process's bus events and passes them on, text deltas merged: the stream of one server on SQLite. */
const followBus = (bus: Bus["Type"], deliver: (event: ServerEvent) => void, coalesce: Duration.DurationInput) =>
  Effect.gen(function*() {
    let sequence = 0
    const emit = (event: BusEvent) => deliver({ id: ++sequence, type: event.type, properties: event.properties })
    // Anything else about the run flushes the merged text first, so order is kept.
    const merge = yield* makeTimedDeltaMerge(coalesce, emit)
    const events = yield* bus.subscribe({ capacity: 65_536 })
    yield* events.pipe(
      Stream.runForEach((event) => Effect.sync(() => merge.pass(event) || emit(event))),
      Effect.catchAllCause(Effect.logError),
      Effect.forkScoped
    )
  })

/**
 * The events SSE clients get. On SQLite: this process's bus, numbered here, the last ones kept
 * for `Last-Event-ID` replay. On PostgreSQL: the event log every replica writes, numbered by its
 * positions, so a client may resume on any replica (EventLogFeed.ts); read only while clients are connected.
 */
export class EventHub extends Context.Tag("@agent/server/EventHub")<
  EventHub,
  {
    /**
     * Replayed events after `lastEventId` (when given), then live ones; ends if the client falls
     * behind, and `dropped` completes so the caller can close a connection that is not reading.
     */
    readonly subscribe: (lastEventId?: number) => Effect.Effect<Subscription, never, Scope.Scope>
    /** How many clients are connected now. */
    readonly clients: () => Effect.Effect<number>
  }
>() {
  static readonly layer = (options: EventHubOptions = {}): Layer.Layer<EventHub, never, Bus | SqlClient.SqlClient> =>
    Layer.scoped(
      EventHub,
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        if (sql.onDialectOrElse({ pg: () => true, orElse: () => false })) {
          const log = yield* makeEventLog
          const wake = yield* Queue.sliding<void>(1)
          const fanout = yield* makeFanout(options, { older: olderEvents(log), head: log.head, resume: () => wake.unsafeOffer(undefined) })
          yield* followLog(log, fanout, wake, options)
          return EventHub.of({ subscribe: fanout.subscribe, clients: fanout.clients })
        }
        const fanout = yield* makeFanout(options)
        yield* followBus(yield* Bus, fanout.deliver, options.coalesce ?? "50 millis")
        return EventHub.of({ subscribe: fanout.subscribe, clients: fanout.clients })
      })
    )
}
