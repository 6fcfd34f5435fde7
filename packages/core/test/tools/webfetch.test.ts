import { type ToolPart } from "@agent/domain"
import { ScriptedModel, TestRuntime, TestToolContext } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import { ToolRegistry } from "../../src/tool/ToolRegistry.js"
import * as Tool from "../../src/tool/Tool.js"
import * as WebFetch from "../../src/tools/WebFetch.js"

const makeContext = () => TestToolContext.make()

const PAGE = `<!doctype html>
<html><head><title>Docs page</title><style>body { color: red }</style>
<script>window.alert("tracking")</script></head>
<body><h1>Getting started</h1>
<p>Hello <b>world</b> &amp; friends.</p>
<ul><li>first item</li><li>second item</li></ul>
<noscript>enable javascript</noscript>
<p>See <a href="https://example.com/next">the next page</a>.</p>
<pre><code>npm install thing</code></pre>
</body></html>`

/** 1x1 transparent PNG. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
  "base64"
)

const SIX_MB = 6 * 1024 * 1024

/** A real HTTP server on 127.0.0.1 serving the cases under test; records the user agents it saw. */
const server = Effect.acquireRelease(
  Effect.async<{ base: string; agents: Array<string>; server: http.Server }>((resume) => {
    const agents: Array<string> = []
    const server = http.createServer((request, response) => {
      agents.push(request.headers["user-agent"] ?? "")
      switch (request.url) {
        case "/page.html":
          response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(PAGE)
          return
        case "/plain.txt":
          response.writeHead(200, { "content-type": "text/plain" }).end("just <b>text</b>\n")
          return
        case "/image.png":
          response.writeHead(200, { "content-type": "image/png" }).end(PNG)
          return
        case "/binary":
          response.writeHead(200, { "content-type": "application/octet-stream" }).end(Buffer.from([1, 0, 2, 0]))
          return
        case "/missing":
          response.writeHead(404, { "content-type": "text/plain" }).end("nope")
          return
        case "/challenge":
          if (request.headers["user-agent"] === WebFetch.PLAIN_USER_AGENT) {
            response.writeHead(200, { "content-type": "text/plain" }).end("you may pass")
          } else {
            response.writeHead(403, { "content-type": "text/html", "cf-mitigated": "challenge" }).end("<p>checking your browser</p>")
          }
          return
        case "/forbidden":
          response.writeHead(403, { "content-type": "text/plain" }).end("no")
          return
        case "/big-declared":
          response.writeHead(200, { "content-type": "text/plain", "content-length": String(SIX_MB) })
          response.end(Buffer.alloc(SIX_MB, 97))
          return
        case "/big-stream": {
          response.writeHead(200, { "content-type": "text/plain" })
          const chunk = Buffer.alloc(256 * 1024, 98)
          let sent = 0
          const pump = () => {
            while (sent < SIX_MB) {
              sent += chunk.length
              if (!response.write(chunk)) return void response.once("drain", pump)
            }
            response.end()
          }
          pump()
          return
        }
        case "/redirect":
          response.writeHead(302, { location: "/plain.txt" }).end()
          return
        case "/slow":
          // never answers
          return
        default:
          response.writeHead(500).end()
      }
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(Effect.succeed({ base: `http://127.0.0.1:${port}`, agents, server }))
    })
  }),
  ({ server }) =>
    Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
)

describe("webfetch tool", () => {
  it.scopedLive("converts HTML to markdown by default, without scripts or styles", () =>
    Effect.gen(function*() {
      const { base } = yield* server
      const tool = yield* WebFetch.make
      const { context, asked } = makeContext()
      const url = `${base}/page.html`
      const result = yield* tool.execute({ url }, context)
      expect(result.output).toContain("# Getting started")
      expect(result.output).toContain("Hello **world** & friends.")
      expect(result.output).toMatch(/^-\s+first item$/m)
      expect(result.output).toContain("[the next page](https://example.com/next)")
      expect(result.output).toContain("```\nnpm install thing\n```")
      expect(result.output).not.toMatch(/alert|color: red|enable javascript/)
      expect(result.title).toBe(`${url} (text/html; charset=utf-8)`)
      expect(asked).toEqual([
        { permission: "webfetch", patterns: [url], always: [url], metadata: { url, format: "markdown", timeout: 30 } }
      ])
    }))

  it.scopedLive("text format strips the page to its text; html format returns it as served", () =>
    Effect.gen(function*() {
      const { base } = yield* server
      const tool = yield* WebFetch.make
      const { context } = makeContext()
      const text = (yield* tool.execute({ url: `${base}/page.html`, format: "text" }, context)).output
      expect(text).toContain("Getting started")
      expect(text).toContain("Hello world & friends.")
      expect(text).toContain("first item\nsecond item")
      expect(text).not.toMatch(/<|alert|color: red|enable javascript/)
      const html = (yield* tool.execute({ url: `${base}/page.html`, format: "html" }, context)).output
      expect(html).toBe(PAGE)
    }))

  it.scopedLive("non-HTML content is returned as it is, after redirects", () =>
    Effect.gen(function*() {
      const { base } = yield* server
      const tool = yield* WebFetch.make
      const { context } = makeContext()
      expect((yield* tool.execute({ url: `${base}/redirect` }, context)).output).toBe("just <b>text</b>\n")
    }))

  it.scopedLive("images come back as a data-URL attachment", () =>
    Effect.gen(function*() {
      const { base } = yield* server
      const tool = yield* WebFetch.make
      const { context } = makeContext()
      const result = yield* tool.execute({ url: `${base}/image.png` }, context)
      expect(result.attachments).toEqual([{ mime: "image/png", url: `data:image/png;base64,${PNG.toString("base64")}` }])
      expect(result.output).toMatch(/image/)
    }))

  it.scopedLive("an error status, a binary body and a non-http URL are tool errors", () =>
    Effect.gen(function*() {
      const { base } = yield* server
      const tool = yield* WebFetch.make
      const { context, asked } = makeContext()
      const missing = yield* Effect.flip(tool.execute({ url: `${base}/missing` }, context))
      expect(missing._tag).toBe("ToolExecutionError")
      expect(missing.message).toMatch(/status 404/)
      expect((yield* Effect.flip(tool.execute({ url: `${base}/forbidden` }, context))).message).toMatch(/status 403/)
      expect((yield* Effect.flip(tool.execute({ url: `${base}/binary` }, context))).message).toMatch(/binary/)
      asked.length = 0
      const file = yield* Effect.flip(tool.execute({ url: "file:///etc/passwd" }, context))
      expect(file.message).toMatch(/Only http:\/\/ and https:\/\/ URLs/)
      expect((yield* Effect.flip(tool.execute({ url: "not a url" }, context))).message).toMatch(/Not a valid URL/)
      expect(asked).toEqual([])
    }))

  it.scopedLive("a Cloudflare challenge is retried once with a plain user agent", () =>
    Effect.gen(function*() {
      const { base, agents } = yield* server
      const tool = yield* WebFetch.make
      const { context } = makeContext()
      const result = yield* tool.execute({ url: `${base}/challenge` }, context)
      expect(result.output).toBe("you may pass")
      expect(agents).toHaveLength(2)
      expect(agents[0]).toMatch(/Mozilla/)
      expect(agents[1]).toBe(WebFetch.PLAIN_USER_AGENT)
    }))

  it.scopedLive("refuses bodies over 5 MB, declared or streamed", () =>
    Effect.gen(function*() {
      const { base } = yield* server
      const tool = yield* WebFetch.make
      const { context } = makeContext()
      for (const route of ["/big-declared", "/big-stream"]) {
        const error = yield* Effect.flip(tool.execute({ url: `${base}${route}` }, context))
        expect(error.message).toMatch(/too large: it exceeds the 5 MB limit/)
      }
    }))

  it.effect("bad arguments are named: a timeout that is not positive, an unknown format", () =>
    Effect.gen(function*() {
      const tool = yield* WebFetch.make
      const problem = (input: Record<string, unknown>) => Effect.map(Effect.flip(Tool.decodeInput(tool, input)), (error) => error.message.split("\n")[0])
      expect(yield* problem({ url: "https://example.com", timeout: 0 })).toBe(
        "The webfetch tool was called with invalid arguments: timeout: expected a number of seconds greater than 0 (at most 120 are used)."
      )
      expect(yield* problem({ url: "https://example.com", format: "pdf" })).toBe(
        "The webfetch tool was called with invalid arguments: format: Expected \"text\", \"markdown\" or \"html\", actual \"pdf\"."
      )
      expect(yield* problem({})).toBe("The webfetch tool was called with invalid arguments: url: is missing.")
    }))

  it.scopedLive("gives up after the timeout, and when the run is aborted", () =>
    Effect.gen(function*() {
      const { base } = yield* server
      const tool = yield* WebFetch.make
      const first = makeContext()
      const timedOut = yield* Effect.flip(tool.execute({ url: `${base}/slow`, timeout: 1 }, first.context))
      expect(timedOut.message).toBe("The request timed out after 1 seconds.")

      const second = makeContext()
      setTimeout(() => second.controller.abort(), 200)
      const aborted = yield* Effect.flip(tool.execute({ url: `${base}/slow` }, second.context))
      expect(aborted.message).toBe("The request was aborted.")
    }))

  it.scopedLive("runs through the real loop", () =>
    Effect.gen(function*() {
      const { base } = yield* server
      const url = `${base}/page.html`
      const model = ScriptedModel.make([[ScriptedModel.toolCall("webfetch", { url })], "The page is about getting started."])
      const runtime = yield* TestRuntime.make({ model })
      yield* Effect.gen(function*() {
        yield* (yield* ToolRegistry).register([yield* WebFetch.make])
        const store = yield* SessionStore
        const session = yield* store.create({ title: "fetch" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "read it" }] })
        expect(outcome.reason).toBe("completed")
        const part = (yield* store.messages(session.id)).flatMap((m) => m.parts).find((p): p is ToolPart => p.type === "tool")
        expect(part?.state.status).toBe("completed")
        expect(part?.state.status === "completed" && part.state.output).toContain("# Getting started")
      }).pipe(Effect.provide(runtime.layer))
    }))
})
