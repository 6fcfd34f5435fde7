import { Bus, SessionLoop, SessionStore } from "@agent/core"
import type { BusEventOf } from "@agent/domain"
import { ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as fs from "node:fs"

describe("PreCompact hooks (in the runtime, as agent serve runs it)", () => {
  it.scopedLive("run before a summary with trigger manual, matched on it; hook.ran is published", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make(["ok", "SUMMARY: said hi"])
      const runtime = yield* TestRuntime.make({ model })
      const log = runtime.box.path("home/precompact.log")
      const script = runtime.box.path("home/precompact.sh")
      fs.writeFileSync(script, `#!/bin/sh\ncat >> '${log}'\necho >> '${log}'\n`, { mode: 0o755 })
      runtime.box.write("home/.config/agent/agent.json", {
        hooks: {
          PreCompact: [
            { matcher: "manual", hooks: [{ type: "command", command: script }] },
            { matcher: "auto", hooks: [{ type: "command", command: `${script} auto-only` }] }
          ]
        }
      })
      yield* Effect.gen(function*() {
        const ran: Array<BusEventOf<"hook.ran">> = []
        const events = yield* (yield* Bus).subscribe({ types: ["hook.ran"] })
        yield* events.pipe(Stream.runForEach((event) => Effect.sync(() => ran.push(event))), Effect.forkScoped)
        const session = yield* (yield* SessionStore).create({ title: "Compact me" })
        const loop = yield* SessionLoop
        expect((yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "hi" }] })).reason).toBe("completed")
        expect((yield* loop.compact(session.id)).reason).toBe("completed")
        const inputs = fs.readFileSync(log, "utf8").trim().split("\n").map((line) => JSON.parse(line))
        expect(inputs).toEqual([expect.objectContaining({ hook_event_name: "PreCompact", trigger: "manual", session_id: session.id, custom_instructions: "" })])
        yield* Effect.sleep("50 millis")
        expect(ran.map((event) => event.properties)).toEqual([expect.objectContaining({ event: "PreCompact", command: script, exitCode: 0, decision: "none" })])
      }).pipe(Effect.provide(runtime.layer))
    }), 30_000)
})
