import type { Part } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { stepTouch } from "../../src/snapshot/StepTouch.js"

/** A tool part as the session stores it, after the call failed (no result metadata). */
const failedCall = (tool: string, input: Record<string, unknown>) =>
  ({
    id: "prt_1",
    sessionID: "ses_1",
    messageID: "msg_1",
    type: "tool",
    callID: "call_1",
    tool,
    state: { status: "error", input, error: "failed", time: { start: 0, end: 1 } }
  }) as unknown as Part

describe("stepTouch", () => {
  const listed = () => ({ fileEffects: "listed" as const })

  it("names the file of an edit called with filePath or with Claude Code's file_path", () => {
    expect(stepTouch([failedCall("edit", { filePath: "a.txt" })], listed, "/p")).toEqual({ kind: "paths", paths: ["/p/a.txt"] })
    expect(stepTouch([failedCall("edit", { file_path: "b.txt" })], listed, "/p")).toEqual({ kind: "paths", paths: ["/p/b.txt"] })
    // Without a name, the step's effect on the files is unknown.
    expect(stepTouch([failedCall("edit", { path: "c.txt" })], listed, "/p")).toEqual({ kind: "unknown" })
  })
})
