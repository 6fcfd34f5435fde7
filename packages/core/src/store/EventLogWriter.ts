import type { BusEvent } from "@agent/domain"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer, Queue, Stream } from "effect"
import { Bus } from "../runtime/Bus.js"
import { makeTimedDeltaMerge } from "../runtime/DeltaMerge.js"
import { isReadOnly } from "./Database.js"
import { type EventLogShape, makeEventLog } from "./EventLog.js"

// The writing side of the event log: on a PostgreSQL store, every event this process's bus
// publishes is appended to the log, where the `agent serve` replicas on the database read it
// (docs/storage.md, "The event log"). The process that runs a session is the one that publishes its events, so a
// session's events enter the log in the order its run made them. On SQLite nothing is written:
// one `agent serve` streams its own bus (measured: docs/performance.md).

/** Text deltas are merged over this window before they are logged (what the event stream did before). */
const MERGE_WINDOW = "50 millis"
/** Events per append transaction at most. */
const MAX_BATCH = 2_000
/** Events waiting while the database does not answer; past this the oldest are dropped, and counted. */
const MAX_WAITING = 100_000

/** The writer's state: what waits to be appended, and what was dropped while the database was away. */
interface Waiting {
  readonly events: Array<BusEvent>
  dropped: number
}

const push = (waiting: Waiting) => (event: BusEvent) => {
  waiting.events.push(event)
  if (waiting.events.length > MAX_WAITING) {
    const cut = waiting.events.length - MAX_WAITING + MAX_WAITING / 10
    waiting.events.splice(0, cut)
    waiting.dropped += cut
  }
}

/** Appends everything waiting, a batch per transaction; a batch that fails goes back to the front. */
const drain = (log: EventLogShape, waiting: Waiting) =>
  Effect.gen(function*() {
    if (waiting.dropped > 0) {
      yield* Effect.logWarning(`event log: dropped ${waiting.dropped} events while the database could not take them`)
      waiting.dropped = 0
    }
    while (waiting.events.length > 0) {
      const batch = waiting.events.splice(0, MAX_BATCH)
      yield* log.append(batch).pipe(
        Effect.catchAllCause((cause) => Effect.sync(() => waiting.events.unshift(...batch)).pipe(Effect.zipRight(Effect.failCause(cause))))
      )
    }
  })

const start = Effect.gen(function*() {
  const bus = yield* Bus
  const log = yield* makeEventLog
  const waiting: Waiting = { events: [], dropped: 0 }
  const add = push(waiting)
  const wake = yield* Queue.sliding<void>(1)
  const lock = yield* Effect.makeSemaphore(1)
  const drainNow = lock.withPermits(1)(drain(log, waiting))
  const merge = yield* makeTimedDeltaMerge(MERGE_WINDOW, (event) => {
    add(event)
    wake.unsafeOffer(undefined)
  })

  // Subscribed before anything above this layer can publish.
  const events = yield* bus.subscribe({ capacity: 65_536 })
  yield* events.pipe(
    Stream.runForEach((event) =>
      Effect.sync(() => {
        if (merge.pass(event)) return
        add(event)
        wake.unsafeOffer(undefined)
      })
    ),
    Effect.catchAllCause(Effect.logError),
    Effect.forkScoped
  )
  // One append at a time: what the bus publishes meanwhile becomes the next batch.
  yield* Queue.take(wake).pipe(
    Effect.zipRight(drainNow.pipe(
      Effect.catchAllCause((cause) =>
        Effect.logError("event log: appending failed; trying again in a second", cause).pipe(
          Effect.zipRight(Effect.sleep("1 second")),
          Effect.zipRight(Effect.sync(() => wake.unsafeOffer(undefined)))
        )
      )
    )),
    Effect.forever,
    Effect.forkScoped
  )
  // Runs first when the runtime stops (finalizers run last-added first), after the layers above
  // (the session loop marking its runs interrupted) have closed: their last events are logged.
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      // Lets the subscription take what the bus still holds.
      yield* Effect.yieldNow()
      yield* Effect.sync(() => merge.flush())
      yield* drainNow
    }).pipe(Effect.timeout("5 seconds"), Effect.catchAllCause((cause) => Effect.logError("event log: the last events were not logged", cause)))
  )
})

/** Logs the bus's events on a PostgreSQL store that this process may write; nothing otherwise. */
export const layer: Layer.Layer<never, never, Bus | SqlClient.SqlClient> = Layer.scopedDiscard(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const postgres = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
    if (!postgres || (yield* isReadOnly)) return
    yield* start
  })
)
