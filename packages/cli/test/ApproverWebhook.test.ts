// The webhook approver against a local HTTP server, the approver's usage errors, and what a JSON
// run says of its policy (init, permission_denials), through the built CLI.
import { MockOpenAIServer, ScriptedModel, type TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { agent, events, forFile, project, type Served, serve } from "./AgentProcess.js"
import { auth, env, httpServer, PASSWORD } from "./ApprovalSupport.js"

const { toolCall } = ScriptedModel

interface Shared {
  readonly model: MockOpenAIServer.MockOpenAIServer
  readonly served: Served
  readonly box: TestInstance.Sandbox
}

const shared = forFile<Shared, unknown>(
  Effect.gen(function*() {
    const model = yield* MockOpenAIServer.start()
    const served = yield* serve(yield* project(model.url), [], { AGENT_SERVER_PASSWORD: PASSWORD })
    const box = yield* project(model.url, { permission: { read: "ask" } })
    return { model, served, box }
  })
)

describe("the webhook approver (permission.approver.webhook)", () => {
  it.scopedLive("is POSTed the ask and answers in its response", () =>
    Effect.gen(function*() {
      const { model } = shared()
      const bodies: Array<Record<string, any>> = []
      const hook = yield* httpServer((body, request, response) => {
        bodies.push({ ...JSON.parse(body), token: request.headers["x-token"] })
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ reply: "reject", message: "no reading secrets" }))
      })
      const box = yield* project(
        model.url,
        { permission: { read: "ask", approver: { webhook: hook.url, headers: { "x-token": "t0k" }, timeout: 30 } } },
        { "project/secret.txt": "x\n" }
      )
      model.push([toolCall("read", { filePath: "secret.txt" })], "I will not read it.")
      const result = yield* agent(box, ["run", "--format", "json", "read the secret"])
      expect(result.code, result.stderr).toBe(0)
      expect(bodies).toHaveLength(1)
      expect(bodies[0]).toMatchObject({
        type: "permission.asked",
        permission: "read",
        patterns: ["secret.txt"],
        summary: `read: ${box.instance.directory}/secret.txt`,
        directory: box.instance.directory,
        link: null,
        reply_url: null,
        timeout: 30,
        token: "t0k"
      })
      const lines = events(result.stdout)
      expect(lines[0]).toMatchObject({
        type: "init",
        permission_mode: { mode: "approver", server: null, webhook: hook.url, timeout: 30, fallback: "deny" }
      })
      expect(lines.at(-1)!.permission_denials).toMatchObject([{ decidedBy: { type: "person", via: "webhook", message: "no reading secrets" } }])
    }), 60_000)

  it.scopedLive("with a server too: the webhook gets the link to the held ask, and the answer goes through the server", () =>
    Effect.gen(function*() {
      const { model, served } = shared()
      const bodies: Array<Record<string, any>> = []
      const replies: Array<number> = []
      // Takes the ask (202, no answer), then answers it as a person would: through the server's reply route.
      const hook = yield* httpServer((body, _request, response) => {
        const ask = JSON.parse(body) as Record<string, any>
        bodies.push(ask)
        response.writeHead(202).end()
        void fetch(ask.reply_url, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ reply: "once" }) })
          .then((reply) => replies.push(reply.status))
      })
      const box = yield* project(
        model.url,
        { permission: { read: "ask", approver: { url: served.url, webhook: hook.url } } },
        { "project/secret.txt": "x\n" }
      )
      model.push([toolCall("read", { filePath: "secret.txt" })], "Read it.")
      const result = yield* agent(box, ["run", "read the secret"], { env })
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout).toBe("Read it.\n")
      expect(bodies).toHaveLength(1)
      expect(bodies[0]!.link).toMatch(new RegExp(`^${served.url}/permission/per_\\w+$`))
      expect(bodies[0]!.reply_url).toBe(`${bodies[0]!.link}/reply`)
      expect(replies).toEqual([200])
    }), 60_000)

  it.scopedLive("a webhook that fails, with no server: a clear line, fallback deny", () =>
    Effect.gen(function*() {
      const { model } = shared()
      const hook = yield* httpServer((_body, _request, response) => response.writeHead(500).end("broken"))
      const box = yield* project(model.url, { permission: { read: "ask", approver: { webhook: hook.url } } }, { "project/secret.txt": "x\n" })
      model.push([toolCall("read", { filePath: "secret.txt" })])
      const result = yield* agent(box, ["run", "read the secret"])
      expect(result.code, result.stderr).toBe(3)
      expect(result.stderr).toMatch(/the approver could not be reached: http:\/\/127\.0\.0\.1:\d+: the webhook answered 500: broken; fallback: deny/)
    }), 60_000)
})

describe("the approver flags", () => {
  it.live("bad flags are usage errors (exit 2)", () =>
    Effect.gen(function*() {
      const { box } = shared()
      const noApprover = yield* agent(box, ["run", "--approver-timeout", "5", "hello"])
      expect(noApprover.code).toBe(2)
      expect(noApprover.stderr).toContain("--approver-timeout and --approver-fallback need an approver")
      const notUrl = yield* agent(box, ["run", "--approver", "localhost:4096", "hello"])
      expect(notUrl.code).toBe(2)
      expect(notUrl.stderr).toContain("--approver: expected an http:// or https:// url")
      const attached = yield* agent(box, ["run", "--attach", "http://127.0.0.1:1", "--approver", "http://127.0.0.1:1", "hello"])
      expect(attached.code).toBe(2)
      expect(attached.stderr).toContain("--approver cannot be used with --attach")
    }), 60_000)
})

describe("what a JSON run says of its policy", () => {
  it.scopedLive("init first (session, model, agent, tools, MCP servers, hooks, permission mode); a rule's denial names its file", () =>
    Effect.gen(function*() {
      const { model } = shared()
      const box = yield* project(model.url, { permission: { read: { "*.env": "deny" } } }, { "project/app.env": "KEY=1\n" })
      model.push([toolCall("read", { filePath: "app.env" })], "Could not read it.")
      const result = yield* agent(box, ["run", "--format", "json", "read app.env"])
      expect(result.code, result.stderr).toBe(0)
      const lines = events(result.stdout)
      const init = lines[0]!
      expect(init).toMatchObject({
        type: "init",
        sessionID: lines.at(-1)!.sessionID,
        model: "mock/model-a",
        agent: "build",
        mcp_servers: [],
        hooks: [],
        permission_mode: { mode: "reject" }
      })
      expect(init.tools).toEqual(expect.arrayContaining(["read", "bash", "edit"]))
      expect(lines.filter((line) => line.type === "init")).toHaveLength(1)
      expect(lines.at(-1)!.permission_denials).toEqual([{
        tool: "read",
        input: "app.env",
        sessionID: lines.at(-1)!.sessionID,
        callID: expect.any(String),
        decidedBy: {
          type: "rule",
          layer: "config",
          permission: "read",
          pattern: "*.env",
          file: box.path("project/agent.json"),
          key: "permission.read.*.env"
        }
      }])
    }), 60_000)
})
