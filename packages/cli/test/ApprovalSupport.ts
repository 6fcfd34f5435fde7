// What the approval tests share: a real HTTP server of the test's own, and an approver's answers.
import { TestNet } from "@agent/testing"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import * as net from "node:net"

export const PASSWORD = "hunter2"
export const auth = { authorization: `Basic ${Buffer.from(`agent:${PASSWORD}`).toString("base64")}` }
export const env = { AGENT_SERVER_PASSWORD: PASSWORD }

export interface Listed {
  readonly id: string
  readonly permission: string
  readonly patterns: ReadonlyArray<string>
  readonly metadata: Record<string, unknown>
}

export const pendingOn = (url: string) =>
  Effect.promise(() => fetch(`${url}/permission`, { headers: auth }).then((response) => response.json() as Promise<Array<Listed>>))

/** Waits for the server to list an ask, then answers it through the existing reply route. */
export const answerOn = (url: string, body: { reply: string; message?: string }) =>
  Effect.gen(function*() {
    for (;;) {
      const listed = yield* pendingOn(url)
      if (listed.length > 0) {
        const ask = listed[0]!
        const response = yield* Effect.promise(() =>
          fetch(`${url}/permission/${ask.id}/reply`, {
            method: "POST",
            headers: { ...auth, "content-type": "application/json" },
            body: JSON.stringify(body)
          })
        )
        expect(response.status).toBe(200)
        return ask
      }
      yield* Effect.sleep("100 millis")
    }
  })

/** A port nothing listens on. */
export const closedPort = TestNet.freePort

/** A local HTTP server: `handle` answers each request (with its body read); closed with the scope. */
export const httpServer = (handle: (body: string, request: http.IncomingMessage, response: http.ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly server: http.Server }>((resume) => {
      const server = http.createServer((request, response) => {
        let body = ""
        request.on("data", (chunk: Buffer) => (body += chunk.toString()))
        request.on("end", () => handle(body, request, response))
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as net.AddressInfo
        resume(Effect.succeed({ url: `http://127.0.0.1:${port}`, server }))
      })
    }),
    ({ server }) => Effect.sync(() => server.closeAllConnections()).pipe(Effect.zipRight(Effect.async<void>((resume) => {
      server.close(() => resume(Effect.void))
    })))
  )


/** A local HTTP server that keeps each JSON body posted to it and answers `status`, with `answer` as JSON if given. */
export const recordingServer = (status: number, answer?: object) =>
  Effect.gen(function*() {
    const bodies: Array<Record<string, any>> = []
    const { url } = yield* httpServer((body, _request, response) => {
      bodies.push(JSON.parse(body))
      if (answer === undefined) response.writeHead(status).end()
      else response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(answer))
    })
    return { url, bodies }
  })
