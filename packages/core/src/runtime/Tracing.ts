import { Cause, Context, Effect, Exit, Layer, Option, Tracer } from "effect"
import { Instance } from "./Instance.js"

/**
 * Spans of a runtime: every service method is `Effect.fn("Service.method")`, and the model call,
 * each tool execution and each permission wait are spans with the session, agent, tool and model
 * as attributes. Nothing exports them yet: `AGENT_TRACE=1` prints each finished span on stderr,
 * and tests collect them (`TestTracer` in the testing package). Without either, Effect's own
 * tracer runs and nothing here costs anything.
 */

/** A span once it has ended, as printed or collected. */
export interface FinishedSpan {
  readonly name: string
  readonly traceId: string
  readonly spanId: string
  /** The enclosing span's id, and its name when it is one of ours. */
  readonly parent: { readonly spanId: string; readonly name?: string } | undefined
  readonly durationMs: number
  readonly status: "ok" | "error" | "interrupted"
  readonly attributes: Readonly<Record<string, unknown>>
}

const statusOf = (exit: Exit.Exit<unknown, unknown>): FinishedSpan["status"] =>
  Exit.isSuccess(exit) ? "ok" : Cause.isInterruptedOnly(exit.cause) ? "interrupted" : "error"

class RecordingSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly sampled = true
  readonly traceId: string
  status: Tracer.SpanStatus
  readonly attributes = new Map<string, unknown>()
  readonly links: Array<Tracer.SpanLink>

  constructor(
    readonly name: string,
    readonly spanId: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context.Context<never>,
    links: ReadonlyArray<Tracer.SpanLink>,
    startTime: bigint,
    readonly kind: Tracer.SpanKind,
    private readonly onEnd: (span: FinishedSpan) => void
  ) {
    this.traceId = Option.isSome(parent) ? parent.value.traceId : spanId
    this.status = { _tag: "Started", startTime }
    this.links = [...links]
  }

  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    const startTime = this.status.startTime
    this.status = { _tag: "Ended", startTime, endTime, exit }
    const parent = Option.getOrUndefined(this.parent)
    this.onEnd({
      name: this.name,
      traceId: this.traceId,
      spanId: this.spanId,
      parent: parent === undefined
        ? undefined
        : parent._tag === "Span" ? { spanId: parent.spanId, name: parent.name } : { spanId: parent.spanId },
      durationMs: Number(endTime - startTime) / 1e6,
      status: statusOf(exit),
      attributes: Object.fromEntries(this.attributes)
    })
  }

  attribute(key: string, value: unknown): void {
    this.attributes.set(key, value)
  }

  event(): void {}

  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    this.links.push(...links)
  }
}

/** A tracer that hands each span to `onEnd` when it ends. Span ids count up per tracer. */
export const recordingTracer = (onEnd: (span: FinishedSpan) => void): Tracer.Tracer => {
  let next = 0
  return Tracer.make({
    span: (name, parent, context, links, startTime, kind) =>
      new RecordingSpan(name, (++next).toString(16).padStart(8, "0"), parent, context, links, startTime, kind, onEnd),
    context: (f) => f()
  })
}

const attributeText = (value: unknown): string =>
  typeof value === "string" ? JSON.stringify(value) : typeof value === "bigint" ? value.toString() : JSON.stringify(value) ?? String(value)

/** One line per span: `span <name> <ms>ms <status> id=<id> parent=<name|id> key=value ...`. */
export const formatSpan = (span: FinishedSpan): string => {
  const parent = span.parent ? ` parent=${span.parent.name ?? span.parent.spanId}` : ""
  const attributes = Object.entries(span.attributes).map(([key, value]) => ` ${key}=${attributeText(value)}`).join("")
  return `span ${span.name} ${span.durationMs.toFixed(1)}ms ${span.status} id=${span.spanId}${parent}${attributes}`
}

/** Prints each finished span to stderr, one line each. */
export const layerStderr: Layer.Layer<never> = Layer.setTracer(
  recordingTracer((span) => void process.stderr.write(`${formatSpan(span)}\n`))
)

/** The runtime's tracing: `AGENT_TRACE=1` in the instance's environment prints spans, else Effect's default. */
export const layer: Layer.Layer<never, never, Instance> = Layer.unwrapEffect(
  Effect.map(Instance, (instance) => instance.env.AGENT_TRACE === "1" ? layerStderr : Layer.empty)
)

/** Effect's own tracer, the one a runtime has when nothing records spans. */
const defaultTracer = Effect.runSync(Effect.tracer)

/**
 * A span around `self` when this runtime's spans go somewhere (`AGENT_TRACE=1`, a test's collector,
 * an exporter): for the spans on a step's path (the model call, each tool call). Under Effect's
 * default tracer they are left out: there, these three spans cost 2.5 ms of server CPU per step
 * (bench:server busy, 12.0 ms a step without them, 14.6–16.0 ms with; docs/performance.md, 2026-11-26).
 */
export const traced = (name: string, options: { readonly attributes: Record<string, unknown> }) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.tracerWith((tracer) => tracer === defaultTracer ? self : Effect.withSpan(self, name, options))
