import { ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Stream } from "effect"
import * as Client from "../src/Client.js"
import { serve } from "./support.js"

describe("the typed client (used by --attach)", () => {
  it.scopedLive("creates, prompts and lists through the HttpApi-derived client; events arrive decoded", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({ model: ScriptedModel.make(["typed answer"]), server: { password: "pw" } })
      const client = yield* Client.make({ baseUrl: url, password: "pw" })
      const events = yield* Client.events({ baseUrl: url, password: "pw" }).pipe(
        Stream.takeUntil((event) => event.type === "session.idle"),
        Stream.runCollect,
        Effect.fork
      )
      const session = yield* client.session.create({ payload: { title: "typed" }, urlParams: {} })
      expect(session.title).toBe("typed")
      yield* Effect.sleep("100 millis")
      const reply = yield* client.session.prompt({
        path: { id: session.id },
        urlParams: {},
        payload: { parts: [{ type: "text", text: "hi" }] }
      })
      expect(reply.parts.find((part) => part.type === "text")).toMatchObject({ text: "typed answer" })
      const seen = Chunk.toReadonlyArray(yield* Fiber.join(events))
      expect(seen[0]!.type).toBe("server.connected")
      expect(seen.some((event) => event.type === "message.part.updated")).toBe(true)

      const missing = yield* client.session.get({ path: { id: `ses_${"Z".repeat(26)}` as any }, urlParams: {} }).pipe(Effect.flip)
      expect(missing._tag).toBe("NotFoundError")
      expect(missing.message).toContain("not found")

      const unauthorized = yield* Client.make({ baseUrl: url })
      const refused = yield* unauthorized.session.list({ urlParams: {} }).pipe(Effect.flip)
      expect(String(refused)).toMatch(/401|Unauthorized|StatusCode/i)
    }))
})
