import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { APICallError } from "@ai-sdk/provider"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as zlib from "node:zlib"
import { modelFetch } from "../src/llm/ModelTransport.js"

/** A real HTTP server on a loopback port for one test, with the connections it accepted. */
const serve = (handler: http.RequestListener) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly connections: Array<import("node:net").Socket>; readonly server: http.Server }>((resume) => {
      const connections: Array<import("node:net").Socket> = []
      const server = http.createServer(handler)
      server.on("connection", (socket) => connections.push(socket))
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections, server })))
    }),
    ({ server }) => Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
  )

const readAll = (request: http.IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = ""
    request.on("data", (chunk: Buffer) => (body += chunk.toString()))
    request.on("end", () => resolve(body))
  })

const sse = (...events: Array<unknown>) => events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join("") + "data: [DONE]\n\n"
const chunk = (content: string, finish: string | null = null) => ({
  id: "c1",
  object: "chat.completion.chunk",
  created: 1,
  model: "m",
  choices: [{ index: 0, delta: { content }, finish_reason: finish }]
})

const post = (url: string, body: unknown, signal?: AbortSignal) =>
  modelFetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer k" },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {})
  })

describe("modelFetch: the providers' HTTP transport", () => {
  it.scopedLive("sends the body and headers, and returns status, headers and the streamed body", () =>
    Effect.gen(function*() {
      const seen: Array<{ method: string | undefined; auth: string | undefined; type: string | undefined; body: string }> = []
      const { url } = yield* serve(async (request, response) => {
        seen.push({ method: request.method, auth: request.headers.authorization, type: request.headers["content-type"], body: await readAll(request) })
        response.writeHead(429, { "retry-after": "7", "content-type": "application/json" })
        response.end(JSON.stringify({ error: { message: "slow down" } }))
      })
      const answer = yield* Effect.promise(() => post(`${url}/v1/chat`, { hello: "wörld" }))
      expect(answer.status).toBe(429)
      expect(answer.ok).toBe(false)
      expect(answer.headers.get("retry-after")).toBe("7")
      expect(yield* Effect.promise(() => answer.json())).toEqual({ error: { message: "slow down" } })
      expect(seen).toEqual([{ method: "POST", auth: "Bearer k", type: "application/json", body: '{"hello":"wörld"}' }])
    }))

  it.scopedLive("keeps one connection alive across calls, and replaces one the server dropped while it was idle", () =>
    Effect.gen(function*() {
      let served = 0
      const { url, connections } = yield* serve(async (request, response) => {
        await readAll(request)
        served++
        response.end("ok")
      })
      for (let call = 0; call < 3; call++) {
        expect(yield* Effect.promise(() => post(url, { call }).then((answer) => answer.text()))).toBe("ok")
      }
      expect(connections).toHaveLength(1)
      // The server closes the idle connection.
      connections[0]!.destroy()
      expect(yield* Effect.promise(() => post(url, { call: 4 }).then((answer) => answer.text()))).toBe("ok")
      expect(served).toBe(4)
      expect(connections).toHaveLength(2)
    }))

  it.scopedLive("a request that dies on a reused connection before any answer is sent once more", () =>
    Effect.gen(function*() {
      const perConnection = new Map<import("node:net").Socket, number>()
      const bodies: Array<string> = []
      const { url } = yield* serve(async (request, response) => {
        const body = await readAll(request)
        const count = (perConnection.get(request.socket) ?? 0) + 1
        perConnection.set(request.socket, count)
        // Every second request on a connection is dropped unanswered (a server that had just timed it out).
        if (count === 2) return request.socket.destroy()
        bodies.push(body)
        response.end("ok")
      })
      expect(yield* Effect.promise(() => post(url, { n: 1 }).then((answer) => answer.text()))).toBe("ok")
      expect(yield* Effect.promise(() => post(url, { n: 2 }).then((answer) => answer.text()))).toBe("ok")
      expect(bodies).toEqual(['{"n":1}', '{"n":2}'])
      expect(perConnection.size).toBe(2)
      // A fresh connection that dies is not retried: that is the server's answer.
      const { url: dying } = yield* serve((request) => request.socket.destroy())
      const failure = yield* Effect.promise(() => post(dying, {}).then(() => undefined, (error: unknown) => error))
      expect(failure).toBeInstanceOf(TypeError)
      expect((failure as Error).message).toBe("fetch failed")
      expect(((failure as Error).cause as NodeJS.ErrnoException).code).toBe("ECONNRESET")
    }))

  it.scopedLive("a refused connection fails as fetch does, which the provider reports as a retryable connection error", () =>
    Effect.gen(function*() {
      const { url, server } = yield* serve(() => undefined)
      yield* Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
      })
      const failure = yield* Effect.promise(() => post(url, {}).then(() => undefined, (error: unknown) => error))
      expect((failure as Error).message).toBe("fetch failed")
      expect(((failure as Error).cause as NodeJS.ErrnoException).code).toBe("ECONNREFUSED")
      const model = createOpenAICompatible({ name: "local", baseURL: `${url}/v1`, fetch: modelFetch }).chatModel("m")
      const error = yield* Effect.promise(() =>
        model.doStream({ prompt: [{ role: "user", content: [{ type: "text", text: "hi" }] }] }).then(() => undefined, (cause: unknown) => cause))
      expect(APICallError.isInstance(error)).toBe(true)
      expect((error as APICallError).message).toMatch(/^Cannot connect to API: connect ECONNREFUSED/)
      expect((error as APICallError).isRetryable).toBe(true)
    }))

  it.scopedLive("streams an answer through the provider; a gzip-compressed one is decompressed", () =>
    Effect.gen(function*() {
      const { url } = yield* serve(async (request, response) => {
        await readAll(request)
        const body = sse(chunk("Hel"), chunk("lo"), chunk("", "stop"))
        if (request.url?.includes("gzip")) {
          response.writeHead(200, { "content-type": "text/event-stream", "content-encoding": "gzip" })
          response.end(zlib.gzipSync(body))
        } else {
          response.writeHead(200, { "content-type": "text/event-stream" })
          response.end(body)
        }
      })
      for (const path of ["/plain/v1", "/gzip/v1"]) {
        const model = createOpenAICompatible({ name: "local", baseURL: `${url}${path}`, fetch: modelFetch }).chatModel("m")
        const result = yield* Effect.promise(() => model.doStream({ prompt: [{ role: "user", content: [{ type: "text", text: "hi" }] }] }))
        const parts = yield* Effect.promise(async () => {
          const seen: Array<{ type: string; delta?: string }> = []
          const reader = result.stream.getReader()
          for (let next = await reader.read(); !next.done; next = await reader.read()) seen.push(next.value as never)
          return seen
        })
        expect(parts.flatMap((part) => (part.type === "text-delta" ? [part.delta] : [])).join("")).toBe("Hello")
        expect(parts.some((part) => part.type === "finish")).toBe(true)
      }
    }))

  it.scopedLive("follows a redirect", () =>
    Effect.gen(function*() {
      const { url } = yield* serve(async (request, response) => {
        const body = await readAll(request)
        if (request.url === "/old") {
          response.writeHead(307, { location: "/new" })
          return response.end()
        }
        response.end(`${request.url} ${body}`)
      })
      expect(yield* Effect.promise(() => post(`${url}/old`, { a: 1 }).then((answer) => answer.text()))).toBe('/new {"a":1}')
    }))

  it.scopedLive("an abort mid-answer fails the body with the abort's reason and closes the connection", () =>
    Effect.gen(function*() {
      let closed = false
      const { url } = yield* serve(async (request, response) => {
        await readAll(request)
        response.writeHead(200, { "content-type": "text/event-stream" })
        response.write("data: first\n\n")
        response.on("close", () => (closed = true))
      })
      const controller = new AbortController()
      const answer = yield* Effect.promise(() => post(url, {}, controller.signal))
      const reader = answer.body!.getReader()
      const first = yield* Effect.promise(() => reader.read())
      expect(new TextDecoder().decode(first.value)).toBe("data: first\n\n")
      const pending = reader.read().then(() => "read", (error: unknown) => error)
      controller.abort(new Error("user pressed stop"))
      expect(((yield* Effect.promise(() => pending)) as Error).message).toBe("user pressed stop")
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
      expect(closed).toBe(true)
      // Aborted before it starts: rejected at once with the reason.
      const early = new AbortController()
      early.abort(new Error("never mind"))
      const refused = yield* Effect.promise(() => post(url, {}, early.signal).then(() => undefined, (error: unknown) => error))
      expect((refused as Error).message).toBe("never mind")
    }))

  it.scopedLive("a body cut off midway errors the stream as fetch does (terminated), compressed or not", () =>
    Effect.gen(function*() {
      const { url } = yield* serve(async (request, response) => {
        await readAll(request)
        const gzip = request.url === "/gzip"
        response.writeHead(200, { "content-type": "text/event-stream", ...(gzip ? { "content-encoding": "gzip" } : {}) })
        // Half of a compressed body, or one plain event, then the connection drops.
        const first = gzip ? zlib.gzipSync("data: first\n\n".repeat(200)).subarray(0, 40) : "data: first\n\n"
        response.write(first, () => setTimeout(() => request.socket.destroy(), 20))
      })
      for (const path of ["/plain", "/gzip"]) {
        const answer = yield* Effect.promise(() => post(`${url}${path}`, {}))
        const outcome = yield* Effect.promise(() => answer.text().then((text) => text, (error: unknown) => error))
        expect(outcome).toBeInstanceOf(TypeError)
        expect((outcome as Error).message).toBe("terminated")
      }
    }))
})
