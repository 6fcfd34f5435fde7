import { type AppServices } from "@agent/core"
import { TestRuntime } from "@agent/testing"
import { createOpencodeClient } from "@opencode-ai/sdk"
import { HttpServer } from "@effect/platform"
import { Context, Effect, Layer } from "effect"
import * as Server from "../src/Server.js"

export type Options = TestRuntime.TestRuntimeOptions & { readonly server?: Server.ServerOptions }

/** The real server on a free loopback port, over the test runtime; closed with the test's scope. */
export const serve = (options: Options) =>
  Effect.gen(function*() {
    const runtime = yield* TestRuntime.make(options)
    const layer = Server.layer({ port: 0, ...options.server }).pipe(Layer.provideMerge(runtime.layer))
    const context = yield* Layer.build(layer)
    const address = Context.get(context, HttpServer.HttpServer).address as HttpServer.TcpAddress
    const url = `http://127.0.0.1:${address.port}`
    const client = createOpencodeClient({ baseUrl: url })
    const run = <A, E>(effect: Effect.Effect<A, E, AppServices>) => Effect.provide(effect, context)
    return { url, client, box: runtime.box, run }
  })

/** Polls until `check` returns a value (real time), failing after `ms`. */
export const eventually = <A>(check: () => Promise<A | undefined>, ms = 10_000) =>
  Effect.promise(async () => {
    const deadline = Date.now() + ms
    for (;;) {
      const value = await check()
      if (value !== undefined) return value
      if (Date.now() > deadline) throw new Error("condition not met in time")
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })

/** Splits an SSE body into its events' parsed `data:` as chunks arrive (a frame may span chunks). */
export const sseParser = () => {
  let buffer = ""
  return (chunk: string): Array<any> => {
    buffer += chunk
    const frames = buffer.split("\n\n")
    buffer = frames.pop()!
    return frames.flatMap((frame) => {
      const data = frame.split("\n").find((line) => line.startsWith("data: "))
      return data ? [JSON.parse(data.slice(6))] : []
    })
  }
}
