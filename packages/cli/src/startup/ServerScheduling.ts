import * as Effect from "effect/Effect"

/**
 * Why: in a server a forced yield in the middle of one step's synchronous work only shares the
 * thread out (a burst of steps all finish late instead of one after another) and costs a
 * scheduler turn each time; bench:server's varied phase, 12 interleaved pairs at load 0.3–2.3:
 * p99 lower in 10, equal in 1, higher in 1 (medians 80 vs 89.5 ms; 47–49 vs 51–74 ms quiet).
 *
 * Operations a fiber runs before it lets others in when it has not reached an async boundary
 * (Effect's default is 2048). At this bound a fiber switches at real waits (I/O, timers, queues)
 * and practically never on a count.
 */
const MAX_OPS_BEFORE_YIELD = 100_000_000

/** The server's fibers yield at real waits only. */
export const yieldAtWaitsOnly = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withMaxOpsBeforeYield(effect, MAX_OPS_BEFORE_YIELD)
