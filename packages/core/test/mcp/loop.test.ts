import type { SessionID, ToolPart } from "@agent/domain"
import { ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { PermissionService } from "../../src/permission/PermissionService.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import { everythingBin, startMcp } from "./helpers.js"

const { toolCall } = ScriptedModel

const toolParts = (parts: ReadonlyArray<{ type: string }>) => parts.filter((part): part is ToolPart => part.type === "tool")

/**
 * Connects the everything server, then runs one prompt through the real loop with its tools
 * and the given `everything_*` rule; `answer` handles a permission request if one comes.
 */
const runWithRule = (
  rule: "allow" | "ask" | "deny",
  answer?: (permissions: PermissionService["Type"]) => Effect.Effect<void, unknown>
) =>
  Effect.gen(function*() {
    const { mcp } = yield* startMcp({ mcp: { everything: { type: "local", command: [everythingBin] } } })
    yield* mcp.ready("20 seconds")
    const model = ScriptedModel.make([[toolCall("everything_echo", { message: "from the model" })], "Done."])
    const runtime = yield* TestRuntime.make({
      model,
      tools: yield* mcp.tools(),
      files: { "project/agent.json": { permission: { "everything_*": rule } } }
    })
    return yield* Effect.gen(function*() {
      const store = yield* SessionStore
      const loop = yield* SessionLoop
      const permissions = yield* PermissionService
      const session = yield* store.create({ title: "MCP" })
      const run = yield* Effect.fork(
        loop.prompt({ sessionID: session.id as SessionID, parts: [{ type: "text", text: "echo something" }] })
      )
      if (answer) yield* answer(permissions)
      const outcome = yield* Fiber.join(run)
      const messages = yield* store.messages(session.id)
      const part = messages.flatMap((message) => toolParts(message.parts))[0]!
      return { outcome, part, model }
    }).pipe(Effect.provide(runtime.layer))
  })

const nextRequest = (permissions: PermissionService["Type"]) =>
  Effect.gen(function*() {
    for (;;) {
      const [request] = yield* permissions.list()
      if (request) return request
      yield* Effect.sleep("10 millis")
    }
  })

describe("MCP tools in the loop", () => {
  it.scopedLive("everything_* allow: the model's call runs against the server", () =>
    Effect.gen(function*() {
      const { outcome, part, model } = yield* runWithRule("allow")
      expect(outcome.reason).toBe("completed")
      expect(part.tool).toBe("everything_echo")
      expect(part.state).toMatchObject({ status: "completed", output: "Echo: from the model" })
      // The model was offered the server's own schema for the tool.
      const offered = model.calls[0]!.tools?.find((tool) => tool.name === "everything_echo")
      expect(offered).toMatchObject({
        inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] }
      })
    }), 60_000)

  it.scopedLive("everything_* ask: the user is asked for the tool key, and the call runs once allowed", () =>
    Effect.gen(function*() {
      const { outcome, part } = yield* runWithRule("ask", (permissions) =>
        Effect.gen(function*() {
          const request = yield* nextRequest(permissions)
          expect(request).toMatchObject({ permission: "everything_echo", patterns: ["*"], always: ["*"] })
          yield* permissions.reply({ requestID: request.id, reply: "once" })
        }))
      expect(outcome.reason).toBe("completed")
      expect(part.state).toMatchObject({ status: "completed", output: "Echo: from the model" })
    }), 60_000)

  it.scopedLive("everything_* deny: the tool is not offered, and a call to it never reaches the server", () =>
    Effect.gen(function*() {
      const { outcome, part, model } = yield* runWithRule("deny")
      expect(outcome.reason).toBe("completed")
      const offered = model.calls[0]!.tools?.map((tool) => tool.name) ?? []
      expect(offered).toContain("read")
      expect(offered.filter((name) => name.startsWith("everything_"))).toEqual([])
      // The model called it anyway: the loop answers with the unavailable-tool error instead of running it.
      expect(part.tool).toBe("invalid")
      const output = part.state.status === "completed" ? part.state.output : ""
      expect(output).toMatch(/Model tried to call unavailable tool 'everything_echo'/)
      expect(output).not.toContain("Echo:")
    }), 60_000)
})
