import { ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { serve } from "./support.js"

const json = (body: unknown) => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

describe("server input handling", () => {
  it.scopedLive("auth: 401 without the password, 200 with Basic or auth_token", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({ model: ScriptedModel.make(["x"]), server: { password: "s3cret" } })
      const anonymous = yield* Effect.promise(() => fetch(`${url}/session`))
      expect(anonymous.status).toBe(401)
      expect(anonymous.headers.get("www-authenticate")).toContain("Basic")
      expect(((yield* Effect.promise(() => anonymous.json())) as any).data.message).toContain("authentication required")
      const wrong = yield* Effect.promise(() =>
        fetch(`${url}/session`, { headers: { authorization: `Basic ${Buffer.from("agent:nope").toString("base64")}` } })
      )
      expect(wrong.status).toBe(401)
      const token = Buffer.from("agent:s3cret").toString("base64")
      const basic = yield* Effect.promise(() => fetch(`${url}/session`, { headers: { authorization: `Basic ${token}` } }))
      expect(basic.status).toBe(200)
      const query = yield* Effect.promise(() => fetch(`${url}/session?auth_token=${encodeURIComponent(token)}`))
      expect(query.status).toBe(200)
    }))

  it.scopedLive("CORS: configured origins are allowed; others, other localhost ports too, are refused without CORS headers", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({ model: ScriptedModel.make(["x"]), server: { cors: ["https://app.example.com"] } })
      const origin = (value: string) =>
        Effect.promise(() =>
          fetch(`${url}/session`, {
            method: "OPTIONS",
            headers: { origin: value, "access-control-request-method": "POST" }
          })
        )
      expect((yield* origin("https://app.example.com")).headers.get("access-control-allow-origin")).toBe("https://app.example.com")
      for (const other of ["http://localhost:3000", "https://evil.example.net"]) {
        const refused = yield* origin(other)
        expect(refused.status).toBe(403)
        expect(refused.headers.get("access-control-allow-origin")).toBeNull()
      }
    }))

  it.scopedLive("200 malformed requests each get a 4xx JSON error naming the problem; the server stays up", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({ model: ScriptedModel.make(["x"]), server: { maxBodyBytes: 64 * 1024 } })
      const session = (yield* Effect.promise(() => fetch(`${url}/session`, json({})).then((r) => r.json()))) as { id: string }
      const id = session.id
      const junk = [
        "{", "[]", "null", "42", "\"text\"", "{\"parts\": 5}", "{\"parts\": [{\"type\": \"video\"}]}",
        "{\"parts\": [{\"type\": \"text\"}]}", "{\"parts\": [{\"type\": \"text\", \"text\": 7}]}",
        "{\"parts\": [{\"type\": \"file\", \"mime\": \"text/plain\", \"url\": \"ftp://x\"}]}",
        "{\"parts\": [{\"type\": \"file\", \"mime\": \"text/plain\", \"url\": \"file:///does/not/exist\"}]}",
        "{\"parts\": []}", "\u0000\u0001\u0002", "{\"model\": \"gpt\", \"parts\": []}"
      ]
      const requests: Array<() => Promise<Response>> = []
      for (let index = 0; requests.length < 200; index++) {
        const body = junk[index % junk.length]!
        switch (index % 10) {
          case 0:
            requests.push(() => fetch(`${url}/session/${id}/message`, { method: "POST", headers: { "content-type": "application/json" }, body }))
            break
          case 1:
            requests.push(() => fetch(`${url}/session/${id}/prompt_async`, { method: "POST", headers: { "content-type": "application/json" }, body }))
            break
          case 2:
            requests.push(() => fetch(`${url}/session/not-an-id-${index}`))
            break
          case 3:
            requests.push(() => fetch(`${url}/session/ses_${"Z".repeat(26)}/message`))
            break
          case 4:
            requests.push(() => fetch(`${url}/no/such/route/${index}`))
            break
          case 5:
            requests.push(() => fetch(`${url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: `{"title": ${index}}` }))
            break
          case 6:
            requests.push(() => fetch(`${url}/session/${id}`, { method: "PATCH", headers: { "content-type": "application/json" }, body: "{\"title\": [1]}" }))
            break
          case 7:
            requests.push(() => fetch(`${url}/session/${id}/message`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ parts: [{ type: "text", text: "x".repeat(100 * 1024) }] }) }))
            break
          case 8:
            requests.push(() => fetch(`${url}/permission/per_${"A".repeat(26)}/reply`, json({ reply: "maybe" })))
            break
          case 9:
            requests.push(() => fetch(`${url}/session?limit=-3`))
            break
        }
      }
      // all at once: the server must cope with a burst of garbage, not just a polite sequence
      const responses = yield* Effect.promise(() => Promise.all(requests.map((request) => request())))
      const bodies = yield* Effect.promise(() => Promise.all(responses.map((response) => response.text())))
      responses.forEach((response, index) => {
        expect(response.status, `request ${index}: ${bodies[index]}`).toBeGreaterThanOrEqual(400)
        expect(response.status, `request ${index}: ${bodies[index]}`).toBeLessThan(500)
        const parsed = (() => {
          try {
            return JSON.parse(bodies[index]!)
          } catch {
            throw new Error(`request ${index} (${response.status}) answered without a JSON body: ${JSON.stringify(bodies[index])}`)
          }
        })()
        expect(typeof (parsed.data?.message ?? parsed.message), `request ${index}: ${bodies[index]}`).toBe("string")
      })
      // the messages name what was wrong
      expect(bodies[4]).toContain("/no/such/route/4")
      expect(bodies[2]).toContain("expected an id of the form ses_")
      expect(bodies[7]).toMatch(/too large|body/i)
      expect(bodies[5]).toContain("title: Expected string, actual 5")
      const health = yield* Effect.promise(() => fetch(`${url}/global/health`))
      expect(health.status).toBe(200)
      // nothing was stored by the malformed prompts
      const messages = (yield* Effect.promise(() => fetch(`${url}/session/${id}/message`).then((r) => r.json()))) as Array<unknown>
      expect(messages).toEqual([])
    }))
})
