import { ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as net from "node:net"
import { serve } from "./support.js"

const post = (url: string, body: string) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body })

/**
 * A raw connection that sends `head`, then `body` one byte every `gap` ms; resolves with what the
 * server answered and when the connection closed, or "open" if it still is after `wait` ms.
 */
const trickle = (url: string, head: string, body: string, gap: number, wait: number) =>
  Effect.async<{ readonly answer: string; readonly closedAfter: number | "open" }>((resume) => {
    const target = new URL(url)
    const socket = net.connect(Number(target.port), target.hostname)
    const started = Date.now()
    let answer = ""
    let sent = 0
    let timer: NodeJS.Timeout | undefined
    const finish = (closedAfter: number | "open") => {
      clearInterval(timer)
      clearTimeout(deadline)
      socket.destroy()
      resume(Effect.succeed({ answer, closedAfter }))
    }
    const deadline = setTimeout(() => finish("open"), wait)
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => (answer += chunk))
    socket.on("close", () => finish(Date.now() - started))
    socket.on("error", () => {})
    socket.on("connect", () => {
      socket.write(head)
      timer = setInterval(() => {
        if (sent < body.length && !socket.destroyed) socket.write(body[sent++]!)
      }, gap)
    })
  })

describe("limits on what a client sends", () => {
  it.scopedLive("JSON nested deeper than the limit is refused with 400 before it is parsed", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({ model: ScriptedModel.make(["x"]) })
      const depth = 100_000
      for (const body of ['{"a":'.repeat(depth) + "1" + "}".repeat(depth), "[".repeat(depth) + "]".repeat(depth)]) {
        const response = yield* Effect.promise(() => post(`${url}/session`, body))
        const text = yield* Effect.promise(() => response.text())
        expect(response.status, text).toBe(400)
        expect(JSON.parse(text).data.message).toMatch(/nested deeper than 64/)
      }
      // at the limit is fine, and brackets inside strings (escaped quotes too) are text, not nesting
      const title = `[{"\\"${"[".repeat(500)}`
      const nested = (levels: number) => '{"a":'.repeat(levels) + "1" + "}".repeat(levels)
      const fine = yield* Effect.promise(() => post(`${url}/session`, JSON.stringify({ title, permission: [] })))
      expect(fine.status).toBe(200)
      expect(((yield* Effect.promise(() => fine.json())) as { title: string }).title).toBe(title)
      const deepButAllowed = yield* Effect.promise(() => post(`${url}/session`, `{"title": "t", "x": ${nested(62)}}`))
      expect(deepButAllowed.status).toBe(200)
      const oneTooMany = yield* Effect.promise(() => post(`${url}/session`, `{"title": "t", "x": ${nested(64)}}`))
      expect(oneTooMany.status).toBe(400)
      const health = yield* Effect.promise(() => fetch(`${url}/global/health`))
      expect(health.status).toBe(200)
    }))

  it.scopedLive("a body sent slowly is cut at the request timeout; headers sent slowly at the headers timeout", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({
        model: ScriptedModel.make(["x"]),
        server: { headersTimeoutMs: 600, requestTimeoutMs: 1200 }
      })
      const host = new URL(url).host
      const body = JSON.stringify({ title: "slow".repeat(20) })
      const slowBody = yield* trickle(
        url,
        `POST /session HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
        body,
        100,
        6000
      )
      expect(slowBody.closedAfter).not.toBe("open")
      expect(slowBody.closedAfter).toBeLessThan(4000)
      expect(slowBody.answer).toMatch(/^HTTP\/1\.1 408/)
      const slowHeaders = yield* trickle(url, "", `GET /session HTTP/1.1\r\nHost: ${host}\r\nX-Padding: ${"p".repeat(100)}\r\n\r\n`, 50, 6000)
      expect(slowHeaders.closedAfter).not.toBe("open")
      expect(slowHeaders.closedAfter).toBeLessThan(3000)
    }))

  it.scopedLive("the timeouts cover receiving the request only: a long prompt and an event stream outlive them", () =>
    Effect.gen(function*() {
      const { text, delay } = ScriptedModel
      const { url } = yield* serve({
        model: ScriptedModel.make([[delay(2500), text("late but fine")]]),
        server: { headersTimeoutMs: 400, requestTimeoutMs: 800, events: { heartbeat: "10 seconds" } }
      })
      const events = yield* Effect.promise(() => fetch(`${url}/event`))
      const reader = events.body!.getReader()
      const decoder = new TextDecoder()
      let seen = decoder.decode((yield* Effect.promise(() => reader.read())).value)
      expect(seen).toContain("server.connected")

      const session = (yield* Effect.promise(() => post(`${url}/session`, "{}").then((r) => r.json()))) as { id: string }
      const started = Date.now()
      const reply = yield* Effect.promise(() => post(`${url}/session/${session.id}/message`, JSON.stringify({ parts: [{ type: "text", text: "hi" }] })))
      expect(Date.now() - started).toBeGreaterThan(2000)
      expect(reply.status).toBe(200)
      expect(JSON.stringify(yield* Effect.promise(() => reply.json()))).toContain("late but fine")
      // the stream opened before the prompt is still delivering, seconds after the timeouts
      while (!seen.includes("late but fine")) {
        const chunk = yield* Effect.promise(() => reader.read())
        if (chunk.done) throw new Error(`the event stream ended: ${seen}`)
        seen += decoder.decode(chunk.value)
      }
      yield* Effect.promise(() => reader.cancel())
    }))
})
