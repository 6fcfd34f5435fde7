import { ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import { FileTimes } from "../../src/tool/FileTimes.js"

const { toolCall } = ScriptedModel

describe("state of a runtime", () => {
  it.scopedLive("the read times of a runtime's sessions are its own: another runtime of the process does not see them", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[toolCall("read", { filePath: "notes.txt" })], "Read it."])
      const runtime = yield* TestRuntime.make({ model, files: { "project/notes.txt": "hello" } })
      const file = path.join(runtime.box.instance.directory, "notes.txt")
      const sessionID = yield* Effect.gen(function*() {
        const session = yield* (yield* SessionStore).create({ title: "Reads" })
        expect((yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "read" }] })).reason).toBe("completed")
        expect((yield* FileTimes).lastRead(session.id, file)).toBeTypeOf("number")
        return session.id
      }).pipe(Effect.provide(runtime.layer))
      // Outside that runtime (the default store, as any other runtime has its own) nothing was recorded.
      expect((yield* FileTimes).lastRead(sessionID, file)).toBeUndefined()
    }))
})
