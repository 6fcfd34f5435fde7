// The OpenTelemetry export: the runtime's spans through @effect/opentelemetry's tracer into an SDK
// tracer provider, posted over OTLP/HTTP; the metrics read off the GenAI spans (GenAiMeasurements)
// and the recorder's (Telemetry.ts) through an SDK meter provider. Imported by Tracing.layer only when
// an OTLP endpoint is set: nothing of OpenTelemetry is loaded otherwise. Both providers belong to
// the layer's scope, and closing it flushes them: a short `agent run` exports everything before
// the process ends.
import * as OtelResource from "@effect/opentelemetry/Resource"
import * as OtelTracer from "@effect/opentelemetry/Tracer"
import type { Attributes, Context as OtelContext, Counter, Histogram, UpDownCounter } from "@opentelemetry/api"
import { OTLPMetricExporter as JsonMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http"
import { OTLPMetricExporter as ProtoMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto"
import { OTLPTraceExporter as JsonTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { OTLPTraceExporter as ProtoTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto"
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type Span,
  type SpanProcessor
} from "@opentelemetry/sdk-trace-base"
import { Effect, Layer, Runtime } from "effect"
import { type Instrument, measurementsOf } from "./GenAiMeasurements.js"
import type { OtlpExport, OtlpSignal } from "./OtlpSettings.js"
import { CurrentRecorder, type TelemetryRecorder } from "./Telemetry.js"
import { VERSION } from "./Version.js"

/** The instruments, made once per meter provider. */
interface Instruments {
  readonly histograms: Readonly<Record<Exclude<Instrument, "agent.usage.cost">, Histogram>>
  readonly cost: Counter
  readonly activeRuns: UpDownCounter
  readonly permissionDecisions: Counter
  readonly compactions: Counter
}

const makeInstruments = (provider: MeterProvider): Instruments => {
  const meter = provider.getMeter("agent", VERSION)
  return {
    histograms: {
      "gen_ai.client.operation.duration": meter.createHistogram("gen_ai.client.operation.duration", {
        unit: "s",
        description: "GenAI operation duration: a model call (chat) or a whole run (invoke_agent)",
        advice: { explicitBucketBoundaries: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92] }
      }),
      "gen_ai.client.token.usage": meter.createHistogram("gen_ai.client.token.usage", {
        unit: "{token}",
        description: "Input and output tokens of a model call",
        advice: { explicitBucketBoundaries: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304] }
      }),
      "gen_ai.execute_tool.duration": meter.createHistogram("gen_ai.execute_tool.duration", {
        unit: "s",
        description: "Duration of a tool call"
      })
    },
    cost: meter.createCounter("agent.usage.cost", { unit: "USD", description: "Cost of model calls, from the model catalog's prices" }),
    activeRuns: meter.createUpDownCounter("agent.sessions.active", {
      unit: "{session}",
      description: "Sessions with a run in progress (subagents' sessions included)"
    }),
    permissionDecisions: meter.createCounter("agent.permission.decisions", {
      unit: "{decision}",
      description: "Permission decisions: allow/deny by rule, once/always/reject/corrected by a person"
    }),
    compactions: meter.createCounter("agent.compactions", { unit: "{compaction}", description: "Summaries of a session's history" })
  }
}

const isRun = (name: string) => name.startsWith("invoke_agent")

const seconds = (span: ReadableSpan) => span.duration[0] + span.duration[1] / 1e9

/** Feeds each finished GenAI span's measurements to the instruments; counts the runs in progress. */
const metricsProcessor = (instruments: Instruments): SpanProcessor => ({
  onStart: (span: Span, _context: OtelContext) => {
    if (isRun(span.name)) instruments.activeRuns.add(1)
  },
  onEnd: (span: ReadableSpan) => {
    if (isRun(span.name)) instruments.activeRuns.add(-1)
    for (const measurement of measurementsOf({ name: span.name, attributes: span.attributes, durationSeconds: seconds(span) })) {
      const attributes: Attributes = measurement.attributes
      if (measurement.instrument === "agent.usage.cost") instruments.cost.add(measurement.value, attributes)
      else instruments.histograms[measurement.instrument].record(measurement.value, attributes)
    }
  },
  forceFlush: () => Promise.resolve(),
  shutdown: () => Promise.resolve()
})

const recorderOf = (instruments: Instruments): TelemetryRecorder => ({
  permissionDecision: (permission, decision) => instruments.permissionDecisions.add(1, { "agent.permission": permission, "agent.permission.decision": decision }),
  compaction: (auto) => instruments.compactions.add(1, { "agent.compaction.auto": auto })
})

/** What an exporter's callback is told (the SDK's ExportResult: code 0 is success). */
interface ExportResult {
  readonly code: number
  readonly error?: Error
}

/**
 * Reports the first failed export of a signal (a collector that is down or refuses): the SDK itself
 * only tells its own diagnostic logger, which is silent. Later failures are not repeated.
 */
const reportingFailures = <T extends { export: (items: never, done: (result: ExportResult) => void) => void }>(
  exporter: T,
  report: (error: Error | undefined) => void
): T => {
  let reported = false
  const original = exporter.export.bind(exporter) as (items: unknown, done: (result: ExportResult) => void) => void
  exporter.export = ((items: unknown, done: (result: ExportResult) => void) =>
    original(items, (result) => {
      if (result.code !== 0 && !reported) {
        reported = true
        report(result.error)
      }
      done(result)
    })) as T["export"]
  return exporter
}

type Report = (what: string, signal: OtlpSignal) => (error: Error | undefined) => void

const traceExporter = (signal: OtlpSignal, report: Report) => {
  const config = { url: signal.url, headers: { ...signal.headers } }
  return reportingFailures(
    signal.protocol === "http/json" ? new JsonTraceExporter(config) : new ProtoTraceExporter(config),
    report("spans", signal)
  )
}

const metricExporter = (signal: OtlpSignal, report: Report) => {
  const config = { url: signal.url, headers: { ...signal.headers } }
  return reportingFailures(
    signal.protocol === "http/json" ? new JsonMetricExporter(config) : new ProtoMetricExporter(config),
    report("metrics", signal)
  )
}

/** A provider's end: what is buffered is sent; an unreachable collector is logged, never fails the command. */
const shutdown = (what: string, provider: { shutdown: () => Promise<void> }) =>
  Effect.tryPromise(() => provider.shutdown()).pipe(
    Effect.catchAllCause((cause) => Effect.logWarning(`OpenTelemetry: exporting the last ${what} failed`, cause))
  )

/**
 * Sets the runtime's tracer to one that exports (when `settings.traces`) and, when `settings.metrics`,
 * a meter provider fed by the spans and the recorder. Scoped: closing the scope flushes both.
 */
export const layer = (settings: OtlpExport): Layer.Layer<never> => {
  const resource = OtelResource.layer({
    serviceName: settings.serviceName,
    serviceVersion: VERSION,
    attributes: settings.resource
  })
  const providers = Layer.scopedContext(Effect.gen(function*() {
    const { Resource } = OtelResource
    const otelResource = yield* Resource
    const runtime = yield* Effect.runtime<never>()
    const report: Report = (what, signal) => (error) =>
      void Runtime.runFork(runtime)(
        Effect.logWarning(`OpenTelemetry: exporting ${what} to ${signal.url} failed: ${error?.message ?? "unknown error"}`)
      )
    const meters = settings.metrics
      ? yield* Effect.acquireRelease(
        Effect.sync(() =>
          new MeterProvider({
            resource: otelResource,
            readers: [
              new PeriodicExportingMetricReader({
                exporter: metricExporter(settings.metrics!, report),
                exportIntervalMillis: settings.metricIntervalMs,
                exportTimeoutMillis: Math.min(settings.metricIntervalMs, 30_000)
              })
            ]
          })
        ),
        (provider) => shutdown("metrics", provider)
      )
      : undefined
    const instruments = meters ? makeInstruments(meters) : undefined
    // Released before the meter provider: the spans' last measurements are in the final metric export.
    const tracerProvider = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new BasicTracerProvider({
          resource: otelResource,
          spanProcessors: [
            ...(settings.traces ? [new BatchSpanProcessor(traceExporter(settings.traces, report))] : []),
            ...(instruments ? [metricsProcessor(instruments)] : [])
          ]
        })
      ),
      (provider) => shutdown("spans", provider)
    )
    if (instruments) yield* Effect.locallyScoped(CurrentRecorder, recorderOf(instruments))
    return OtelTracer.OtelTracerProvider.context(tracerProvider)
  }))
  return OtelTracer.layerWithoutOtelTracer.pipe(
    Layer.provide(OtelTracer.layerTracer),
    Layer.provide(providers),
    Layer.provide(resource)
  )
}
