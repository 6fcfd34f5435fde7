import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as Tool from "../../src/tool/Tool.js"
import { isAlive, makeContext, runTool, startEverythingHttp, startMcp, toolById } from "./helpers.js"

/** A server that answers every request with 401, recording what was asked. */
const unauthorizedServer = Effect.acquireRelease(
  Effect.async<{ url: string; requests: Array<string>; server: http.Server }>((resume) => {
    const requests: Array<string> = []
    const server = http.createServer((request, response) => {
      requests.push(`${request.method} ${request.url} ${request.headers["x-api-key"] ?? "-"}`)
      request.resume()
      response.writeHead(401, { "www-authenticate": 'Bearer realm="test"', "content-type": "application/json" })
      response.end(JSON.stringify({ error: "unauthorized" }))
    })
    server.listen(0, "127.0.0.1", () =>
      resume(Effect.succeed({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, requests, server }))
    )
  }),
  ({ server }) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
)

describe("everything server over HTTP", () => {
  it.scopedLive("Streamable HTTP: tools, text, image and error results, prompts and resources", () =>
    Effect.gen(function*() {
      const everything = yield* startEverythingHttp("streamableHttp")
      const { mcp } = yield* startMcp({
        mcp: { everything: { type: "remote", url: `${everything.base}/mcp`, headers: { "x-test": "1" } } }
      })
      yield* mcp.ready("20 seconds")
      expect((yield* mcp.status()).everything).toEqual({ status: "connected" })
      const { context, asked } = makeContext()

      const echo = yield* toolById(mcp, "everything_echo")
      expect(Tool.jsonSchemaOf(echo)).toMatchObject({ type: "object", required: ["message"], additionalProperties: false })
      expect((yield* runTool(echo, { message: "over http" }, context)).output).toBe("Echo: over http")
      expect(asked).toEqual([{ permission: "everything_echo", patterns: ["*"], always: ["*"] }])

      const image = yield* runTool(yield* toolById(mcp, "everything_get-tiny-image"), {}, context)
      expect(image.attachments?.map((attachment) => attachment.mime)).toEqual(["image/png"])

      const error = yield* Effect.flip(
        runTool(yield* toolById(mcp, "everything_get-resource-reference"), { resourceType: "Blob", resourceId: -1 }, context)
      )
      expect(error.message).toContain("Invalid resourceId: -1")

      const prompt = yield* mcp.getPrompt("everything:args-prompt", { city: "Oslo" })
      expect(prompt.messages).toEqual([{ role: "user", text: "What's weather in Oslo?" }])

      const resources = yield* mcp.resources("everything")
      const document = resources.find((resource) => resource.uri.startsWith("demo://resource/static/document/"))
      expect(document).toBeDefined()
      const [content] = yield* mcp.readResource("everything", document!.uri)
      expect(content!.text!.length).toBeGreaterThan(0)
    }), 60_000)

  it.scopedLive("progress over Streamable HTTP resets the call timeout", () =>
    Effect.gen(function*() {
      const everything = yield* startEverythingHttp("streamableHttp")
      const { mcp } = yield* startMcp({
        mcp: { everything: { type: "remote", url: `${everything.base}/mcp` } },
        experimental: { mcp_timeout: 1_000 }
      })
      yield* mcp.ready("20 seconds")
      const { context, updates } = makeContext()
      const long = yield* toolById(mcp, "everything_trigger-long-running-operation")
      const result = yield* runTool(long, { duration: 2.5, steps: 5 }, context)
      expect(result.output).toBe("Long running operation completed. Duration: 2.5 seconds, Steps: 5.")
      expect(updates).toHaveLength(5)
    }), 60_000)

  it.scopedLive("falls back to SSE when the server does not take Streamable HTTP", () =>
    Effect.gen(function*() {
      const everything = yield* startEverythingHttp("sse")
      const { mcp } = yield* startMcp({ mcp: { legacy: { type: "remote", url: `${everything.base}/sse` } } })
      yield* mcp.ready("20 seconds")
      expect((yield* mcp.status()).legacy).toEqual({ status: "connected" })
      const { context } = makeContext()
      expect((yield* runTool(yield* toolById(mcp, "legacy_echo"), { message: "via sse" }, context)).output).toBe("Echo: via sse")
    }), 60_000)

  it.scopedLive("a 401 means needs_auth, sends the configured headers and stops the fallback", () =>
    Effect.gen(function*() {
      const server = yield* unauthorizedServer
      const { mcp } = yield* startMcp({
        mcp: { locked: { type: "remote", url: server.url, headers: { "x-api-key": "secret" } } }
      })
      const started = Date.now()
      yield* mcp.ready("10 seconds")
      // Settled by the server's answer, not by the 10 s grace.
      expect(Date.now() - started).toBeLessThan(8_000)
      expect((yield* mcp.status()).locked).toEqual({
        status: "needs_auth",
        error: "the server requires authorization (HTTP 401); run `agent mcp auth locked`"
      })
      // One POST to the endpoint (the rest is the SDK looking for OAuth metadata): no SSE GET
      // after the auth error, and no retries.
      yield* Effect.sleep("1500 millis")
      const toEndpoint = server.requests.filter((line) => !line.includes(" /.well-known/"))
      expect(toEndpoint).toEqual(["POST /mcp secret"])
      expect(yield* mcp.tools()).toEqual([])
    }), 30_000)

  it.scopedLive("a remote server that goes away fails its calls clearly and is reported", () =>
    Effect.gen(function*() {
      const everything = yield* startEverythingHttp("streamableHttp")
      const { mcp } = yield* startMcp({ mcp: { everything: { type: "remote", url: `${everything.base}/mcp` } } })
      yield* mcp.ready("20 seconds")
      const echo = yield* toolById(mcp, "everything_echo")
      process.kill(everything.pid, "SIGKILL")
      while (isAlive(everything.pid)) yield* Effect.sleep("10 millis")
      const { context } = makeContext()
      const error = yield* Effect.flip(runTool(echo, { message: "anyone?" }, context))
      expect(error.message).toBe("The MCP server everything could not be reached during the call to echo: fetch failed.")
      // The broken connection is dropped and retried.
      const deadline = Date.now() + 5_000
      let status = (yield* mcp.status()).everything!
      while (status.status === "connected" && Date.now() < deadline) {
        yield* Effect.sleep("25 millis")
        status = (yield* mcp.status()).everything!
      }
      expect(["failed", "connecting"]).toContain(status.status)
      expect(status.error).toMatch(/^the connection closed: the server could not be reached: /)
    }), 60_000)
})
