// The tool calls running on this replica, per session, from the bus: what a session's handover
// waits for (SessionOwner.ts). One per runner, built before the sharding and closed after it, so a
// stopping replica still sees its calls finish while its entities hand their sessions over.
import { Bus } from "@agent/core"
import { Context, Effect, Layer, Stream } from "effect"

export class RunningTools extends Context.Tag("@agent/server/cluster/RunningTools")<
  RunningTools,
  {
    /** The ids of the session's tool calls that are pending or running here now. */
    readonly of: (sessionID: string) => ReadonlySet<string>
  }
>() {
  /**
   * One subscription for the runner (a handful of updates per tool call). Not per entity: an
   * entity's build runs once per session, and a subscription there made every part update of
   * every session reach every live session (50 sessions: half a replica's CPU; docs/performance.md).
   */
  static readonly layer: Layer.Layer<RunningTools, never, Bus> = Layer.scoped(
    RunningTools,
    Effect.gen(function*() {
      const bus = yield* Bus
      const running = new Map<string, Set<string>>()
      const updates = yield* bus.subscribe({ types: ["message.part.updated"] })
      yield* updates.pipe(
        Stream.runForEach((event) =>
          Effect.sync(() => {
            const part = event.properties.part
            if (part.type !== "tool") return
            const calls = running.get(part.sessionID) ?? new Set<string>()
            if (part.state.status === "running" || part.state.status === "pending") calls.add(part.id)
            else calls.delete(part.id)
            if (calls.size === 0) running.delete(part.sessionID)
            else running.set(part.sessionID, calls)
          })
        ),
        Effect.catchAllCause((cause) => Effect.logError("the replica's tool tracker stopped", cause)),
        Effect.forkScoped
      )
      return RunningTools.of({ of: (sessionID) => running.get(sessionID) ?? new Set() })
    })
  )
}
