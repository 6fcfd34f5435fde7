import { Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

/** One model call seen by the proxy: when it arrived and when its answer had been sent. */
export interface ModelCall<Tag> {
  readonly tag: Tag
  readonly arrived: number
  answered: number
}

/**
 * In front of the scripted model server (compare.ts, server.ts): forwards every request, and for
 * each one `classify` picks (from its method, path and body) records when it arrived and when its
 * answer had been sent; a recorded call is held `delayOf()` ms first (the model "thinking").
 */
export const modelProxy = <Tag>(
  /** The upstream base URL, or a function giving the current one (read per request). */
  target: string | (() => string),
  classify: (request: { readonly method: string; readonly url: string; readonly body: string }) => Tag | undefined,
  delayOf: () => number = () => 0
) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly calls: Array<ModelCall<Tag>>; readonly server: http.Server }>((resume) => {
      const calls: Array<ModelCall<Tag>> = []
      const server = http.createServer((request, response) => {
        const upstream = new URL(typeof target === "string" ? target : target())
        const arrived = performance.now()
        const body: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => body.push(chunk))
        request.on("end", () => {
          const bytes = Buffer.concat(body)
          const tag = classify({ method: request.method ?? "", url: request.url ?? "", body: bytes.toString() })
          const call: ModelCall<Tag> | undefined = tag === undefined ? undefined : { tag, arrived, answered: 0 }
          if (call) calls.push(call)
          const forward = () => {
            const upstreamRequest = http.request(
              { host: upstream.hostname, port: upstream.port, path: `${upstream.pathname.replace(/\/v1$/, "")}${request.url}`, method: request.method, headers: request.headers },
              (answer) => {
                response.writeHead(answer.statusCode ?? 502, answer.headers)
                answer.pipe(response)
                answer.on("end", () => call && (call.answered = performance.now()))
              }
            )
            upstreamRequest.on("error", () => response.destroy())
            upstreamRequest.end(bytes)
          }
          const delay = call ? delayOf() : 0
          if (delay > 0) setTimeout(forward, delay)
          else forward()
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, calls, server })))
    }),
    ({ server }) => Effect.sync(() => server.close())
  )
