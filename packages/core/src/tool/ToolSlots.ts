// How many of one step's tool calls run at once (`tool_concurrency`), the rest waiting in order.
import { Deferred, Effect, Exit, FiberId } from "effect"

export interface ToolSlots {
  /** Runs `effect` once a slot is free; callers get slots in the order they asked. */
  readonly run: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/**
 * `size` slots, handed to waiters first come, first served. Not Effect's `Semaphore`: on every
 * release it wakes all its waiters and all but one queue again, so a step with thousands of calls
 * would spend its time in wake-ups (n² of them), and the order would not be guaranteed.
 */
export const make = (size: number): Effect.Effect<ToolSlots> =>
  Effect.sync(() => {
    let free = size
    // A Set keeps insertion order and removes an interrupted waiter in O(1).
    const waiting = new Set<Deferred.Deferred<void>>()

    /** Gives the slot to the first waiter, or back to the pool. */
    const release = Effect.sync(() => {
      const next = waiting.values().next()
      if (next.done) free++
      else {
        waiting.delete(next.value)
        Deferred.unsafeDone(next.value, Exit.void)
      }
    })

    const acquire = Effect.suspend(() => {
      if (free > 0) {
        free--
        return Effect.void
      }
      const turn = Deferred.unsafeMake<void>(FiberId.none)
      waiting.add(turn)
      return Deferred.await(turn).pipe(
        // Interrupted while waiting: leave the line; if the slot was handed over just then, pass it on.
        Effect.onInterrupt(() => (waiting.delete(turn) ? Effect.void : release))
      )
    })

    return {
      run: (effect) =>
        Effect.uninterruptibleMask((restore) => Effect.zipRight(restore(acquire), Effect.ensuring(restore(effect), release)))
    }
  })
