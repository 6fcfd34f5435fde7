import type { SessionID } from "@agent/domain"
import { ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Mcp } from "../../src/mcp/Mcp.js"
import { type PromptPartInput, SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import { everythingBin, fixtureCommand } from "./helpers.js"

/** Sends one user message with `parts` through the real loop, with the everything server configured. */
const promptWith = (parts: ReadonlyArray<PromptPartInput>) =>
  Effect.gen(function*() {
    const model = ScriptedModel.make(["Noted."])
    const runtime = yield* TestRuntime.make({
      model,
      files: {
        "project/agent.json": {
          mcp: {
            everything: { type: "local", command: [everythingBin] },
            fixture: { type: "local", command: fixtureCommand() }
          }
        }
      },
      // The first message waits for the server as long as it takes to start on a busy machine.
      env: { AGENT_MCP_GRACE_MS: "30000" }
    })
    return yield* Effect.gen(function*() {
      const store = yield* SessionStore
      const session = yield* store.create({ title: "resources" })
      const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id as SessionID, parts })
      const [user] = yield* store.messages(session.id)
      const status = yield* (yield* Mcp).status()
      return { outcome, stored: user!.parts, sent: model.calls[0]!.prompt.filter((message) => message.role === "user"), status }
    }).pipe(Effect.provide(runtime.layer))
  })

const resource = (uri: string, clientName?: string, mime = "text/plain"): PromptPartInput => ({
  type: "file",
  mime,
  url: uri,
  filename: uri.split("/").at(-1)!,
  source: { type: "resource", uri, ...(clientName ? { clientName } : {}) }
})

describe("MCP resources attached to a user message", () => {
  it.scopedLive("are read through their server and given to the model; the attachment itself is kept", () =>
    Effect.gen(function*() {
      const { outcome, stored, sent, status } = yield* promptWith([
        { type: "text", text: "Summarize these." },
        resource("demo://resource/dynamic/text/3", "everything"),
        resource("demo://resource/dynamic/blob/4", "everything"),
        resource("fixture://pixel.png", "fixture", "image/png")
      ])
      expect(status).toEqual({ everything: { status: "connected" }, fixture: { status: "connected" } })
      expect(outcome.reason).toBe("completed")

      // Per attachment: the file part as sent, then what was read from it.
      expect(stored.map((part) => part.type)).toEqual(["text", "file", "text", "file", "text", "file", "text", "file"])
      expect(stored[1]).toMatchObject({
        type: "file",
        url: "demo://resource/dynamic/text/3",
        source: { type: "resource", uri: "demo://resource/dynamic/text/3", clientName: "everything" }
      })
      expect(stored[2]).toMatchObject({ type: "text", synthetic: true })
      expect(stored[7]).toMatchObject({ type: "file", mime: "image/png", filename: "pixel.png" })

      const content = sent.flatMap((message) => (typeof message.content === "string" ? [] : message.content))
      const texts = content.flatMap((part) => (part.type === "text" ? [part.text] : []))
      expect(texts[0]).toBe("Summarize these.")
      expect(texts[1]).toMatch(
        /^The user attached the resource demo:\/\/resource\/dynamic\/text\/3 from the MCP server everything\. Its content:\n\nResource 3: This is a plaintext resource created at /
      )
      // A base64 blob of text/plain is decoded to text.
      expect(texts[2]).toMatch(
        /^The user attached the resource demo:\/\/resource\/dynamic\/blob\/4 from the MCP server everything\. Its content:\n\nResource 4: This is a base64 blob created at /
      )
      expect(texts[3]).toBe(
        "The user attached the resource fixture://pixel.png from the MCP server fixture. Its content:\n\n" +
          "[binary content fixture://pixel.png (image/png) attached]"
      )
      // The model gets the image's bytes, never a URI it cannot fetch.
      const files = content.flatMap((part) => (part.type === "file" ? [part] : []))
      expect(files).toHaveLength(1)
      expect(files[0]!.mediaType).toBe("image/png")
      const data = files[0]!.data
      const bytes = typeof data === "string" ? Buffer.from(data, "base64") : Buffer.from(data as Uint8Array)
      expect(bytes.subarray(1, 4).toString()).toBe("PNG")
    }), 90_000)

  it.scopedLive("without a server name the listed resource's server is used; an unreadable one becomes a note", () =>
    Effect.gen(function*() {
      const { outcome, sent } = yield* promptWith([
        resource("demo://resource/static/document/architecture.md"),
        resource("demo://resource/dynamic/text/0", "everything"),
        resource("demo://resource/dynamic/text/1", "elsewhere")
      ])
      expect(outcome.reason).toBe("completed")
      const texts = sent.flatMap((message) =>
        typeof message.content === "string" ? [] : message.content.flatMap((part) => (part.type === "text" ? [part.text] : []))
      )
      expect(texts[0]).toMatch(
        /^The user attached the resource demo:\/\/resource\/static\/document\/architecture\.md from the MCP server everything\. Its content:\n\n\S/
      )
      expect(texts[1]).toMatch(
        /^The user attached the resource demo:\/\/resource\/dynamic\/text\/0 from the MCP server everything, but it could not be read: Reading demo:\/\/resource\/dynamic\/text\/0 from everything failed: /
      )
      expect(texts[2]).toBe(
        "The user attached the resource demo://resource/dynamic/text/1 from the MCP server elsewhere, but it could not be read: " +
          "There is no MCP server named elsewhere. Configured servers: everything, fixture."
      )
    }), 90_000)
})
