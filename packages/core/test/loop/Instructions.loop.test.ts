import { ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"

const { toolCall } = ScriptedModel

describe("instructions in a run", () => {
  it.scopedLive("root AGENTS.md is in the system prompt; a package's AGENTS.md arrives with the first read inside it", () => {
    const model = ScriptedModel.make([
      [toolCall("read", { filePath: "packages/web/src/app.ts" })],
      [toolCall("read", { filePath: "packages/web/src/app.ts" })],
      "done"
    ])
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({
        model,
        files: {
          "project/AGENTS.md": "Root rule: use pnpm.",
          "project/packages/web/AGENTS.md": "Web rule: components are PascalCase.",
          "project/packages/web/src/app.ts": "export const app = 1\n"
        }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "Monorepo" })
        yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "look at the app" }] })
        const system = JSON.stringify(model.calls[0]!.prompt.filter((entry) => entry.role === "system"))
        expect(system).toContain("Root rule: use pnpm.")
        expect(system).not.toContain("Web rule")
        const outputs = (yield* store.messages(session.id))
          .flatMap((message) => message.parts)
          .flatMap((part) => (part.type === "tool" && part.state.status === "completed" ? [part.state.output] : []))
        expect(outputs).toHaveLength(2)
        expect(outputs[0]).toContain("Web rule: components are PascalCase.")
        expect(outputs[1]).not.toContain("Web rule") // once per session: it is already in the history
      }).pipe(Effect.provide(runtime.layer))
    })
  })

  it.scopedLive("after a compaction summarized the read that carried it, the next read in the package brings the package's AGENTS.md again", () => {
    const model = ScriptedModel.make([
      [toolCall("read", { filePath: "packages/web/src/app.ts" })],
      "read it",
      "SUMMARY: the app was read.",
      [toolCall("read", { filePath: "packages/web/src/app.ts" })],
      "read it again"
    ])
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({
        model,
        files: {
          "project/packages/web/AGENTS.md": "Web rule: components are PascalCase.",
          "project/packages/web/src/app.ts": "export const app = 1\n"
        }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const session = yield* store.create({ title: "Monorepo" })
        yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "look at the app" }] })
        expect((yield* loop.compact(session.id)).reason).toBe("completed")
        yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "look again" }] })
        const reads = (yield* store.messages(session.id))
          .flatMap((message) => message.parts)
          .flatMap((part) => (part.type === "tool" && part.state.status === "completed" ? [part.state] : []))
        expect(reads).toHaveLength(2)
        const webRules = runtime.box.path("project/packages/web/AGENTS.md")
        expect(reads[0]!.metadata.loaded).toEqual([webRules])
        // The summary replaced the first read in the model's view: the rule comes back with the next one.
        expect(reads[1]!.output).toContain("Web rule: components are PascalCase.")
        expect(reads[1]!.metadata.loaded).toEqual([webRules])
        expect(JSON.stringify(model.calls[4]!.prompt)).toContain("Web rule: components are PascalCase.")
      }).pipe(Effect.provide(runtime.layer))
    })
  })
})
