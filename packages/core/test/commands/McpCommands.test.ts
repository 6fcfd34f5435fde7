import { ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { CommandRegistry } from "../../src/session/CommandRegistry.js"
import { Mcp } from "../../src/mcp/Mcp.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import { everythingBin } from "../mcp/helpers.js"

describe("MCP prompts as commands", () => {
  it.scopedLive("everything's prompts are <server>:<prompt> commands; words map onto the prompt's arguments", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make(["Sunny.", "Plain."])
      const runtime = yield* TestRuntime.make({
        model,
        files: { "project/agent.json": { mcp: { everything: { type: "local", command: [everythingBin, "stdio"] } } } }
      })
      yield* Effect.gen(function*() {
        yield* (yield* Mcp).ready("20 seconds")
        const commands = yield* CommandRegistry
        const listed = yield* commands.list()
        const args = listed.find((command) => command.name === "everything:args-prompt")
        expect(args).toMatchObject({ source: "mcp", hints: ["city", "state"] })
        expect(args!.template).toBeUndefined()
        expect(listed.map((command) => command.name)).toContain("everything:simple-prompt")

        const store = yield* SessionStore
        const session = yield* store.create({})
        // The last argument takes the rest of the words, as in a template.
        const outcome = yield* commands.execute({ sessionID: session.id, command: "everything:args-prompt", arguments: "Paris New Mexico" })
        expect(outcome.reason).toBe("completed")
        expect(ScriptedModel.lastUserText(model.calls[0]!)).toBe("What's weather in Paris, New Mexico?")

        yield* commands.execute({ sessionID: session.id, command: "everything:simple-prompt" })
        expect(ScriptedModel.lastUserText(model.calls[1]!)).toBe("This is a simple prompt without arguments.")

        const missing = yield* Effect.flip(commands.expand({ command: "everything:args-prompt" }))
        expect(missing.message).toBe(
          `Command "everything:args-prompt": missing required argument city (1st); usage: everything:args-prompt city [state]`
        )
        const extra = yield* Effect.flip(commands.expand({ command: "everything:simple-prompt", arguments: "surplus" }))
        expect(extra.message).toBe(`Command "everything:simple-prompt": this MCP prompt takes no arguments`)
        expect(model.calls).toHaveLength(2)
      }).pipe(Effect.provide(runtime.layer))
    }), 60_000)
})
