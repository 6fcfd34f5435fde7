import type { BusEvent, BusEventOf, BusEventType } from "@agent/domain"
import { Context, Effect, Layer, Queue, Ref, type Scope, Stream } from "effect"

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

      const publish = Effect.fnUntraced(function*(event: BusEvent) {
        for (const subscriber of subscribers) {
          if (subscriber.types && !subscriber.types.has(event.type)) continue
          if ((yield* Queue.size(subscriber.queue)) >= subscriber.capacity) yield* Ref.update(dropped, (n) => n + 1)
          yield* Queue.offer(subscriber.queue, event)
        }
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
