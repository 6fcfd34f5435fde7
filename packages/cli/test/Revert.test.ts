import type { SessionID } from "@agent/domain"
import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { agent, events, project } from "./AgentProcess.js"

const { toolCall } = ScriptedModel

describe("agent session show (changes) and revert|unrevert", () => {
  it.scopedLive("show lists the files a run changed (a subagent's too) and --diff prints them; revert undoes them, leaves others alone, unrevert puts them back", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start([
        [toolCall("write", { filePath: "notes.txt", content: "rewritten\nsecond line\n" })],
        [toolCall("task", { description: "Write a file", prompt: "write the child file", subagent_type: "general" })],
        // the subagent's turns
        [toolCall("write", { filePath: "child.txt", content: "from the child\n" })],
        "child done",
        "done"
      ])
      const box = yield* project(model.url, {}, { "project/notes.txt": "original\n", "project/other.txt": "untouched\n" })
      const notes = box.path("project/notes.txt")
      const child = box.path("project/child.txt")
      const run = yield* agent(box, ["run", "--format", "json", "rewrite the notes"])
      expect(run.code, run.stderr).toBe(0)
      expect(fs.readFileSync(notes, "utf8")).toBe("rewritten\nsecond line\n")
      expect(fs.readFileSync(child, "utf8")).toBe("from the child\n")
      const sessionID = events(run.stdout).at(-1)!.sessionID as SessionID

      const summary = yield* agent(box, ["session", "show", sessionID])
      expect(summary.code, summary.stderr).toBe(0)
      expect(summary.stdout).toMatch(/^changes {3}2 files, \+3 -1 {3}\(subagent sessions included\)\n {10}A {2}\+1 -0 {2}child\.txt\n {10}M {2}\+2 -1 {2}notes\.txt$/m)
      expect(summary.stdout).not.toContain("@@")

      const withDiff = yield* agent(box, ["session", "show", sessionID, "--diff"])
      expect(withDiff.code, withDiff.stderr).toBe(0)
      const diffText = withDiff.stdout.slice(withDiff.stdout.indexOf("\n── changes\n"))
      expect(diffText).toContain("--- a/notes.txt\n+++ b/notes.txt\n@@ -1,1 +1,2 @@\n-original\n+rewritten\n+second line")
      expect(diffText).toContain("--- a/child.txt\n+++ b/child.txt\n@@ -0,0 +1,1 @@\n+from the child")

      const shown = yield* agent(box, ["session", "show", sessionID, "--format", "json", "--diff"])
      expect(shown.code, shown.stderr).toBe(0)
      const data = JSON.parse(shown.stdout) as any
      expect(data.changes.map((change: any) => [change.file, change.status, change.additions, change.deletions])).toEqual([
        ["child.txt", "added", 1, 0],
        ["notes.txt", "modified", 2, 1]
      ])
      expect(data.changes[1].patch).toContain("-original\n+rewritten\n")
      const first = data.messages[0].info.id as string

      const reverted = yield* agent(box, ["session", "revert", sessionID, first])
      expect(reverted.code, reverted.stderr).toBe(0)
      expect(reverted.stdout).toContain("reverted 2 files")
      expect(fs.readFileSync(notes, "utf8")).toBe("original\n")
      expect(fs.existsSync(child)).toBe(false)
      expect(fs.readFileSync(box.path("project/other.txt"), "utf8")).toBe("untouched\n")
      const afterRevert = yield* agent(box, ["session", "show", sessionID])
      expect(afterRevert.stdout).toMatch(/^changes {3}none$/m)
      expect(afterRevert.stdout).toMatch(new RegExp(`^reverted {2}from ${first} on; \`agent session unrevert ${sessionID}\` puts it back$`, "m"))

      const restored = yield* agent(box, ["session", "unrevert", sessionID])
      expect(restored.code, restored.stderr).toBe(0)
      expect(fs.readFileSync(notes, "utf8")).toBe("rewritten\nsecond line\n")
      expect(fs.readFileSync(child, "utf8")).toBe("from the child\n")

      const unknown = yield* agent(box, ["session", "revert", sessionID, `msg_${"Z".repeat(26)}`])
      expect(unknown.code).toBe(2)
    }), 90_000)
})
