import { Tracing } from "@agent/core"
import { Context, Effect, Layer } from "effect"

/** The spans a test's runtime finished so far, in the order they ended. */
export class CollectedSpans extends Context.Tag("@agent/testing/CollectedSpans")<CollectedSpans, {
  readonly all: Effect.Effect<ReadonlyArray<Tracing.FinishedSpan>>
  readonly named: (name: string) => Effect.Effect<ReadonlyArray<Tracing.FinishedSpan>>
}>() {}

/**
 * A tracer that keeps every finished span in memory, and `CollectedSpans` to read them.
 * Provide it outside the runtime (or pass it as `makeAppLayer({ tracing })`) so it is set first.
 */
export const layer: Layer.Layer<CollectedSpans> = Layer.unwrapEffect(Effect.sync(() => {
  const spans: Array<Tracing.FinishedSpan> = []
  return Layer.merge(
    Layer.setTracer(Tracing.recordingTracer((span) => void spans.push(span))),
    Layer.succeed(CollectedSpans, {
      all: Effect.sync(() => [...spans]),
      named: (name) => Effect.sync(() => spans.filter((span) => span.name === name))
    })
  )
}))
