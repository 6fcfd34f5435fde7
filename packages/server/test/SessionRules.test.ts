import { ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { serve } from "./support.js"

const { toolCall } = ScriptedModel

const post = (url: string, body: object, method = "POST") =>
  fetch(url, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

/** The project denies `rm`; the scripted model tries `rm victim.txt` once. */
const removal = () => ({
  model: ScriptedModel.make([[toolCall("bash", { command: "rm victim.txt", description: "remove a file" })], "done"]),
  files: {
    "project/agent.json": { permission: { bash: { "rm *": "deny" } } },
    "project/victim.txt": "keep me"
  }
})

const toolError = (messages: Array<any>) =>
  messages.flatMap((message) => message.parts).find((part) => part.type === "tool")?.state

describe("session rules sent over the API", () => {
  it.scopedLive("a session's allow does not loosen the project's deny (create, and a claimed config source)", () =>
    Effect.gen(function*() {
      const { url, box } = yield* serve(removal())
      const session = (yield* Effect.promise(() =>
        post(`${url}/session`, {
          permission: [
            { permission: "bash", pattern: "*", action: "allow" },
            // a client cannot pass its rule off as the user's config
            { permission: "bash", pattern: "rm *", action: "allow", source: { layer: "config", file: "agent.json" } }
          ]
        }).then((r) => r.json())
      )) as { id: string; permission: Array<any> }
      expect(session.permission.every((rule) => rule.source?.layer === "session")).toBe(true)
      const reply = yield* Effect.promise(() => post(`${url}/session/${session.id}/message`, { parts: [{ type: "text", text: "clean up" }] }))
      expect(reply.status).toBe(200)
      expect(fs.existsSync(box.path("project/victim.txt"))).toBe(true)
      const messages = (yield* Effect.promise(() => fetch(`${url}/session/${session.id}/message`).then((r) => r.json()))) as Array<any>
      expect(toolError(messages)).toMatchObject({ status: "error" })
      expect(toolError(messages).error).toContain("Blocked by the user's permission rules: bash is denied")
    }))

  it.scopedLive("nor does one set later with PATCH", () =>
    Effect.gen(function*() {
      const { url, box } = yield* serve(removal())
      const session = (yield* Effect.promise(() => post(`${url}/session`, {}).then((r) => r.json()))) as { id: string }
      const patched = yield* Effect.promise(() =>
        post(`${url}/session/${session.id}`, { permission: [{ permission: "bash", pattern: "rm *", action: "allow" }] }, "PATCH")
      )
      expect(patched.status).toBe(200)
      yield* Effect.promise(() => post(`${url}/session/${session.id}/message`, { parts: [{ type: "text", text: "clean up" }] }))
      expect(fs.existsSync(box.path("project/victim.txt"))).toBe(true)
    }))

  it.scopedLive("a session's deny still tightens what the config allows", () =>
    Effect.gen(function*() {
      const { url, box } = yield* serve({
        model: ScriptedModel.make([[toolCall("bash", { command: "touch made.txt", description: "make a file" })], "done"]),
        files: { "project/agent.json": { permission: { bash: "allow" } } }
      })
      const session = (yield* Effect.promise(() =>
        post(`${url}/session`, { permission: [{ permission: "bash", pattern: "touch *", action: "deny" }] }).then((r) => r.json())
      )) as { id: string }
      yield* Effect.promise(() => post(`${url}/session/${session.id}/message`, { parts: [{ type: "text", text: "make it" }] }))
      expect(fs.existsSync(box.path("project/made.txt"))).toBe(false)
    }))
})
