// POST /permission/remote: another process's ask, held as one of the server's own (listed, on
// GET /event, answered by the reply route), over a text/event-stream response.
import { ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { eventually, serve } from "./support.js"

const body = {
  sessionID: "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa",
  permission: "bash",
  patterns: ["git push"],
  always: ["git push *"],
  metadata: { command: "git push" },
  timeout: 30
}

const post = (url: string, payload: unknown, signal?: AbortSignal) =>
  fetch(`${url}/permission/remote`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof payload === "string" ? payload : JSON.stringify(payload),
    ...(signal ? { signal } : {})
  })

/** Reads `data:` frames off an SSE response: `until` resolves with the frames up to the first it takes. */
const sse = (response: Response) => {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ""
  return {
    until: (take: (frame: Record<string, unknown>) => boolean) =>
      Effect.promise(async () => {
        const out: Array<Record<string, unknown>> = []
        for (;;) {
          let end: number
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end)
            buffer = buffer.slice(end + 2)
            const data = block.split("\n").find((line) => line.startsWith("data: "))
            if (data === undefined) continue
            out.push(JSON.parse(data.slice(6)))
            if (take(out.at(-1)!)) return out
          }
          const chunk = await reader.read()
          if (chunk.done) return out
          buffer += chunk.value
        }
      })
  }
}

const listed = (url: string) => Effect.promise(() => fetch(`${url}/permission`).then((r) => r.json() as Promise<Array<{ id: string; metadata: object }>>))

describe("POST /permission/remote", () => {
  it.scopedLive("says asked, is listed and published like an own ask, and ends with the person's reply and message", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({ model: ScriptedModel.make([]) })
      const events = sse(yield* Effect.promise(() => fetch(`${url}/event`)))
      yield* events.until((frame) => frame.type === "server.connected")
      const response = yield* Effect.promise(() => post(url, body))
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toContain("text/event-stream")
      const pending = yield* eventually(async () => {
        const list = (await (await fetch(`${url}/permission`)).json()) as Array<{ id: string; metadata: object }>
        return list[0]
      })
      expect(pending.metadata).toMatchObject({ command: "git push", remote: true })
      const published = yield* events.until((frame) => frame.type === "permission.asked")
      expect(published.at(-1)).toMatchObject({ type: "permission.asked", properties: { id: pending.id, permission: "bash" } })
      const reply = yield* Effect.promise(() =>
        fetch(`${url}/permission/${pending.id}/reply`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ reply: "reject", message: "not today" })
        })
      )
      expect(reply.status).toBe(200)
      expect(yield* sse(response).until((frame) => frame.type !== "asked")).toEqual([
        { type: "asked", id: pending.id },
        { type: "replied", reply: "reject", message: "not today" }
      ])
      expect(yield* listed(url)).toEqual([])
    }), 30_000)

  it.scopedLive("a client that goes away withdraws the ask", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({ model: ScriptedModel.make([]) })
      const controller = new AbortController()
      yield* Effect.promise(() => post(url, body, controller.signal))
      yield* eventually(async () => ((await (await fetch(`${url}/permission`)).json()) as Array<unknown>)[0])
      controller.abort()
      yield* eventually(async () => ((await (await fetch(`${url}/permission`)).json()) as Array<unknown>).length === 0 || undefined)
    }), 30_000)

  it.scopedLive("a bad body is a 400 that names the problem", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({ model: ScriptedModel.make([]) })
      const missing = yield* Effect.promise(() => post(url, { ...body, patterns: undefined }))
      expect(missing.status).toBe(400)
      expect(yield* Effect.promise(() => missing.text())).toMatch(/invalid remote ask: .*patterns/s)
      const notJson = yield* Effect.promise(() => post(url, "{nope"))
      expect(notJson.status).toBe(400)
      expect(yield* Effect.promise(() => notJson.text())).toContain("invalid remote ask")
    }), 30_000)
})
