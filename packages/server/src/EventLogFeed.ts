import { type EventLogShape, listenEventLog, type LoggedEvent } from "@agent/core"
import type * as SqlClient from "@effect/sql/SqlClient"
import { Chunk, Duration, Effect, ExecutionStrategy, Exit, Option, Queue, Schedule, Scope, Stream } from "effect"
import type { OlderEvents, ServerEvent } from "./EventFanout.js"

// The event stream of a replica on PostgreSQL: the events come from the event log (every replica's,
// this one's included, which its EventLogWriter appended), not from this process's bus, so every
// replica sends the same events under the same ids (docs/storage.md, "The event log").

export interface EventLogFeedOptions {
  /**
   * How often the log is read even without a notification (default 2 s): a notification lost with
   * a dropped LISTEN connection delays events by at most this, never loses them.
   */
  readonly poll?: Duration.DurationInput
  /** How long events are kept in the log for `Last-Event-ID` (default 24 hours). */
  readonly retention?: Duration.DurationInput
  /** How often this replica deletes the events older than `retention` (default 10 minutes). */
  readonly pruneEvery?: Duration.DurationInput
  /** How long the LISTEN connection stays after the last client left (default 30 s). */
  readonly listenLinger?: Duration.DurationInput
}

/** Rows read per query. */
const PAGE = 1_000

export const toServerEvent = (event: LoggedEvent): ServerEvent =>
  event.seq !== undefined
    ? { id: event.pos, seq: event.seq, type: event.type, properties: event.properties }
    : { id: event.pos, type: event.type, properties: event.properties }

/** Replays from the log: the events after `after` up to `upTo`, a page per query. */
export const olderEvents = (log: EventLogShape): OlderEvents => (after, upTo) =>
  Stream.paginateChunkEffect(after, (from) =>
    log.after(from, PAGE, upTo).pipe(
      Effect.map((page) => [
        Chunk.unsafeFromArray(page.map(toServerEvent)),
        page.length === PAGE ? Option.some(page[page.length - 1]!.pos) : Option.none<number>()
      ] as const)
    ))

/** What the reader feeds: the fan-out of this replica's clients (EventFanout.ts). */
export interface LogReader {
  /** Whether any client is connected: with none, the log is not read. */
  readonly wanted: () => boolean
  /** The position of the last event passed on: reading goes on after it. */
  readonly position: () => number
  readonly deliver: (event: ServerEvent) => void
}

/**
 * Reads the log as it grows and passes each event to the reader, in order, while it has clients:
 * on every NOTIFY (PostgreSQL; it listens only while it has clients), every `poll`, after the LISTEN
 * connection comes back, and when `wake` is offered (the first client arrived). Prunes old events.
 */
export const followLog = (
  log: EventLogShape,
  reader: LogReader,
  wake: Queue.Queue<void>,
  options: EventLogFeedOptions = {}
): Effect.Effect<void, never, Scope.Scope | SqlClient.SqlClient> =>
  Effect.gen(function*() {
    // Without clients a replica skips the reads and the decoding of every replica's events, which
    // grew with the number of replicas (docs/performance.md, "Replicas").
    const readNew = Effect.gen(function*() {
      while (reader.wanted()) {
        const page = yield* log.after(reader.position(), PAGE)
        for (const event of page) reader.deliver(toServerEvent(event))
        if (page.length < PAGE) return
      }
    })
    const listening = yield* listenWhileWanted(log.channel, reader, () => wake.unsafeOffer(undefined), options)
    yield* Queue.take(wake).pipe(
      Effect.zipRight(listening),
      Effect.zipRight(readNew.pipe(
        Effect.catchAllCause((cause) =>
          Effect.logError("event log: reading failed; trying again in a second", cause).pipe(
            Effect.zipRight(Effect.sleep("1 second")),
            Effect.zipRight(Effect.sync(() => wake.unsafeOffer(undefined)))
          )
        )
      )),
      Effect.forever,
      Effect.forkScoped
    )
    yield* Effect.sync(() => wake.unsafeOffer(undefined)).pipe(
      Effect.delay(options.poll ?? "2 seconds"),
      Effect.forever,
      Effect.forkScoped
    )

    const retention = Duration.toMillis(options.retention ?? "24 hours")
    yield* Effect.suspend(() => log.prune(Date.now() - retention)).pipe(
      Effect.tap((deleted) => deleted > 0 ? Effect.logInfo(`event log: deleted ${deleted} events older than ${Duration.format(retention)}`) : Effect.void),
      Effect.catchAllCause((cause) => Effect.logWarning("event log: pruning failed", cause)),
      Effect.repeat({ schedule: Schedule.spaced(options.pruneEvery ?? "10 minutes") }),
      Effect.delay("1 minute"),
      Effect.forkScoped
    )
  })

/**
 * The LISTEN connection, open while the reader has clients and for `listenLinger` after the last
 * left: without clients nothing reads what a notification announces, and every commit of every
 * replica would still wake this process and a PostgreSQL backend (docs/performance.md, "Usage in the
 * group, and LISTEN only with clients").
 * Returns the check the reader runs on each wake (a client arrived, a poll, a notification).
 */
const listenWhileWanted = (
  channel: string | undefined,
  reader: LogReader,
  notified: () => void,
  options: EventLogFeedOptions
): Effect.Effect<Effect.Effect<void>, never, Scope.Scope | SqlClient.SqlClient> =>
  Effect.gen(function*() {
    if (channel === undefined) return Effect.void
    const outer = yield* Effect.scope
    const context = yield* Effect.context<SqlClient.SqlClient>()
    const linger = Duration.toMillis(options.listenLinger ?? "30 seconds")
    /** The open connection's scope, and since when no client has been connected (0: one is). */
    const state: { scope: Scope.CloseableScope | undefined; idleSince: number } = { scope: undefined, idleSince: 0 }
    return Effect.suspend(() => {
      if (reader.wanted()) {
        state.idleSince = 0
        if (state.scope !== undefined) return Effect.void
        // Once it listens it wakes the reader, which reads what was committed before.
        return Scope.fork(outer, ExecutionStrategy.sequential).pipe(
          Effect.tap((scope) => listenEventLog(channel, notified).pipe(Scope.extend(scope), Effect.provide(context))),
          Effect.tap((scope) => Effect.sync(() => (state.scope = scope))),
          Effect.asVoid
        )
      }
      if (state.scope === undefined) return Effect.void
      if (state.idleSince === 0) state.idleSince = Date.now()
      if (Date.now() - state.idleSince < linger) return Effect.void
      const scope = state.scope
      state.scope = undefined
      state.idleSince = 0
      return Scope.close(scope, Exit.void)
    })
  })
