// Where spans and metrics are exported, read from the usual OpenTelemetry variables of the
// instance's environment. Pure: Tracing.layer decides from it whether OtelExport.ts is loaded at all.

export type OtlpProtocol = "http/protobuf" | "http/json"

/** One signal's destination: the full URL it is posted to, its headers, its encoding. */
export interface OtlpSignal {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly protocol: OtlpProtocol
}

export interface OtlpExport {
  /** Absent: spans are not exported (they may still feed the metrics). */
  readonly traces: OtlpSignal | undefined
  readonly metrics: OtlpSignal | undefined
  readonly serviceName: string
  /** `OTEL_RESOURCE_ATTRIBUTES`, decoded. */
  readonly resource: Readonly<Record<string, string>>
  /** `OTEL_METRIC_EXPORT_INTERVAL` (default 60000 ms); the last export happens at exit whatever it is. */
  readonly metricIntervalMs: number
}

export type OtlpSettings =
  | { readonly _tag: "Off" }
  | { readonly _tag: "Invalid"; readonly problem: string }
  | { readonly _tag: "On"; readonly settings: OtlpExport }

type Env = Readonly<Record<string, string | undefined>>

const DEFAULT_SERVICE_NAME = "agent"
const DEFAULT_METRIC_INTERVAL_MS = 60_000

class Invalid {
  constructor(readonly problem: string) {}
}

const value = (env: Env, name: string): string | undefined => {
  const raw = env[name]?.trim()
  return raw === undefined || raw === "" ? undefined : raw
}

const decode = (text: string, variable: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    throw new Invalid(`${variable}: "${text}" is not valid percent-encoding`)
  }
}

/** `key=value,key2=value2` with percent-encoded values (the format of the headers and resource variables). */
export const parseKeyValues = (text: string, variable: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const entry of text.split(",")) {
    if (entry.trim() === "") continue
    const at = entry.indexOf("=")
    if (at <= 0) throw new Invalid(`${variable}: "${entry.trim()}" is not key=value`)
    out[decode(entry.slice(0, at).trim(), variable)] = decode(entry.slice(at + 1).trim(), variable)
  }
  return out
}

const checkUrl = (url: string, variable: string): string => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new Invalid(`${variable}: "${url}" is not a URL`)
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new Invalid(`${variable}: "${url}" is not an http(s) URL (only OTLP over HTTP is supported)`)
  }
  return url
}

const protocolOf = (env: Env, specific: string): OtlpProtocol => {
  const variable = value(env, specific) !== undefined ? specific : "OTEL_EXPORTER_OTLP_PROTOCOL"
  const protocol = value(env, variable) ?? "http/protobuf"
  if (protocol === "http/protobuf" || protocol === "http/json") return protocol
  throw new Invalid(`${variable}: "${protocol}" is not supported (use http/protobuf or http/json)`)
}

/** The signal's URL: its own variable as given, else the general endpoint with `/v1/<signal>` appended. */
const signalOf = (env: Env, signal: "traces" | "metrics"): OtlpSignal | undefined => {
  const upper = signal.toUpperCase()
  if (value(env, `OTEL_${upper}_EXPORTER`) === "none") return undefined
  const ownVariable = `OTEL_EXPORTER_OTLP_${upper}_ENDPOINT`
  const own = value(env, ownVariable)
  const base = value(env, "OTEL_EXPORTER_OTLP_ENDPOINT")
  const url = own !== undefined
    ? checkUrl(own, ownVariable)
    : base !== undefined
    ? `${checkUrl(base, "OTEL_EXPORTER_OTLP_ENDPOINT").replace(/\/+$/, "")}/v1/${signal}`
    : undefined
  if (url === undefined) return undefined
  const headerVariable = `OTEL_EXPORTER_OTLP_${upper}_HEADERS`
  return {
    url,
    headers: {
      ...parseKeyValues(value(env, "OTEL_EXPORTER_OTLP_HEADERS") ?? "", "OTEL_EXPORTER_OTLP_HEADERS"),
      ...parseKeyValues(value(env, headerVariable) ?? "", headerVariable)
    },
    protocol: protocolOf(env, `OTEL_EXPORTER_OTLP_${upper}_PROTOCOL`)
  }
}

const intervalOf = (env: Env): number => {
  const raw = value(env, "OTEL_METRIC_EXPORT_INTERVAL")
  if (raw === undefined) return DEFAULT_METRIC_INTERVAL_MS
  const ms = Number(raw)
  if (!Number.isInteger(ms) || ms <= 0) throw new Invalid(`OTEL_METRIC_EXPORT_INTERVAL: "${raw}" is not a positive number of milliseconds`)
  return ms
}

/** What the environment asks for: nothing, a mistake (named), or where to send spans and metrics. */
export const fromEnv = (env: Env): OtlpSettings => {
  if (value(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true") return { _tag: "Off" }
  try {
    const traces = signalOf(env, "traces")
    const metrics = signalOf(env, "metrics")
    if (!traces && !metrics) return { _tag: "Off" }
    return {
      _tag: "On",
      settings: {
        traces,
        metrics,
        serviceName: value(env, "OTEL_SERVICE_NAME") ?? DEFAULT_SERVICE_NAME,
        resource: parseKeyValues(value(env, "OTEL_RESOURCE_ATTRIBUTES") ?? "", "OTEL_RESOURCE_ATTRIBUTES"),
        metricIntervalMs: intervalOf(env)
      }
    }
  } catch (error) {
    if (error instanceof Invalid) return { _tag: "Invalid", problem: error.problem }
    throw error
  }
}
