import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { editor, initialize, project } from "./AcpClient.js"

const { toolCall } = ScriptedModel

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
})
