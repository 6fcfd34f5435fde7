import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { editor, initialize, project } from "./AcpClient.js"

const { toolCall } = ScriptedModel

/** A 1×1 PNG: read attaches it, from the disk. */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64")

/** What the model was sent as the result of its last tool call. */
const lastToolResult = (server: MockOpenAIServer.MockOpenAIServer) => {
  const messages = server.requests.at(-1)!.messages as Array<{ role: string; content: unknown }>
  const result = messages.filter((message) => message.role === "tool").at(-1)
  return typeof result?.content === "string" ? result.content : JSON.stringify(result?.content)
}

describe("agent acp with the editor's files", () => {
  it.scopedLive("an edit reads the editor's unsaved buffer and writes through fs/write_text_file, not the disk", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [toolCall("edit", { filePath: "a.txt", oldString: "unsaved", newString: "edited" })],
        "Edited.",
        [toolCall("write", { filePath: "b.txt", content: "new file\n" })],
        "Written."
      ])
      const box = yield* project(server.url, { permission: { edit: "allow" } }, { "project/a.txt": "on disk\n" })
      const a = box.path("project/a.txt")
      // The editor holds a.txt with a change not yet saved.
      const buffers = new Map([[a, "unsaved change\n"]])
      const client = yield* editor(box, { files: buffers })
      yield* initialize(client, true)
      const { sessionId } = yield* Effect.promise(() => client.agent.request("session/new", { cwd: box.instance.directory, mcpServers: [] }))
      const first = yield* Effect.promise(() => client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "edit a" }] }))
      expect(first.stopReason, client.stderr()).toBe("end_turn")
      expect(client.reads.map((read) => read.path)).toContain(a)
      expect(client.writes).toEqual([{ sessionId, path: a, content: "edited change\n" }])
      expect(buffers.get(a)).toBe("edited change\n")
      // The disk was left to the editor.
      expect(fs.readFileSync(a, "utf8")).toBe("on disk\n")

      yield* Effect.promise(() => client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "write b" }] }))
      expect(client.writes.at(-1)).toEqual({ sessionId, path: box.path("project/b.txt"), content: "new file\n" })
      expect(fs.existsSync(box.path("project/b.txt"))).toBe(false)
    }))

  it.scopedLive("without the capability, edits go to the disk", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[toolCall("edit", { filePath: "a.txt", oldString: "disk", newString: "edited" })], "Edited."])
      const box = yield* project(server.url, { permission: { edit: "allow" } }, { "project/a.txt": "on disk\n" })
      const client = yield* editor(box, { files: new Map() })
      yield* initialize(client, false)
      const { sessionId } = yield* Effect.promise(() => client.agent.request("session/new", { cwd: box.instance.directory, mcpServers: [] }))
      yield* Effect.promise(() => client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "edit a" }] }))
      expect(client.writes).toEqual([])
      expect(fs.readFileSync(box.path("project/a.txt"), "utf8")).toBe("on edited\n")
    }))

  it.scopedLive("read sees the editor's unsaved buffer; an image, and a file over 4 MiB, are still read from the disk", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [toolCall("read", { filePath: "a.txt" })],
        [toolCall("read", { filePath: "pixel.png" })],
        [toolCall("read", { filePath: "big.log", limit: 2 })],
        "Read them."
      ])
      const box = yield* project(server.url, {}, { "project/a.txt": "on disk\nsecond\n" })
      const a = box.path("project/a.txt")
      const png = box.path("project/pixel.png")
      fs.writeFileSync(png, PNG)
      const big = box.path("project/big.log")
      fs.writeFileSync(big, "line from the disk\n".repeat(250_000))
      const client = yield* editor(box, {
        files: new Map([[a, "unsaved change\nsecond\nthird, typed\n"], [png, "not what the disk holds"], [big, "the editor's big.log\n"]])
      })
      yield* initialize(client, true)
      const { sessionId } = yield* Effect.promise(() => client.agent.request("session/new", { cwd: box.instance.directory, mcpServers: [] }))
      const response = yield* Effect.promise(() => client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "read a" }] }))
      expect(response.stopReason, client.stderr()).toBe("end_turn")
      const first = server.requests[1]!.messages as Array<{ role: string; content: unknown }>
      const readA = JSON.stringify(first.filter((message) => message.role === "tool").at(-1)?.content)
      expect(readA).toContain("1: unsaved change")
      expect(readA).toContain("3: third, typed")
      expect(readA).toContain("total 3 lines")
      expect(readA).not.toContain("on disk")
      // The image was attached from its bytes on disk, the big file streamed from it; the editor was not asked for either.
      expect(client.reads.map((read) => read.path)).toEqual([a])
      const third = server.requests[2]!.messages as Array<{ role: string; content: unknown }>
      expect(JSON.stringify(third.filter((message) => message.role === "tool").at(-1)?.content)).toContain("Image read successfully")
      expect(lastToolResult(server)).toContain("1: line from the disk")
    }))

  it.scopedLive("apply_patch patches the editor's buffer and writes through the editor; a delete stays on the disk", () =>
    Effect.gen(function*() {
      const patch = (...lines: Array<string>) => ["*** Begin Patch", ...lines, "*** End Patch"].join("\n")
      const server = yield* MockOpenAIServer.start([
        [toolCall("apply_patch", { patchText: patch("*** Update File: a.txt", "@@", "-unsaved change", "+patched change", "*** Add File: c.txt", "+new") })],
        "Patched.",
        [toolCall("apply_patch", { patchText: patch("*** Delete File: gone.txt") })],
        "Deleted."
      ])
      const box = yield* project(server.url, { permission: { edit: "allow" } }, { "project/a.txt": "on disk\n", "project/gone.txt": "bye\n" })
      const a = box.path("project/a.txt")
      const buffers = new Map([[a, "unsaved change\n"]])
      // A model the tool set gives apply_patch (GPT's), added to the project's provider.
      const client = yield* editor(box, {
        files: buffers,
        env: { AGENT_CONFIG_CONTENT: JSON.stringify({ model: "mock/gpt-5", provider: { mock: { models: { "gpt-5": {} } } } }) }
      })
      yield* initialize(client, true)
      const { sessionId } = yield* Effect.promise(() => client.agent.request("session/new", { cwd: box.instance.directory, mcpServers: [] }))
      const first = yield* Effect.promise(() => client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "patch a" }] }))
      expect(first.stopReason, client.stderr()).toBe("end_turn")
      expect(server.requests[0]!.tools?.map((tool) => tool.function.name)).toContain("apply_patch")
      expect(client.writes).toEqual([
        { sessionId, path: a, content: "patched change\n" },
        { sessionId, path: box.path("project/c.txt"), content: "new\n" }
      ])
      expect(fs.readFileSync(a, "utf8")).toBe("on disk\n")
      expect(lastToolResult(server)).toContain("Success. Updated the following files")

      yield* Effect.promise(() => client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "delete gone" }] }))
      expect(fs.existsSync(box.path("project/gone.txt"))).toBe(false)
      expect(client.writes).toHaveLength(2)
    }))
})
