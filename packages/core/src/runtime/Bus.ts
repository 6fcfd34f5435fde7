import type { BusEvent, BusEventOf, BusEventType } from "@agent/domain"
import { Context, Effect, Layer, Option, Queue, Ref, type Scope, Stream } from "effect"

export interface SubscribeOptions<T extends BusEventType> {
  /** Only these event types (default: all). */
  readonly types?: ReadonlyArray<T>
  /** Queue size for this subscriber; when full, the oldest events are dropped (default 16384). */
  readonly capacity?: number
}

/** Enough for a burst of streamed deltas; a stalled reader holds at most this many events. */
const DEFAULT_CAPACITY = 16_384

interface Subscriber {
  readonly queue: Queue.Queue<BusEvent>
  readonly types: ReadonlySet<string> | undefined
  readonly capacity: number
}

/**
 * The one event bus of a runtime. A subscription is live as soon as `subscribe` has run,
 * before its stream is consumed, and every subscriber has its own bounded queue: a slow
 * reader loses its oldest events (counted in `dropped`), never the publisher's memory.
 */
export class Bus extends Context.Tag("@agent/core/Bus")<
  Bus,
  {
    readonly publish: (event: BusEvent) => Effect.Effect<void>
    readonly subscribe: <T extends BusEventType = BusEventType>(
      options?: SubscribeOptions<T>
    ) => Effect.Effect<Stream.Stream<BusEventOf<T>>, never, Scope.Scope>
    /** Events dropped so far across all subscribers because their queues were full. */
    readonly dropped: () => Effect.Effect<number>
  }
>() {
  static readonly layer: Layer.Layer<Bus> = Layer.effect(
    Bus,
    Effect.gen(function*() {
      const subscribers = new Set<Subscriber>()
      const dropped = yield* Ref.make(0)

      // Several times per step: a queue with room takes the event directly, and only a full one
      // goes through the effectful offer, which slides out its oldest event.
      const publish = (event: BusEvent): Effect.Effect<void> =>
        Effect.suspend(() => {
          let full: Array<Subscriber> | undefined
          for (const subscriber of subscribers) {
            if (subscriber.types && !subscriber.types.has(event.type)) continue
            const size = subscriber.queue.unsafeSize()
            if (Option.isNone(size)) continue // shut down: its reader is gone
            if (size.value < subscriber.capacity && subscriber.queue.unsafeOffer(event)) continue
            ;(full ??= []).push(subscriber)
          }
          if (!full) return Effect.void
          return Effect.forEach(full, (subscriber) =>
            Ref.update(dropped, (n) => n + 1).pipe(Effect.zipRight(Queue.offer(subscriber.queue, event))), { discard: true })
        })

      const subscribe = <T extends BusEventType = BusEventType>(options: SubscribeOptions<T> = {}) =>
        Effect.gen(function*() {
          const capacity = options.capacity ?? DEFAULT_CAPACITY
          const subscriber: Subscriber = {
            queue: yield* Queue.sliding<BusEvent>(capacity),
            types: options.types ? new Set(options.types) : undefined,
            capacity
          }
          yield* Effect.acquireRelease(
            Effect.sync(() => subscribers.add(subscriber)),
            () => Effect.sync(() => subscribers.delete(subscriber)).pipe(Effect.zipRight(Queue.shutdown(subscriber.queue)))
          )
          return Stream.fromQueue(subscriber.queue) as Stream.Stream<BusEventOf<T>>
        })

      return { publish, subscribe, dropped: () => Ref.get(dropped) }
    })
  )
}
