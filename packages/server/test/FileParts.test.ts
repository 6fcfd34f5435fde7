import { ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { pathToFileURL } from "node:url"
import { serve } from "./support.js"

const post = (url: string, body: object) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

const SECRET = "TOPSECRET-4711"

const files = {
  "outside/secret.txt": SECRET,
  "project/notes.txt": "project notes",
  "project/.env": `KEY=${SECRET}`,
  "project/secrets/key.txt": SECRET
}

/** Sends one file part (no model reply) and returns the status, the JSON body and what the session stored. */
const attach = (url: string, fileUrl: string, session?: { readonly permission?: ReadonlyArray<object> }) =>
  Effect.promise(async () => {
    const created = (await post(`${url}/session`, session ?? {}).then((r) => r.json())) as { id: string }
    const response = await post(`${url}/session/${created.id}/message`, {
      noReply: true,
      parts: [{ type: "text", text: "look" }, { type: "file", mime: "text/plain", url: fileUrl }]
    })
    const body = (await response.json()) as any
    const stored = await fetch(`${url}/session/${created.id}/message`).then((r) => r.text())
    return { status: response.status, body, stored }
  })

describe("file parts in a prompt", () => {
  it.scopedLive("a file outside the project is refused before it is read: 403 naming the path and the rule", () =>
    Effect.gen(function*() {
      const { url, box } = yield* serve({ model: ScriptedModel.make(["x"]), files })
      const outside = box.path("outside/secret.txt")
      const result = yield* attach(url, pathToFileURL(outside).href)
      expect(result.status).toBe(403)
      expect(result.body.data.message).toContain(outside)
      expect(result.body.data.message).toContain("external_directory")
      expect(result.body.data.path).toBe(outside)
      expect(result.stored).not.toContain(SECRET)
      expect(JSON.parse(result.stored)).toEqual([])
    }))

  it.scopedLive("/proc/self/environ (the server's environment) is refused", () =>
    Effect.gen(function*() {
      if (!fs.existsSync("/proc/self/environ")) return
      const { url } = yield* serve({ model: ScriptedModel.make(["x"]), files })
      const result = yield* attach(url, "file:///proc/self/environ")
      expect(result.status).toBe(403)
      expect(result.stored).not.toContain("PATH=")
    }))

  it.scopedLive("a symlink in the project pointing outside is checked at its real path", () =>
    Effect.gen(function*() {
      const { url, box } = yield* serve({ model: ScriptedModel.make(["x"]), files })
      fs.symlinkSync(box.path("outside/secret.txt"), box.path("project/link.txt"))
      const result = yield* attach(url, pathToFileURL(box.path("project/link.txt")).href)
      expect(result.status).toBe(403)
      expect(result.body.data.message).toContain(box.path("outside/secret.txt"))
      expect(result.stored).not.toContain(SECRET)
    }))

  it.scopedLive("a managed (policy) read deny holds inside the project, and a read the rules only ask for is refused", () =>
    Effect.gen(function*() {
      const { url, box } = yield* serve({
        model: ScriptedModel.make(["x"]),
        files: { ...files, "managed/agent.json": { permission: { read: { "secrets/*": "deny" } } } }
      })
      const denied = yield* attach(url, pathToFileURL(box.path("project/secrets/key.txt")).href)
      expect(denied.status).toBe(403)
      expect(denied.body.data.message).toMatch(/read.*secrets\/key\.txt/)
      expect(denied.body.data.message).toContain("policy")
      expect(denied.stored).not.toContain(SECRET)
      // the built-in rules ask before reading .env files; a request is not a person who can answer
      const asked = yield* attach(url, pathToFileURL(box.path("project/.env")).href)
      expect(asked.status).toBe(403)
      expect(asked.body.data.message).toContain("ask")
      expect(asked.stored).not.toContain(SECRET)
    }))

  it.scopedLive("files the rules allow are read: inside the project, and outside where a rule allows it", () =>
    Effect.gen(function*() {
      const { url, box } = yield* serve({ model: ScriptedModel.make(["x"]), files })
      const inside = yield* attach(url, pathToFileURL(box.path("project/notes.txt")).href)
      expect(inside.status).toBe(200)
      expect(inside.stored).toContain("project notes")
      const allowed = yield* attach(url, pathToFileURL(box.path("outside/secret.txt")).href, {
        permission: [{ permission: "external_directory", pattern: `${box.path("outside")}/*`, action: "allow" }]
      })
      expect(allowed.status).toBe(200)
      expect(allowed.stored).toContain(SECRET)
    }))

  it.scopedLive("a session's allow does not open what the user's config denies", () =>
    Effect.gen(function*() {
      const { url, box } = yield* serve({
        model: ScriptedModel.make(["x"]),
        files: {
          "home/private/secret.txt": SECRET,
          "home/.config/agent/agent.json": { permission: { external_directory: { "~/private/*": "deny" } } }
        }
      })
      const result = yield* attach(url, pathToFileURL(box.path("home/private/secret.txt")).href, {
        permission: [{ permission: "external_directory", pattern: "*", action: "allow" }]
      })
      expect(result.status).toBe(403)
      expect(result.body.data.message).toContain("deny")
      expect(result.stored).not.toContain(SECRET)
    }))

  it.scopedLive("@path in a command's arguments is held to the same rules; the template's own references are the user's", () =>
    Effect.gen(function*() {
      const { url, box } = yield* serve({
        model: ScriptedModel.make(["reviewed", "reviewed"]),
        files: {
          ...files,
          "home/style.md": "STYLE-GUIDE",
          "project/agent.json": { command: { review: { template: "Review $ARGUMENTS following @~/style.md" } } }
        }
      })
      const session = (yield* Effect.promise(() => post(`${url}/session`, {}).then((r) => r.json()))) as { id: string }
      const command = (args: string) =>
        Effect.promise(async () => {
          const response = await post(`${url}/session/${session.id}/command`, { command: "review", arguments: args })
          return { status: response.status, body: (await response.json()) as any }
        })
      const refused = yield* command(`@${box.path("outside/secret.txt")}`)
      expect(refused.status).toBe(403)
      expect(refused.body.data.message).toContain(box.path("outside/secret.txt"))
      const stored = yield* Effect.promise(() => fetch(`${url}/session/${session.id}/message`).then((r) => r.text()))
      expect(stored).not.toContain(SECRET)
      const inside = yield* command("@notes.txt")
      expect(inside.status).toBe(200)
      const after = yield* Effect.promise(() => fetch(`${url}/session/${session.id}/message`).then((r) => r.text()))
      expect(after).toContain("project notes")
      expect(after).toContain("STYLE-GUIDE")
    }))

  it.scopedLive("a shell piece of a command runs a client's arguments only when the bash rules allow it", () =>
    Effect.gen(function*() {
      const { url, box } = yield* serve({
        model: ScriptedModel.make(["done", "done"]),
        files: {
          ...files,
          "project/victim.txt": "keep",
          "project/agent.json": {
            permission: { bash: { "*": "allow", "rm *": "deny", "git push *": "ask" } },
            command: { shout: { template: "Output: !`echo $ARGUMENTS`" } }
          }
        }
      })
      const session = (yield* Effect.promise(() => post(`${url}/session`, {}).then((r) => r.json()))) as { id: string }
      const command = (args: string) =>
        Effect.promise(async () => {
          const response = await post(`${url}/session/${session.id}/command`, { command: "shout", arguments: args })
          return { status: response.status, body: (await response.json()) as any }
        })
      // Before the fix the injected rm ran outside every rule.
      const injected = yield* command("hi; rm victim.txt")
      expect(injected.status).toBe(403)
      expect(injected.body.data.message).toContain('bash "rm victim.txt"')
      expect(fs.readFileSync(box.path("project/victim.txt"), "utf8")).toBe("keep")
      // An ask cannot be answered by a request either.
      const asked = yield* command("hi && git push origin main")
      expect(asked.status).toBe(403)
      const plain = yield* command("hello there")
      expect(plain.status).toBe(200)
      const stored = yield* Effect.promise(() => fetch(`${url}/session/${session.id}/message`).then((r) => r.text()))
      expect(stored).toContain("Output: hello there")
    }))
})
