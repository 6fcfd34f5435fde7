import type * as Http from "node:http"
import type * as Https from "node:https"
import { createRequire } from "node:module"
import type { Readable } from "node:stream"
import type * as Zlib from "node:zlib"

/**
 * The `fetch` the model providers are given: a JSON POST and its streamed answer over node's own
 * HTTP client, with keep-alive connections. Node's built-in fetch (undici) costs about 0.5 ms more
 * CPU per model call (measured with the OpenAI-compatible provider: 2.4 against 1.9 ms per call
 * with a 19-step history), and it keeps the request body alive until the answer has ended, which
 * on a server with many sessions moves tens of KB per step into the old generation.
 *
 * What it does not handle it hands to the platform's fetch: a `Request` object, a body that is not
 * a string, a scheme other than http(s), and redirects (the request is sent again by fetch, which
 * follows them). Failures look like fetch's, so the SDKs classify them as before: a connection that
 * cannot be made rejects with `TypeError("fetch failed")` carrying the cause, a body cut off midway
 * errors the stream with `TypeError("terminated")`, an abort rejects (or errors the stream) with
 * the signal's reason.
 */
export const modelFetch: typeof globalThis.fetch = (input, init) => {
  if (typeof input !== "string" && !(input instanceof URL)) return globalThis.fetch(input, init)
  const body = init?.body
  if (body !== undefined && body !== null && typeof body !== "string") return globalThis.fetch(input, init)
  const url = typeof input === "string" ? new URL(input) : input
  if (url.protocol !== "http:" && url.protocol !== "https:") return globalThis.fetch(input, init)
  return send(url, init ?? {}, body ?? undefined).then((answer) =>
    answer === "redirect" ? globalThis.fetch(input, init) : answer
  )
}

/** Idle time allowed on the connection, waiting for headers or for the next bytes of the body (undici's default). */
const IDLE_TIMEOUT_MS = 300_000

/**
 * Node's HTTP client, loaded at the first model call (7 ms of module loading that a command which
 * calls no model does not pay), with its kept-alive connections.
 */
interface Client {
  readonly http: typeof Http
  readonly https: typeof Https
  readonly zlib: typeof Zlib
  readonly agents: { readonly http: Http.Agent; readonly https: Https.Agent }
}
let loaded: Client | undefined
const client = (): Client => {
  if (loaded) return loaded
  const load = createRequire(import.meta.url)
  const http = load("node:http") as typeof Http
  const https = load("node:https") as typeof Https
  loaded = {
    http,
    https,
    zlib: load("node:zlib") as typeof Zlib,
    agents: { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) }
  }
  return loaded
}

const REDIRECTS = new Set([301, 302, 303, 307, 308])
const NULL_BODY = new Set([101, 204, 205, 304])

const abortReason = (signal: AbortSignal): unknown =>
  signal.reason ?? new DOMException("This operation was aborted", "AbortError")

const send = (url: URL, init: RequestInit, body: string | undefined) =>
  new Promise<Response | "redirect">((resolve, reject) => {
    const signal = init.signal ?? undefined
    if (signal?.aborted) return reject(abortReason(signal))
    const method = (init.method ?? "GET").toUpperCase()
    const headers: Record<string, string> = {}
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value
    })
    // The caller's string, written as it is (no copy), kept for a retry until the answer starts.
    let payload = body
    if (payload !== undefined || method === "POST" || method === "PUT" || method === "PATCH") {
      headers["content-length"] = String(payload === undefined ? 0 : Buffer.byteLength(payload))
    }
    const { http, https, agents, zlib } = client()
    const secure = url.protocol === "https:"
    // Set once the answer's body is being read: later failures end that stream instead.
    let failBody: ((error: unknown) => void) | undefined
    let request: Http.ClientRequest
    const onAbort = () => {
      const reason = abortReason(signal!)
      request.destroy()
      if (failBody) failBody(reason)
      else reject(reason)
    }
    const done = () => signal?.removeEventListener("abort", onAbort)
    signal?.addEventListener("abort", onAbort, { once: true })

    const attempt = (retried: boolean) => {
      const current = (secure ? https : http).request(url, { method, headers, agent: secure ? agents.https : agents.http })
      request = current
      current.setTimeout(IDLE_TIMEOUT_MS, () =>
        current.destroy(new Error(`no data from ${url.host} for ${IDLE_TIMEOUT_MS / 1000} s`)))
      // `on`, not `once`: an error event without a listener would end the process.
      current.on("error", (error: NodeJS.ErrnoException) => {
        if (current !== request || signal?.aborted) return // retried, or settled by onAbort
        if (failBody) return failBody(Object.assign(new TypeError("terminated"), { cause: error }))
        // A kept-alive connection the server closed as it was reused: nothing reached the server,
        // so the request goes once more, on a new connection (what node's docs advise).
        if (!retried && current.reusedSocket && (error.code === "ECONNRESET" || error.code === "EPIPE")) {
          return attempt(true)
        }
        done()
        reject(Object.assign(new TypeError("fetch failed"), { cause: error }))
      })
      current.once("response", (response) => answer(response))
      current.end(payload)
    }

    const answer = (response: Http.IncomingMessage) => {
      payload = undefined
      const status = response.statusCode ?? 0
      if (REDIRECTS.has(status) && response.headers.location) {
        done()
        response.on("error", () => undefined).resume() // drained and dropped: fetch sends it again
        return resolve("redirect")
      }
      const answerHeaders = new Headers()
      for (let index = 0; index + 1 < response.rawHeaders.length; index += 2) {
        answerHeaders.append(response.rawHeaders[index]!, response.rawHeaders[index + 1]!)
      }
      if (NULL_BODY.has(status) || method === "HEAD") {
        done()
        response.on("error", () => undefined).resume() // no body to read
        return resolve(new Response(null, { status, statusText: response.statusMessage ?? "", headers: answerHeaders }))
      }
      const source = decoded(zlib, response)
      let finished = false
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          failBody = (error) => {
            if (finished) return
            finished = true
            done()
            controller.error(error)
            if (source !== response) source.destroy()
          }
          source.on("data", (chunk: Buffer) => {
            controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
            if ((controller.desiredSize ?? 1) <= 0) source.pause()
          })
          source.once("end", () => {
            if (finished) return
            finished = true
            done()
            controller.close()
          })
          const onError = (error: Error) => failBody!(Object.assign(new TypeError("terminated"), { cause: error }))
          source.on("error", onError)
          if (source !== response) response.on("error", onError)
          // The connection closed before the body ended (no error event on some paths).
          response.once("close", () => {
            if (!response.complete && !signal?.aborted) failBody!(Object.assign(new TypeError("terminated"), { cause: new Error("the connection closed before the answer ended") }))
          })
        },
        pull() {
          source.resume()
        },
        cancel() {
          finished = true
          done()
          request.destroy()
        }
      }, { highWaterMark: 16 })
      resolve(new Response(stream, { status, statusText: response.statusMessage ?? "", headers: answerHeaders }))
    }
    attempt(false)
  })

/** The body as sent, or decompressed when the server compressed it unasked. */
const decoded = (zlib: typeof Zlib, response: Http.IncomingMessage): Readable => {
  switch (response.headers["content-encoding"]?.trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return response.pipe(zlib.createGunzip({ flush: zlib.constants.Z_SYNC_FLUSH }))
    case "deflate":
      return response.pipe(zlib.createInflate({ flush: zlib.constants.Z_SYNC_FLUSH }))
    case "br":
      return response.pipe(zlib.createBrotliDecompress({ flush: zlib.constants.BROTLI_OPERATION_FLUSH }))
    default:
      return response
  }
}
