// The testing example of docs/extending.md ("A test with the fake model"; once in the README), run as written, so it stays true.
import { ScriptedModel, TestRuntime } from "@agent/testing"
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"

it.scopedLive("reads a file", () =>
  Effect.gen(function*() {
    const model = ScriptedModel.make([[ScriptedModel.toolCall("read", { filePath: "a.ts" })], "Done."])
    const { layer } = yield* TestRuntime.make({ model, files: { "project/a.ts": "export {}" } })
    const outcome = yield* Effect.gen(function*() {
      const session = yield* (yield* SessionStore).create()
      return yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "read a.ts" }] })
    }).pipe(Effect.provide(layer))
    expect(outcome.reason).toBe("completed")
  }))
