// `notify` and `permission.approver` on `agent serve`, for the sessions it runs itself: a real
// server process, the scripted model, webhook receivers on loopback, and `agent run --attach`.
import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { agent, events, project, serve } from "./AgentProcess.js"
import { answerOn, auth, env, httpServer, PASSWORD, recordingServer } from "./ApprovalSupport.js"

const { toolCall } = ScriptedModel

/** A prompt the server runs with no client watching: `prompt_async` on a new session. */
const promptAsync = (url: string, text: string) =>
  Effect.gen(function*() {
    const session = yield* Effect.promise(() =>
      fetch(`${url}/session`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: "{}" }).then((r) => r.json() as Promise<{ id: string }>)
    )
    const started = yield* Effect.promise(() =>
      fetch(`${url}/session/${session.id}/prompt_async`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ parts: [{ type: "text", text }] })
      })
    )
    expect(started.status).toBeLessThan(300)
    return session.id
  })

/** Waits (bounded) until `check` holds. */
const until = (check: () => boolean, what: string) =>
  Effect.gen(function*() {
    for (let n = 0; n < 300; n++) {
      if (check()) return
      yield* Effect.sleep("100 millis")
    }
    throw new Error(`never: ${what}`)
  })

describe("agent serve: notify and the approver for the sessions it runs", () => {
  it.scopedLive("nobody watches: the webhook gets the ask with a link to this server, a person answers through it, the call runs; notify hears the ask and the end", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start()
      const asks: Array<Record<string, any>> = []
      const replies: Array<number> = []
      // Takes the ask (202), then answers it as a person following the link would: the reply route.
      const webhook = yield* httpServer((body, _request, response) => {
        const ask = JSON.parse(body) as Record<string, any>
        asks.push(ask)
        response.writeHead(202).end()
        void fetch(ask.reply_url, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ reply: "once" }) })
          .then((reply) => replies.push(reply.status))
      })
      const notify = yield* recordingServer(200)
      const notified = notify.bodies
      const box = yield* project(
        model.url,
        { permission: { read: "ask", approver: { webhook: webhook.url, timeout: 60 } }, notify: notify.url },
        { "project/secret.txt": "x\n" }
      )
      const served = yield* serve(box, [], { AGENT_SERVER_PASSWORD: PASSWORD })
      model.push([toolCall("read", { filePath: "secret.txt" })], "Read it.")
      const sessionID = yield* promptAsync(served.url, "read the secret")

      yield* until(() => notified.some((note) => note.event === "run.finished"), "notify heard the end")
      expect(asks).toHaveLength(1)
      expect(asks[0]).toMatchObject({ type: "permission.asked", sessionID, permission: "read", timeout: 60, directory: box.instance.directory })
      expect(asks[0]!.link).toMatch(new RegExp(`^${served.url}/permission/per_\\w+$`))
      expect(asks[0]!.reply_url).toBe(`${asks[0]!.link}/reply`)
      expect(replies).toEqual([200])
      expect(notified.map((note) => note.event)).toEqual(["permission.asked", "run.finished"])
      expect(notified[0]).toMatchObject({ session: sessionID, permission: "read", request: asks[0]!.id })
      expect(notified[1]).toMatchObject({ session: sessionID, reason: "completed", message: "The run ended: completed. Read it." })
      // The read ran: the model's second request carries the file's text.
      expect(JSON.stringify(model.requests.at(-1)!.messages)).toContain("secret.txt")
    }), 60_000)

  it.scopedLive("a client answers first: the approver's hold is withdrawn, no fallback after the timeout", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start()
      // Takes the ask and never answers.
      const webhook = yield* recordingServer(202)
      const asks = webhook.bodies
      const box = yield* project(model.url, { permission: { read: "ask", approver: { webhook: webhook.url, timeout: 2 } } }, { "project/secret.txt": "x\n" })
      const served = yield* serve(box, [], { AGENT_SERVER_PASSWORD: PASSWORD })
      model.push([toolCall("read", { filePath: "secret.txt" })], "Read it.")
      yield* promptAsync(served.url, "read the secret")
      const ask = yield* answerOn(served.url, { reply: "always" })
      yield* until(() => asks.length === 1, "the webhook got the ask")
      expect(asks[0]!.id).toBe(ask.id)
      // Past the timeout: nothing fell back.
      yield* Effect.sleep("3 seconds")
      expect(served.stderr()).not.toContain("fallback")
      expect(model.requests).toHaveLength(2)
    }), 60_000)

  it.scopedLive("agent run --attach with no terminal: the server's approver holds the ask; unanswered, its fallback denies (exit 3, the denial says timeout)", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start()
      // Takes the ask with no answer in its response: a person would answer through the link.
      const webhook = yield* recordingServer(200)
      const asks = webhook.bodies
      const notify = yield* recordingServer(200)
      const notified = notify.bodies
      // The webhook's url is a secret from the environment: the server masks it in GET /config.
      const box = yield* project(
        model.url,
        { permission: { read: "ask", approver: { webhook: "{env:APPROVAL_HOOK}", timeout: 2 } }, notify: [{ url: notify.url, events: ["run.finished"] }] },
        { "project/secret.txt": "x\n" }
      )
      const served = yield* serve(box, [], { AGENT_SERVER_PASSWORD: PASSWORD, APPROVAL_HOOK: `${webhook.url}/secret-path-0123456789` })
      model.push([toolCall("read", { filePath: "secret.txt" })], "I could not read it.")
      const result = yield* agent(box, ["run", "--attach", served.url, "--format", "json", "read the secret"], { env })
      expect(result.code, result.stderr).toBe(3)
      expect(result.stderr).toMatch(new RegExp(`permission asked for read .*secret\\.txt.*; waiting up to 2 s for a person on agent serve at ${served.url} and webhook http://127\\.0\\.0\\.1:\\d+/\\.\\.\\.6789`))
      expect(result.stdout + result.stderr).not.toContain("secret-path")
      expect(served.stderr()).toMatch(/no answer from the approver .* within 2 s; fallback: deny/)
      expect(asks).toHaveLength(1)
      expect(asks[0]!.link).toMatch(new RegExp(`^${served.url}/permission/per_\\w+$`))
      const lines = events(result.stdout)
      expect(lines[0]).toMatchObject({
        type: "init",
        permission_mode: { mode: "approver", server: served.url, webhook: `${webhook.url}/...6789`, timeout: 2, fallback: "deny" }
      })
      expect(lines.at(-1)).toMatchObject({ type: "result", exitCode: 3 })
      expect(lines.at(-1)!.permission_denials).toMatchObject([{ tool: "read", decidedBy: { type: "timeout", seconds: 2 } }])
      // The server's notify, not the client's, tells of the run's end.
      yield* until(() => notified.length > 0, "notify heard the end")
      expect(notified).toMatchObject([{ event: "run.finished", reason: "rejected" }])
    }), 60_000)

  it.scopedLive("agent run --attach to a server without an approver: a headless ask is rejected as before", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start()
      const box = yield* project(model.url, { permission: { read: "ask" } }, { "project/secret.txt": "x\n" })
      const served = yield* serve(box, [], { AGENT_SERVER_PASSWORD: PASSWORD })
      model.push([toolCall("read", { filePath: "secret.txt" })])
      const result = yield* agent(box, ["run", "--attach", served.url, "--format", "json", "read the secret"], { env })
      expect(result.code, result.stderr).toBe(3)
      expect(result.stderr).toContain("rejected (no terminal to ask; pass --auto-approve to allow)")
      expect(events(result.stdout)[0]).toMatchObject({ type: "init", permission_mode: { mode: "reject" } })
    }), 60_000)
})
