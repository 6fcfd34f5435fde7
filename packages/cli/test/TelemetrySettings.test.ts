import { MockOpenAIServer, OtlpReceiver } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { agent, project } from "./AgentProcess.js"

// The export's settings and failures, as a user of `agent run` meets them (the span tree itself: Telemetry.test.ts).
describe("OpenTelemetry export settings", () => {
  it.scopedLive("an OTLP endpoint that is not a URL turns the export off with a warning naming the variable; the run goes on", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start(["Hello."])
      const box = yield* project(model.url)
      const result = yield* agent(box, ["run", "hi"], { env: { OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" } })
      expect(result.code, result.stderr).toBe(0)
      expect(result.stderr).toMatch(/level=WARN .*OpenTelemetry export is off: OTEL_EXPORTER_OTLP_ENDPOINT: \\"not a url\\" is not a URL/)
    }))

  it.scopedLive("a collector that is not there is named in one warning; the run still succeeds and exits", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start(["Hello."])
      const box = yield* project(model.url)
      // A port that was just free: nothing listens there.
      const closed = yield* OtlpReceiver.start.pipe(Effect.map((receiver) => receiver.url), Effect.scoped)
      const result = yield* agent(box, ["run", "hi"], { env: { OTEL_EXPORTER_OTLP_ENDPOINT: closed, OTEL_METRICS_EXPORTER: "none", OTEL_EXPORTER_OTLP_TIMEOUT: "1000" } })
      expect(result.code, result.stderr).toBe(0)
      const warnings = result.stderr.split("\n").filter((line) => line.includes("OpenTelemetry: exporting spans"))
      expect(warnings, result.stderr).toHaveLength(1)
      expect(warnings[0]).toContain(`${closed}/v1/traces failed`)
    }))

  it.scopedLive("the protobuf encoding (the default) is posted as application/x-protobuf", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start(["Hello."])
      const box = yield* project(model.url)
      const receiver = yield* OtlpReceiver.start
      const result = yield* agent(box, ["run", "hi"], { env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } })
      expect(result.code, result.stderr).toBe(0)
      const traces = receiver.requests.filter((request) => request.path === "/v1/traces")
      expect(traces.length).toBeGreaterThan(0)
      expect(traces[0]!.contentType).toBe("application/x-protobuf")
      // The span name travels as a protobuf string.
      expect(traces.some((request) => request.body.includes(Buffer.from("invoke_agent build")))).toBe(true)
      expect(receiver.requests.some((request) => request.path === "/v1/metrics")).toBe(true)
    }))
})
