import { ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { serve } from "./support.js"

const { finish, text, toolCall } = ScriptedModel

/** A local HTTP server answering one markdown file, closed with the test's scope. */
const rulesServer = (body: string) =>
  Effect.acquireRelease(
    Effect.async<{ server: http.Server; url: string }>((resume) => {
      const server = http.createServer((_request, response) => response.writeHead(200).end(body))
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({ server, url: `http://127.0.0.1:${port}/team.md` }))
      })
    }),
    ({ server }) => Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
  )

const getJson = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    return { status: response.status, body: (await response.json()) as any }
  })

const postJson = (url: string, body: unknown = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
    return { status: response.status, body: (await response.json()) as any }
  })

describe("what the agent knows, over HTTP", () => {
  it.scopedLive("GET /instruction lists the system prompt's instruction files and URLs, and what a session's reads attached", () =>
    Effect.gen(function*() {
      const rules = yield* rulesServer("Team rules.")
      const model = ScriptedModel.make([[toolCall("read", { filePath: "packages/web/src/app.ts" })], "read it"])
      const { box, client, url } = yield* serve({
        model,
        files: {
          "project/AGENTS.md": "Root rules.",
          "project/docs/style.md": "Style.",
          "project/packages/web/AGENTS.md": "Web rules.",
          "project/packages/web/src/app.ts": "export {}\n",
          "project/agent.json": { instructions: ["docs/*.md", rules.url] }
        }
      })
      const listed = yield* getJson(`${url}/instruction`)
      expect(listed.status).toBe(200)
      expect(listed.body).toEqual({
        system: [
          { source: box.path("project/AGENTS.md"), kind: "file" },
          { source: box.path("project/docs/style.md"), kind: "file" },
          { source: rules.url, kind: "url" }
        ],
        attached: []
      })
      const session = (yield* Effect.promise(() => client.session.create({ body: {} }))).data!
      yield* Effect.promise(() => client.session.prompt({ path: { id: session.id }, body: { parts: [{ type: "text", text: "look" }] } }))
      const after = yield* getJson(`${url}/instruction?sessionID=${session.id}`)
      expect(after.body.attached).toEqual([box.path("project/packages/web/AGENTS.md")])
      const bad = yield* getJson(`${url}/instruction?sessionID=nope`)
      expect(bad.status).toBe(400)
    }))

  it.scopedLive("GET /skill lists the skills found", () =>
    Effect.gen(function*() {
      const { box, url } = yield* serve({
        model: ScriptedModel.make([]),
        files: {
          "project/.agents/skills/deploy/SKILL.md": "---\nname: deploy\ndescription: Ships the app.\n---\nRun the deploy script.\n",
          "home/.claude/skills/review/SKILL.md": "---\nname: review\ndescription: Reviews a change.\n---\nRead the diff.\n"
        }
      })
      const listed = yield* getJson(`${url}/skill`)
      expect(listed.body).toEqual([
        { name: "deploy", description: "Ships the app.", location: box.path("project/.agents/skills/deploy/SKILL.md") },
        { name: "review", description: "Reviews a change.", location: box.path("home/.claude/skills/review/SKILL.md") }
      ])
    }))
})

describe("summaries over HTTP", () => {
  it.scopedLive("POST /session/:id/summary asks the summary agent about the session and the files it changed", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        [toolCall("write", { filePath: "notes.txt", content: "one\ntwo\n" })],
        "Wrote the notes.",
        "You asked for notes; notes.txt now has two lines. Nothing is open."
      ])
      const { client, url } = yield* serve({ model })
      const session = (yield* Effect.promise(() => client.session.create({ body: {} }))).data!
      yield* Effect.promise(() => client.session.prompt({ path: { id: session.id }, body: { parts: [{ type: "text", text: "write notes" }] } }))
      const summary = yield* postJson(`${url}/session/${session.id}/summary`)
      expect(summary).toEqual({ status: 200, body: { text: "You asked for notes; notes.txt now has two lines. Nothing is open." } })
      const request = model.calls[2]!
      expect(JSON.stringify(request.prompt[0])).toMatch(/summarize what an agent did/i)
      expect(ScriptedModel.lastUserText(request)).toContain("- notes.txt (added, +2 -0)")
      expect(request.tools ?? []).toEqual([])

      const missing = yield* postJson(`${url}/session/ses_${"Z".repeat(26)}/summary`)
      expect(missing.status).toBe(404)
      expect(missing.body.data.message).toMatch(/not found/)
    }))

  it.scopedLive("a provider failure is a 502 that names it; an empty session gets an empty summary without a model call", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        "hello",
        ScriptedModel.fail({ statusCode: 400, message: "model refused the request" })
      ])
      const { client, url } = yield* serve({ model, files: { "project/agent.json": { retry: { attempts: 0 } } } })
      const empty = (yield* Effect.promise(() => client.session.create({ body: {} }))).data!
      expect(yield* postJson(`${url}/session/${empty.id}/summary`)).toEqual({ status: 200, body: { text: "" } })
      expect(model.calls).toHaveLength(0)
      const session = (yield* Effect.promise(() => client.session.create({ body: {} }))).data!
      yield* Effect.promise(() => client.session.prompt({ path: { id: session.id }, body: { parts: [{ type: "text", text: "hi" }] } }))
      const failed = yield* postJson(`${url}/session/${session.id}/summary`)
      expect(failed.status).toBe(502)
      expect(failed.body.data.message).toMatch(/the summary model failed: .*model refused the request/)
    }))

  it.scopedLive("POST /session/:id/summarize compacts the session by hand: the next request starts from the summary", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        "first answer",
        [text("SUMMARY: the user said hello"), finish("stop", { input: 100, output: 20 })],
        "second answer"
      ])
      const { client, url } = yield* serve({ model })
      const session = (yield* Effect.promise(() => client.session.create({ body: {} }))).data!
      yield* Effect.promise(() => client.session.prompt({ path: { id: session.id }, body: { parts: [{ type: "text", text: "hello there" }] } }))
      expect(yield* postJson(`${url}/session/${session.id}/summarize`, { providerID: "test", modelID: "scripted" })).toEqual({ status: 200, body: true })
      yield* Effect.promise(() => client.session.prompt({ path: { id: session.id }, body: { parts: [{ type: "text", text: "and now?" }] } }))
      const next = JSON.stringify(model.calls[2]!.prompt)
      expect(next).toContain("SUMMARY: the user said hello")
      expect(next).toContain("and now?")
      expect(next).not.toContain("first answer")
    }))
})
