import { ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import { serve } from "./support.js"

interface Answer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

/** A request with headers fetch will not let a caller set (Host). */
export const request = (
  url: string,
  options: { readonly method?: string; readonly path?: string; readonly headers?: Record<string, string>; readonly body?: string }
) =>
  Effect.async<Answer>((resume) => {
    const target = new URL(url)
    const req = http.request(
      { host: target.hostname, port: target.port, method: options.method ?? "GET", path: options.path ?? "/session", headers: options.headers ?? {} },
      (res) => {
        let body = ""
        res.setEncoding("utf8")
        res.on("data", (chunk: string) => (body += chunk))
        res.on("end", () => resume(Effect.succeed({ status: res.statusCode!, headers: res.headers, body })))
      }
    )
    req.on("error", (error) => resume(Effect.die(error)))
    req.end(options.body)
  })

const port = (url: string) => new URL(url).port

describe("Host and Origin", () => {
  it.scopedLive("DNS rebinding: a Host that is not the server's is refused with 403", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({ model: ScriptedModel.make(["x"]) })
      const rebound = yield* request(url, { headers: { host: "rebind.evil.example" } })
      expect(rebound.status).toBe(403)
      expect(JSON.parse(rebound.body).data.message).toContain("rebind.evil.example")
      const withPort = yield* request(url, { headers: { host: `rebind.evil.example:${port(url)}` } })
      expect(withPort.status).toBe(403)
      // loopback names with the server's port are its own
      for (const host of [`localhost:${port(url)}`, `127.0.0.1:${port(url)}`, `[::1]:${port(url)}`]) {
        expect((yield* request(url, { headers: { host } })).status, host).toBe(200)
      }
      expect((yield* request(url, { headers: { host: "localhost:1" } })).status).toBe(403)
      // preflights are refused too, and nothing is created by a refused POST
      const preflight = yield* request(url, {
        method: "OPTIONS",
        headers: { host: "rebind.evil.example", origin: "http://rebind.evil.example", "access-control-request-method": "POST" }
      })
      expect(preflight.status).toBe(403)
      const created = yield* request(url, { method: "POST", headers: { host: "rebind.evil.example", "content-type": "application/json" }, body: "{}" })
      expect(created.status).toBe(403)
      expect(JSON.parse((yield* request(url, {})).body)).toEqual([])
    }))

  it.scopedLive("names given with allowedHosts are accepted, with any port or the one given", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({ model: ScriptedModel.make(["x"]), server: { allowedHosts: ["agent.internal", "proxy.example:8443"] } })
      expect((yield* request(url, { headers: { host: "agent.internal" } })).status).toBe(200)
      expect((yield* request(url, { headers: { host: `AGENT.internal:${port(url)}` } })).status).toBe(200)
      expect((yield* request(url, { headers: { host: "proxy.example:8443" } })).status).toBe(200)
      expect((yield* request(url, { headers: { host: "proxy.example:9000" } })).status).toBe(403)
      expect((yield* request(url, { headers: { host: "other.internal" } })).status).toBe(403)
    }))

  it.scopedLive("a browser request from another origin is refused, also a simple POST that needs no preflight", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({ model: ScriptedModel.make(["x"]), server: { cors: ["https://app.example.com"] } })
      const host = `127.0.0.1:${port(url)}`
      // any localhost port is not the server: another local web app must not drive it
      for (const origin of ["http://localhost:3000", "https://evil.example.net", "null"]) {
        const simple = yield* request(url, {
          method: "POST",
          headers: { host, origin, "content-type": "text/plain" },
          body: "{}"
        })
        expect(simple.status, origin).toBe(403)
        expect(simple.headers["access-control-allow-origin"], origin).toBeUndefined()
        expect(JSON.parse(simple.body).data.message, origin).toContain(origin)
        const preflight = yield* request(url, {
          method: "OPTIONS",
          headers: { host, origin, "access-control-request-method": "POST" }
        })
        expect(preflight.status, origin).toBe(403)
        expect(preflight.headers["access-control-allow-origin"], origin).toBeUndefined()
      }
      expect(JSON.parse((yield* request(url, {})).body)).toEqual([])
      // a configured origin gets CORS headers (with credentials); the server's own origin is fine
      const configured = yield* request(url, {
        method: "OPTIONS",
        headers: { host, origin: "https://app.example.com", "access-control-request-method": "POST" }
      })
      expect(configured.headers["access-control-allow-origin"]).toBe("https://app.example.com")
      const fromConfigured = yield* request(url, { headers: { host, origin: "https://app.example.com" } })
      expect(fromConfigured.status).toBe(200)
      expect(fromConfigured.headers["access-control-allow-origin"]).toBe("https://app.example.com")
      const own = yield* request(url, { headers: { host, origin: `http://${host}` } })
      expect(own.status).toBe(200)
    }))
})
