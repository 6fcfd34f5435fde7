import type { SessionID } from "@agent/domain"
import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { agent, events, project } from "./AgentProcess.js"

const { toolCall } = ScriptedModel

describe("agent session revert|unrevert", () => {
  it.scopedLive("undoes the files a run changed, leaves others alone, and puts them back", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start([
        [toolCall("write", { filePath: "notes.txt", content: "rewritten\n" })],
        "done"
      ])
      const box = yield* project(model.url, {}, { "project/notes.txt": "original\n", "project/other.txt": "untouched\n" })
      const notes = box.path("project/notes.txt")
      const run = yield* agent(box, ["run", "--format", "json", "rewrite the notes"])
      expect(run.code, run.stderr).toBe(0)
      expect(fs.readFileSync(notes, "utf8")).toBe("rewritten\n")
      const sessionID = events(run.stdout).at(-1)!.sessionID as SessionID

      const shown = yield* agent(box, ["session", "show", sessionID, "--format", "json"])
      expect(shown.code, shown.stderr).toBe(0)
      const first = (JSON.parse(shown.stdout) as any).messages[0].info.id as string

      const reverted = yield* agent(box, ["session", "revert", sessionID, first])
      expect(reverted.code, reverted.stderr).toBe(0)
      expect(reverted.stdout).toContain("reverted 1 file")
      expect(fs.readFileSync(notes, "utf8")).toBe("original\n")
      expect(fs.readFileSync(box.path("project/other.txt"), "utf8")).toBe("untouched\n")

      const restored = yield* agent(box, ["session", "unrevert", sessionID])
      expect(restored.code, restored.stderr).toBe(0)
      expect(fs.readFileSync(notes, "utf8")).toBe("rewritten\n")

      const unknown = yield* agent(box, ["session", "revert", sessionID, `msg_${"Z".repeat(26)}`])
      expect(unknown.code).toBe(2)
    }), 90_000)
})
