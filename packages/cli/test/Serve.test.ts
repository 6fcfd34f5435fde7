import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import * as net from "node:net"
import { agent, project, serve } from "./AgentProcess.js"

/** GET /session with a given Host header (fetch will not send one of the caller's choosing). */
const withHost = (url: string, host: string) =>
  Effect.async<number>((resume) => {
    const target = new URL(url)
    http.get({ host: target.hostname, port: target.port, path: "/session", headers: { host } }, (res) => {
      res.resume()
      res.on("end", () => resume(Effect.succeed(res.statusCode!)))
    }).on("error", (error) => resume(Effect.die(error)))
  })

const { toolCall } = ScriptedModel

describe("agent serve", () => {
  it.scopedLive("a port that is taken is named, with exit 2", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([])
      const box = yield* project(server.url)
      const taken = net.createServer()
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => void taken.listen(0, "127.0.0.1", () => resume(Effect.void))),
        () => Effect.sync(() => taken.close())
      )
      const port = (taken.address() as net.AddressInfo).port
      const result = yield* agent(box, ["serve", "--port", String(port)])
      expect(result.code).toBe(2)
      expect(result.stderr).toContain(`port ${port} is already in use`)
    }))

  for (const signal of ["SIGTERM", "SIGHUP"] as const) {
    it.scopedLive(`${signal} during a run: the run is aborted, its tool marked interrupted, exit 0`, () =>
      Effect.gen(function*() {
        const model = yield* MockOpenAIServer.start([
          [toolCall("bash", { command: "sleep 30", description: "wait a long time" })],
          "never reached"
        ])
        const box = yield* project(model.url)
        const served = yield* serve(box)
        const session = (yield* Effect.promise(() =>
          fetch(`${served.url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }).then((r) => r.json())
        )) as { id: string }
        const accepted = yield* Effect.promise(() =>
          fetch(`${served.url}/session/${session.id}/prompt_async`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ parts: [{ type: "text", text: "wait" }] })
          })
        )
        expect(accepted.status).toBe(204)
        const running = async () => {
          const messages = (await fetch(`${served.url}/session/${session.id}/message`).then((r) => r.json())) as Array<any>
          return messages.flatMap((message) => message.parts).find((part) => part.type === "tool" && part.state.status === "running")
        }
        const deadline = Date.now() + 20_000
        while (!(yield* Effect.promise(running))) {
          if (Date.now() > deadline) throw new Error(`the tool never started: ${served.stderr()}`)
          yield* Effect.sleep("50 millis")
        }

        served.child.kill(signal)
        const code = yield* Effect.promise(() => served.exited)
        expect(code, served.stderr()).toBe(0)

        // a new server on the same database shows the tool as interrupted, not running forever
        const again = yield* serve(box)
        const messages = (yield* Effect.promise(() =>
          fetch(`${again.url}/session/${session.id}/message`).then((r) => r.json())
        )) as Array<any>
        const tool = messages.flatMap((message) => message.parts).find((part) => part.type === "tool")
        expect(tool.state.status).toBe("error")
        expect(tool.state.error).toMatch(/interrupt|abort/i)
      }), 60_000)
  }

  it.scopedLive("SIGTERM with a client on the event stream: the stream ends and the server exits 0", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start([])
      const box = yield* project(model.url)
      const served = yield* serve(box)
      const controller = new AbortController()
      yield* Effect.addFinalizer(() => Effect.sync(() => controller.abort()))
      const response = yield* Effect.promise(() => fetch(`${served.url}/event`, { signal: controller.signal }))
      const reader = response.body!.getReader()
      const first = new TextDecoder().decode((yield* Effect.promise(() => reader.read())).value)
      expect(first).toContain("server.connected")
      const ended = (async () => {
        for (;;) if ((await reader.read().catch(() => ({ done: true }))).done) return true
      })()

      served.child.kill("SIGTERM")
      const exited = yield* Effect.promise(() => served.exited).pipe(Effect.timeout("20 seconds"), Effect.option)
      expect(exited._tag === "Some" ? exited.value : "still running 20 s after SIGTERM", served.stderr()).toBe(0)
      expect(yield* Effect.promise(() => ended)).toBe(true)
    }), 60_000)

  it.scopedLive("with AGENT_SERVER_PASSWORD every request needs the password", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start(["x"])
      const box = yield* project(model.url)
      const served = yield* serve(box, [], { AGENT_SERVER_PASSWORD: "pw", AGENT_SERVER_USERNAME: "me" })
      expect((yield* Effect.promise(() => fetch(`${served.url}/session`))).status).toBe(401)
      const token = Buffer.from("me:pw").toString("base64")
      const ok = yield* Effect.promise(() => fetch(`${served.url}/session`, { headers: { authorization: `Basic ${token}` } }))
      expect(ok.status).toBe(200)
    }), 60_000)

  it.scopedLive("warns when listening beyond loopback without a password", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start(["x"])
      const box = yield* project(model.url)
      const served = yield* serve(box, ["--hostname", "0.0.0.0"])
      expect(served.stderr()).toContain("without a password")
    }), 60_000)

  it.scopedLive("answers only to its own names and those given with --allowed-host or server.allowed_hosts", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start(["x"])
      const box = yield* project(model.url, { server: { allowed_hosts: ["from-config.internal"] } })
      const served = yield* serve(box, ["--allowed-host", "agent.internal"])
      const port = new URL(served.url).port
      expect(yield* withHost(served.url, `127.0.0.1:${port}`)).toBe(200)
      expect(yield* withHost(served.url, `localhost:${port}`)).toBe(200)
      expect(yield* withHost(served.url, "agent.internal")).toBe(200)
      expect(yield* withHost(served.url, `from-config.internal:${port}`)).toBe(200)
      expect(yield* withHost(served.url, `rebind.evil.example:${port}`)).toBe(403)
    }), 60_000)

  it.scopedLive("the bundled server serves the built web page at /, compressed; --no-web serves the API only", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start([])
      const box = yield* project(model.url)
      const served = yield* serve(box)
      const page = yield* Effect.promise(() => fetch(`${served.url}/`))
      expect(page.status).toBe(200)
      expect(page.headers.get("content-security-policy")).toContain("script-src 'self'")
      expect(yield* Effect.promise(() => page.text())).toContain('<script type="module" src="/assets/app.js">')
      const script = yield* Effect.promise(() => fetch(`${served.url}/assets/app.js`, { headers: { "accept-encoding": "br" } }))
      expect(script.status).toBe(200)
      expect(script.headers.get("content-encoding")).toBe("br")
      const apiOnly = yield* serve(box, ["--no-web"])
      const root = yield* Effect.promise(() => fetch(`${apiOnly.url}/`))
      expect(root.status).toBe(404)
      expect((yield* Effect.promise(() => fetch(`${apiOnly.url}/session`))).status).toBe(200)
    }), 60_000)
})
