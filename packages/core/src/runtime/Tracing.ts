import { Cause, Context, Effect, Exit, identity, Layer, Option, Tracer } from "effect"
import { Instance } from "./Instance.js"
import * as OtlpSettings from "./OtlpSettings.js"

/**
 * Spans of a runtime: every service method is `Effect.fn("Service.method")`, and the model call,
 * each tool execution and each permission wait are spans with the session, agent, tool and model
 * as attributes (the run, the model call and the tool calls follow the OpenTelemetry GenAI
 * conventions: `invoke_agent`, `chat`, `execute_tool`). `OTEL_EXPORTER_OTLP_ENDPOINT` exports them
 * (OtelExport.ts), `AGENT_TRACE=1` prints each finished span on stderr, and tests collect them
 * (`TestTracer` in the testing package). Without any, Effect's own tracer runs and nothing here
 * costs anything.
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

/**
 * The runtime's tracing: with `OTEL_EXPORTER_OTLP_ENDPOINT` (or its traces/metrics variants) in the
 * instance's environment, spans and metrics are exported over OTLP/HTTP (`OtelExport.ts`, imported
 * only then: nothing of OpenTelemetry is loaded otherwise); else `AGENT_TRACE=1` prints spans; else
 * Effect's default tracer.
 */
export const layer: Layer.Layer<never, never, Instance> = Layer.unwrapEffect(
  Effect.map(Instance, (instance) => {
    const otlp = OtlpSettings.fromEnv(instance.env)
    const local = instance.env.AGENT_TRACE === "1" ? layerStderr : Layer.empty
    if (otlp._tag === "Off") return local
    if (otlp._tag === "Invalid") return Layer.merge(local, Layer.effectDiscard(Effect.logWarning(`OpenTelemetry export is off: ${otlp.problem}`)))
    return Layer.unwrapScoped(Effect.map(
      Effect.promise(() => import("./OtelExport.js")),
      (otel) => otel.layer(otlp.settings)
    ))
  })
)

/** Effect's own tracer, the one a runtime has when nothing records spans. */
const defaultTracer = Effect.runSync(Effect.tracer)

export interface TracedOptions {
  readonly attributes: Record<string, unknown>
  readonly kind?: Tracer.SpanKind
}

/**
 * A span around `self` when this runtime's spans go somewhere (`AGENT_TRACE=1`, a test's collector,
 * an exporter): for the spans on a step's path (the model call, each tool call). Under Effect's
 * default tracer they are left out: there, these three spans cost 2.5 ms of server CPU per step
 * (bench:server busy, 12.0 ms a step without them, 14.6–16.0 ms with; docs/performance.md, 2026-11-26).
 */
export const traced = (name: string, options: TracedOptions) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.tracerWith((tracer) => tracer === defaultTracer ? self : Effect.withSpan(self, name, options))

/**
 * The current span, kept to parent work that starts later inside another span: a step's tool calls
 * start while the model call's span is open but belong to the run. Identity when spans are not
 * recorded.
 */
export const keepParent: Effect.Effect<<A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>> = Effect.tracerWith(
  (tracer) =>
    tracer === defaultTracer ? Effect.succeed(identity) : Effect.map(Effect.option(Effect.currentParentSpan), (parent) =>
      Option.isNone(parent)
        ? identity
        : <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.withParentSpan(self, parent.value))
)

/** Adds attributes to the span `tracedWith` made, once they are known (its result, its usage). */
export type Annotate = (attributes: Record<string, unknown>) => void

/** What a failure is called in `error.type`: its tag, else `_OTHER` (the GenAI conventions' fallback). */
const errorType = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isNone(failure)) return "_OTHER"
  const error = failure.value
  return typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string" ? error._tag : "_OTHER"
}

/**
 * `traced` for a body that annotates its span as it ends (`annotate` is undefined when no span is
 * made, so the body does no work for it then); the options are made only for a span. A failure
 * sets `error.type`.
 */
export const tracedWith = <A, E, R>(
  name: string,
  options: () => TracedOptions,
  body: (annotate: Annotate | undefined) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.tracerWith((tracer) => {
    if (tracer === defaultTracer) return body(undefined)
    return Effect.useSpan(name, options(), (span) => {
      const annotate: Annotate = (attributes) => {
        for (const key in attributes) if (attributes[key] !== undefined) span.attribute(key, attributes[key])
      }
      return body(annotate).pipe(
        Effect.onExit((exit) =>
          Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)
            ? Effect.sync(() => span.attribute("error.type", errorType(exit.cause)))
            : Effect.void
        ),
        Effect.withParentSpan(span)
      )
    })
  })
