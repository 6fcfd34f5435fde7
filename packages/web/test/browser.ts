/**
 * What the browser tests share: a real Chromium (Debian's, driven by playwright-core) and the real
 * server over the test runtime (only the model is scripted). One browser per test file.
 */
import { TestRuntime } from "@agent/testing"
import type { AppServices } from "@agent/core"
import * as HttpServer from "@effect/platform/HttpServer"
import { Context, Effect, Layer, type Scope } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { type Browser, chromium } from "playwright-core"
import * as Server from "../../server/src/Server.js"

export const CHROMIUM = process.env["AGENT_CHROMIUM"] ?? "/usr/bin/chromium"

/** Headless, and kept off the network: no updates, sync, metrics or first-run pages. */
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-default-apps",
  "--disable-extensions",
  "--metrics-recording-only"
]

/**
 * Chromium for one test file. Playwright starts it with a fresh `--user-data-dir` of its own (a
 * temp dir it removes), so no profile carries over between runs.
 */
export const launch = (): Effect.Effect<Browser, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() => chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS })),
    (browser) => Effect.promise(() => browser.close())
  )

export const webRoot = fileURLToPath(new URL("../dist", import.meta.url))
export const docsDir = fileURLToPath(new URL("../../../docs/web", import.meta.url))

/** The page must be built (`pnpm build` does; the test scripts run it first). */
export const assertBuilt = () => {
  if (!fs.existsSync(path.join(webRoot, "index.html"))) throw new Error(`the web page is not built (${webRoot}): run pnpm build`)
}

export type ServeOptions = TestRuntime.TestRuntimeOptions & { readonly server?: Server.ServerOptions }

/** The real server with its web page on a free loopback port, closed with the scope. */
export const serve = (options: ServeOptions) =>
  Effect.gen(function*() {
    assertBuilt()
    const runtime = yield* TestRuntime.make(options)
    const layer = Server.layer({ port: 0, web: { root: webRoot }, ...options.server }).pipe(Layer.provideMerge(runtime.layer))
    const context = yield* Layer.build(layer)
    const address = Context.get(context, HttpServer.HttpServer).address as HttpServer.TcpAddress
    const run = <A, E>(effect: Effect.Effect<A, E, AppServices>) => Effect.runPromise(Effect.provide(effect, context) as Effect.Effect<A, E>)
    return { url: `http://127.0.0.1:${address.port}`, port: address.port, box: runtime.box, run }
  })

/** A TCP relay to `port` whose connections the test can cut, as a network drop would. */
export const relay = (port: number) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly cut: () => number; readonly server: net.Server }>((resume) => {
      const sockets = new Set<net.Socket>()
      const server = net.createServer((client) => {
        const upstream = net.connect(port, "127.0.0.1")
        sockets.add(client)
        sockets.add(upstream)
        client.pipe(upstream).pipe(client)
        const drop = () => {
          sockets.delete(client)
          sockets.delete(upstream)
          client.destroy()
          upstream.destroy()
        }
        client.on("error", drop).on("close", drop)
        upstream.on("error", drop).on("close", drop)
      })
      server.listen(0, "127.0.0.1", () => {
        const cut = () => {
          const count = sockets.size
          for (const socket of sockets) socket.destroy()
          sockets.clear()
          return count
        }
        resume(Effect.succeed({ url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, cut, server }))
      })
    }),
    ({ server }) => Effect.sync(() => server.close())
  )

/** Polls `check` (real time) until it returns a value. */
export const until = async <A>(check: () => Promise<A | undefined> | A | undefined, ms = 15_000, what = "condition"): Promise<A> => {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`${what} not met within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

export const basic = (username: string, password: string) => `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`
