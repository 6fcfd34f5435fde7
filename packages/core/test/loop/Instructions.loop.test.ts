import { ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SessionLoop } from "../../src/SessionLoop.js"
import { SessionStore } from "../../src/SessionStore.js"

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
})
