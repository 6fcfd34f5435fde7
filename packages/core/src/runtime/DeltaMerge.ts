import type { BusEvent, BusEventOf } from "@agent/domain"
import { type Duration, Effect, Queue, type Scope } from "effect"

type DeltaProperties = BusEventOf<"message.part.delta">["properties"]

interface Pending {
  readonly properties: DeltaProperties
  delta: string
}

/**
 * Merges a burst of text deltas into one per part and field, for the readers that pass events on
 * (the server's event stream, the event log): a model streams a token per delta. Anything else
 * about the run should `flush` the merged text first, so order is kept.
 */
export class DeltaMerge {
  private readonly pending = new Map<string, Pending>()

  /** Nothing held. */
  get empty(): boolean {
    return this.pending.size === 0
  }

  /** Holds a `message.part.delta` (true) or leaves any other event to the caller (false). */
  hold(event: BusEvent): boolean {
    if (event.type !== "message.part.delta") return false
    const key = `${event.properties.partID}:${event.properties.field}`
    const open = this.pending.get(key)
    if (open) open.delta += event.properties.delta
    else this.pending.set(key, { properties: event.properties, delta: event.properties.delta })
    return true
  }

  /** Hands out the merged deltas, in the order their parts first streamed, and forgets them. */
  flush(emit: (event: BusEventOf<"message.part.delta">) => void): void {
    if (this.pending.size === 0) return
    for (const { properties, delta } of this.pending.values()) emit({ type: "message.part.delta", properties: { ...properties, delta } })
    this.pending.clear()
  }
}

/** A DeltaMerge that hands its held text on by itself, `window` after the first delta it holds. */
export interface TimedDeltaMerge {
  /** Holds a delta (true); for any other event, flushes what is held (false: the caller passes the event on). */
  readonly pass: (event: BusEvent) => boolean
  /** Hands out what is held now. */
  readonly flush: () => void
}

/**
 * Its timer runs only while text is held, so an idle process does not wake for it (a 50 ms
 * `Effect.repeat` costs an idle server about 19 ms of CPU a second: docs/performance.md). Scoped.
 */
export const makeTimedDeltaMerge = (
  window: Duration.DurationInput,
  emit: (event: BusEventOf<"message.part.delta">) => void
): Effect.Effect<TimedDeltaMerge, never, Scope.Scope> =>
  Effect.gen(function*() {
    const merge = new DeltaMerge()
    const held = yield* Queue.sliding<void>(1)
    yield* Queue.take(held).pipe(
      Effect.zipRight(Effect.sleep(window)),
      Effect.zipRight(Effect.sync(() => merge.flush(emit))),
      Effect.forever,
      Effect.catchAllCause(Effect.logError),
      Effect.forkScoped
    )
    return {
      pass: (event) => {
        const idle = merge.empty
        if (merge.hold(event)) {
          if (idle) held.unsafeOffer(undefined)
          return true
        }
        merge.flush(emit)
        return false
      },
      flush: () => merge.flush(emit)
    }
  })
