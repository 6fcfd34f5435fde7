import { describe, expect, it } from "vitest"
import * as OtlpSettings from "../../src/runtime/OtlpSettings.js"

const on = (env: Record<string, string>) => {
  const settings = OtlpSettings.fromEnv(env)
  if (settings._tag !== "On") throw new Error(`expected On, got ${JSON.stringify(settings)}`)
  return settings.settings
}

describe("OtlpSettings.fromEnv", () => {
  it.each([
    ["nothing set", {}],
    ["an empty endpoint", { OTEL_EXPORTER_OTLP_ENDPOINT: " " }],
    ["the SDK disabled", { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "TRUE" }],
    ["both exporters none", { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none", OTEL_METRICS_EXPORTER: "none" }],
    ["only other signals' variables", { OTEL_SERVICE_NAME: "x", OTEL_EXPORTER_OTLP_HEADERS: "a=b" }]
  ])("is off with %s", (_, env) => {
    expect(OtlpSettings.fromEnv(env)).toEqual({ _tag: "Off" })
  })

  it("appends /v1/traces and /v1/metrics to the general endpoint, protobuf by default", () => {
    const settings = on({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" })
    expect(settings.traces).toEqual({ url: "http://collector:4318/v1/traces", headers: {}, protocol: "http/protobuf" })
    expect(settings.metrics).toEqual({ url: "http://collector:4318/v1/metrics", headers: {}, protocol: "http/protobuf" })
    expect(settings.serviceName).toBe("agent")
    expect(settings.metricIntervalMs).toBe(60_000)
  })

  it("uses a signal's own endpoint as given, and leaves the other signal off", () => {
    const settings = on({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://traces.example/custom/path" })
    expect(settings.traces?.url).toBe("https://traces.example/custom/path")
    expect(settings.metrics).toBeUndefined()
  })

  it("turns one signal off with OTEL_<SIGNAL>_EXPORTER=none", () => {
    const settings = on({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" })
    expect(settings.traces).toBeUndefined()
    expect(settings.metrics?.url).toBe("http://c:4318/v1/metrics")
  })

  it("merges the general and the signal's headers (percent-decoded), and reads protocol, service and resource", () => {
    const settings = on({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20abc, x-team = core",
      OTEL_EXPORTER_OTLP_METRICS_HEADERS: "x-team=metrics",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: "http/protobuf",
      OTEL_SERVICE_NAME: "ci-agent",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=prod,host.name=a%2Cb",
      OTEL_METRIC_EXPORT_INTERVAL: "5000"
    })
    expect(settings.traces).toEqual({
      url: "http://c:4318/v1/traces",
      headers: { authorization: "Bearer abc", "x-team": "core" },
      protocol: "http/json"
    })
    expect(settings.metrics).toEqual({
      url: "http://c:4318/v1/metrics",
      headers: { authorization: "Bearer abc", "x-team": "metrics" },
      protocol: "http/protobuf"
    })
    expect(settings.serviceName).toBe("ci-agent")
    expect(settings.resource).toEqual({ "deployment.environment": "prod", "host.name": "a,b" })
    expect(settings.metricIntervalMs).toBe(5000)
  })

  it.each([
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, 'OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" is not an http(s) URL'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "nope" }, 'OTEL_EXPORTER_OTLP_ENDPOINT: "nope" is not a URL'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "grpc://c:4317" }, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, 'OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_HEADERS: "novalue" }, 'OTEL_EXPORTER_OTLP_HEADERS: "novalue" is not key=value'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_RESOURCE_ATTRIBUTES: "a=%zz" }, "OTEL_RESOURCE_ATTRIBUTES: \"%zz\" is not valid percent-encoding"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_METRIC_EXPORT_INTERVAL: "soon" }, 'OTEL_METRIC_EXPORT_INTERVAL: "soon" is not a positive number']
  ])("names the variable that is wrong: %j", (env, problem) => {
    const settings = OtlpSettings.fromEnv(env)
    expect(settings._tag).toBe("Invalid")
    expect(settings._tag === "Invalid" ? settings.problem : "").toContain(problem)
  })
})
