// A small OTLP/HTTP receiver on loopback for the telemetry tests: it takes the JSON encoding
// (OTEL_EXPORTER_OTLP_PROTOCOL=http/json) of spans and metrics and keeps what it was sent, decoded
// into plain spans and data points. A protobuf body is kept as raw bytes only (its count says one came).
import { Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

type AnyValue = {
  stringValue?: string
  intValue?: number | string
  doubleValue?: number
  boolValue?: boolean
  arrayValue?: { values?: Array<AnyValue> }
}
type KeyValue = { key: string; value: AnyValue }

export interface ReceivedSpan {
  readonly name: string
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly kind: number
  readonly attributes: Record<string, unknown>
  readonly resource: Record<string, unknown>
  readonly status: { readonly code?: number }
}

export interface ReceivedPoint {
  readonly metric: string
  readonly unit: string | undefined
  readonly attributes: Record<string, unknown>
  /** A sum's value, or a histogram's sum. */
  readonly value: number
  /** A histogram's count. */
  readonly count: number | undefined
}

export interface ReceivedRequest {
  readonly path: string
  readonly contentType: string | undefined
  readonly headers: http.IncomingHttpHeaders
  readonly body: Buffer
}

const valueOf = (value: AnyValue): unknown => {
  if (value.stringValue !== undefined) return value.stringValue
  if (value.intValue !== undefined) return Number(value.intValue)
  if (value.doubleValue !== undefined) return value.doubleValue
  if (value.boolValue !== undefined) return value.boolValue
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(valueOf)
  return undefined
}

const attributesOf = (list: ReadonlyArray<KeyValue> | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((entry) => [entry.key, valueOf(entry.value)]))

interface TraceBody {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<KeyValue> }
    scopeSpans?: Array<{
      spans?: Array<{
        name: string
        traceId: string
        spanId: string
        parentSpanId?: string
        kind: number
        attributes?: Array<KeyValue>
        status?: { code?: number }
      }>
    }>
  }>
}

type DataPoint = { attributes?: Array<KeyValue>; asInt?: number | string; asDouble?: number; sum?: number; count?: number | string }
interface MetricBody {
  resourceMetrics?: Array<{
    scopeMetrics?: Array<{
      metrics?: Array<{
        name: string
        unit?: string
        sum?: { dataPoints?: Array<DataPoint> }
        gauge?: { dataPoints?: Array<DataPoint> }
        histogram?: { dataPoints?: Array<DataPoint> }
      }>
    }>
  }>
}

const spansOf = (body: TraceBody): Array<ReceivedSpan> =>
  (body.resourceSpans ?? []).flatMap((resourceSpans) => {
    const resource = attributesOf(resourceSpans.resource?.attributes)
    return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        name: span.name,
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId || undefined,
        kind: span.kind,
        attributes: attributesOf(span.attributes),
        resource,
        status: span.status ?? {}
      }))
    )
  })

const pointsOf = (body: MetricBody): Array<ReceivedPoint> =>
  (body.resourceMetrics ?? []).flatMap((resource) =>
    (resource.scopeMetrics ?? []).flatMap((scope) =>
      (scope.metrics ?? []).flatMap((metric) => {
        const points = metric.histogram?.dataPoints ?? metric.sum?.dataPoints ?? metric.gauge?.dataPoints ?? []
        return points.map((point) => ({
          metric: metric.name,
          unit: metric.unit,
          attributes: attributesOf(point.attributes),
          value: Number(point.asInt ?? point.asDouble ?? point.sum ?? 0),
          count: point.count === undefined ? undefined : Number(point.count)
        }))
      })
    )
  )

export interface OtlpReceiver {
  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly url: string
  readonly requests: ReadonlyArray<ReceivedRequest>
  readonly spans: () => Array<ReceivedSpan>
  readonly points: () => Array<ReceivedPoint>
  /** Every request's body as text (to check that some text was never sent). */
  readonly rawText: () => string
}

const isJson = (request: ReceivedRequest) => request.contentType?.includes("json") === true

/** Starts the receiver on a loopback port; closed when the scope ends. */
export const start = Effect.acquireRelease(
  Effect.async<{ server: http.Server; receiver: OtlpReceiver }>((resume) => {
    const requests: Array<ReceivedRequest> = []
    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        requests.push({ path: req.url ?? "", contentType: req.headers["content-type"], headers: req.headers, body: Buffer.concat(chunks) })
        const json = req.headers["content-type"]?.includes("json") === true
        res.writeHead(200, { "content-type": json ? "application/json" : "application/x-protobuf" })
        res.end(json ? "{}" : undefined)
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port
      const parsed = <T>(path: string) =>
        requests.filter((request) => request.path === path && isJson(request)).map((request) => JSON.parse(request.body.toString()) as T)
      resume(Effect.succeed({
        server,
        receiver: {
          url: `http://127.0.0.1:${port}`,
          requests,
          spans: () => parsed<TraceBody>("/v1/traces").flatMap(spansOf),
          points: () => parsed<MetricBody>("/v1/metrics").flatMap(pointsOf),
          rawText: () => requests.map((request) => request.body.toString()).join("\n")
        }
      }))
    })
  }),
  ({ server }) => Effect.sync(() => server.close())
).pipe(Effect.map(({ receiver }) => receiver))

/** The span's ancestors' names, nearest first (within what was received). */
export const ancestors = (spans: ReadonlyArray<ReceivedSpan>, span: ReceivedSpan): Array<string> => {
  const byId = new Map(spans.map((candidate) => [candidate.spanId, candidate]))
  const names: Array<string> = []
  let parent = span.parentSpanId ? byId.get(span.parentSpanId) : undefined
  while (parent) {
    names.push(parent.name)
    parent = parent.parentSpanId ? byId.get(parent.parentSpanId) : undefined
  }
  return names
}

/** The nearest ancestor whose name starts with `prefix`. */
export const nearest = (spans: ReadonlyArray<ReceivedSpan>, span: ReceivedSpan, prefix: string): ReceivedSpan | undefined => {
  const byId = new Map(spans.map((candidate) => [candidate.spanId, candidate]))
  let parent = span.parentSpanId ? byId.get(span.parentSpanId) : undefined
  while (parent && !parent.name.startsWith(prefix)) parent = parent.parentSpanId ? byId.get(parent.parentSpanId) : undefined
  return parent
}
