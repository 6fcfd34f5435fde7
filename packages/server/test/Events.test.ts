import { Bus } from "@agent/core"
import type { SessionID } from "@agent/domain"
import { ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as net from "node:net"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { eventually, serve, sseParser } from "./support.js"

/**
 * A full collection, so a heap measure counts what is kept, not garbage not yet collected (how much
 * of that is left lying around differs between V8 releases: Node 24 left 50 MB where Node 20 left none).
 */
const collectGarbage = (): void => {
  v8.setFlagsFromString("--expose-gc")
  ;(vm.runInNewContext("gc") as () => void)()
}

const sessionID = `ses_${"a".repeat(26)}` as SessionID
const todo = (index: number, padding = "") => ({
  type: "todo.updated" as const,
  properties: { sessionID, todos: [{ content: `task ${index}${padding}`, status: "pending" as const, priority: "low" as const }] }
})

/** Reads SSE frames from a fetch response until `stop` says so. */
const readEvents = async (response: Response, stop: (events: Array<any>) => boolean) => {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  const events: Array<any> = []
  const parse = sseParser()
  while (!stop(events)) {
    const { done, value } = await reader.read()
    if (done) break
    events.push(...parse(value))
  }
  await reader.cancel()
  return events
}

describe("the event stream", () => {
  it.scopedLive("a reconnect with Last-Event-ID gets exactly the events it missed", () =>
    Effect.gen(function*() {
      const { url, run } = yield* serve({ model: ScriptedModel.make(["x"]) })
      const publish = (from: number, to: number) =>
        run(Effect.gen(function*() {
          const bus = yield* Bus
          for (let index = from; index < to; index++) yield* bus.publish(todo(index))
        }))

      const first = yield* Effect.promise(() => fetch(`${url}/event`))
      yield* publish(0, 5)
      const seen = yield* Effect.promise(() => readEvents(first, (events) => events.filter((e) => e.type === "todo.updated").length >= 5))
      const last = seen.at(-1)!
      expect(last.properties.todos[0].content).toBe("task 4")

      // disconnected: these are missed
      yield* publish(5, 12)
      const again = yield* Effect.promise(() => fetch(`${url}/event`, { headers: { "last-event-id": String(last.id) } }))
      const replayed = yield* Effect.promise(() =>
        readEvents(again, (events) => events.filter((e) => e.type === "todo.updated").length >= 7)
      )
      expect(replayed[0].type).toBe("server.connected")
      const todos = replayed.filter((event) => event.type === "todo.updated")
      expect(todos.map((event) => event.properties.todos[0].content)).toEqual(
        Array.from({ length: 7 }, (_, index) => `task ${index + 5}`)
      )
      expect(todos[0].id).toBe(last.id + 1)
    }))

  it.scopedLive("an idle connection gets heartbeats, which carry no id, and events still follow them", () =>
    Effect.gen(function*() {
      const { url, run } = yield* serve({ model: ScriptedModel.make(["x"]), server: { events: { heartbeat: "100 millis" } } })
      const response = yield* Effect.promise(() => fetch(`${url}/event`))
      const events = yield* Effect.promise(async () => {
        let published = false
        return readEvents(response, (events) => {
          if (!published && events.filter((e) => e.type === "server.heartbeat").length >= 2) {
            published = true
            void Effect.runPromise(run(Effect.flatMap(Bus, (bus) => bus.publish(todo(1)))))
          }
          return events.some((e) => e.type === "todo.updated")
        })
      })
      expect(events[0].type).toBe("server.connected")
      const heartbeats = events.filter((e) => e.type === "server.heartbeat")
      expect(heartbeats.length).toBeGreaterThanOrEqual(2)
      expect(heartbeats.every((e) => e.id === undefined)).toBe(true)
      expect(events.at(-1).type).toBe("todo.updated")
      expect(typeof events.at(-1).id).toBe("number")
    }))

  it.scopedLive("a client that reads nothing while 50 000 events are published is cut off; memory stays bounded", () =>
    Effect.gen(function*() {
      const { url, run } = yield* serve({
        model: ScriptedModel.make(["x"]),
        server: { events: { clientCapacity: 1000, replay: 500 } }
      })
      const { port } = new URL(url)
      // A raw socket that sends the request and then never reads a byte.
      const socket = net.connect(Number(port), "127.0.0.1")
      yield* Effect.addFinalizer(() => Effect.sync(() => socket.destroy()))
      let received = 0
      const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()))
      socket.on("data", (chunk: Buffer) => (received += chunk.length))
      socket.on("error", () => {})
      yield* Effect.promise(() => new Promise<void>((resolve) => socket.on("connect", () => resolve())))
      socket.write(`GET /event HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`)
      socket.pause()
      yield* eventually(async () => {
        const health = await fetch(`${url}/global/health`)
        return health.ok ? true : undefined
      })
      yield* Effect.sleep("200 millis")

      collectGarbage()
      const before = process.memoryUsage().heapUsed
      const padding = "x".repeat(1000)
      // 50 000 events of ~1 KB: ~50 MB if anything kept them all
      for (let batch = 0; batch < 50; batch++) {
        yield* run(Effect.gen(function*() {
          const bus = yield* Bus
          for (let index = 0; index < 1000; index++) yield* bus.publish(todo(batch * 1000 + index, padding))
        }))
        yield* Effect.sleep("1 millis")
      }
      collectGarbage()
      const after = process.memoryUsage().heapUsed
      const grownMiB = (after - before) / 1024 / 1024
      expect(grownMiB).toBeLessThan(30)

      // the stalled client was disconnected: once it reads again it finds the end of the stream,
      // far short of the 50 MB that were published
      yield* Effect.sleep("1500 millis")
      socket.resume()
      yield* Effect.promise(() =>
        Promise.race([closed, new Promise((_, reject) => setTimeout(() => reject(new Error("slow client was not cut off")), 10_000))])
      )
      expect(received).toBeLessThan(20 * 1024 * 1024)
      // and the server still serves everyone else, with the newest events available for replay
      const fresh = yield* Effect.promise(() => fetch(`${url}/event`, { headers: { "last-event-id": "0" } }))
      const replayed = yield* Effect.promise(() => readEvents(fresh, (events) => events.length >= 501))
      expect(replayed.filter((event) => event.type === "todo.updated")).toHaveLength(500)
      expect(replayed.at(-1).properties.todos[0].content).toBe(`task 49999${padding}`)
    }))

  it.scopedLive("a burst of text deltas reaches the client merged, in order, with nothing lost", () =>
    Effect.gen(function*() {
      const { url, run } = yield* serve({ model: ScriptedModel.make(["x"]) })
      const response = yield* Effect.promise(() => fetch(`${url}/event`))
      const ids = { sessionID, messageID: `msg_${"b".repeat(26)}`, partID: `prt_${"c".repeat(26)}` } as any
      yield* run(Effect.gen(function*() {
        const bus = yield* Bus
        for (let index = 0; index < 1000; index++) {
          yield* bus.publish({ type: "message.part.delta", properties: { ...ids, field: "text", delta: `${index},` } })
        }
        // anything else about the run flushes what is pending first
        yield* bus.publish(todo(0))
      }))
      const events = yield* Effect.promise(() => readEvents(response, (seen) => seen.some((event) => event.type === "todo.updated")))
      const deltas = events.filter((event) => event.type === "message.part.delta")
      expect(deltas.length).toBeLessThan(20)
      expect(deltas.map((event) => event.properties.delta).join("")).toBe(Array.from({ length: 1000 }, (_, index) => `${index},`).join(""))
      expect(events.findIndex((event) => event.type === "todo.updated")).toBeGreaterThan(events.indexOf(deltas.at(-1)))
    }))
})
