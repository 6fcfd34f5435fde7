import type { BusEvent, Message, Part, PermissionRequest } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { applyEvent, emptyState, rowStatus, sessionRows, type ViewState, type WireSession } from "../src/ViewState.js"

const session = (id: string, updated: number, extra: Record<string, unknown> = {}): WireSession =>
  ({ id, slug: id, projectID: "p", directory: "/p", title: `title ${id}`, version: "1", time: { created: updated, updated }, ...extra }) as unknown as WireSession

const assistant = (id: string, sessionID = "ses_1"): Message =>
  ({
    id,
    sessionID,
    role: "assistant",
    time: { created: 1 },
    parentID: "msg_0",
    providerID: "test",
    modelID: "m",
    agent: "build",
    mode: "build",
    path: { cwd: "/", root: "/" },
    cost: 0,
    tokens: { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } }
  }) as Message

const text = (id: string, value: string, messageID = "msg_2", sessionID = "ses_1"): Part =>
  ({ id, sessionID, messageID, type: "text", text: value }) as Part

const ask = (id: string, sessionID: string): PermissionRequest =>
  ({ id, sessionID, permission: "bash", patterns: ["make"], always: ["make *"], metadata: {}, time: { created: 1 } }) as unknown as PermissionRequest

const apply = (state: ViewState, ...events: ReadonlyArray<unknown>) => events.reduce<ViewState>((next, event) => applyEvent(next, event as BusEvent), state)

const open: ViewState = { ...emptyState, transcript: { sessionID: "ses_1", messages: [] } }

describe("applyEvent", () => {
  it("streams a part: message, part, deltas, final part; deltas of another session leave the state as it was", () => {
    const state = apply(
      open,
      { type: "message.updated", properties: { info: assistant("msg_2") } },
      { type: "message.part.updated", properties: { part: text("prt_1", "") } },
      { type: "message.part.delta", properties: { sessionID: "ses_1", messageID: "msg_2", partID: "prt_1", field: "text", delta: "Hel" } },
      { type: "message.part.delta", properties: { sessionID: "ses_1", messageID: "msg_2", partID: "prt_1", field: "text", delta: "lo" } }
    )
    expect(state.transcript!.messages[0]!.parts).toEqual([text("prt_1", "Hello")])
    const other = { type: "message.part.delta", properties: { sessionID: "ses_9", messageID: "msg_2", partID: "prt_1", field: "text", delta: "x" } }
    expect(applyEvent(state, other as BusEvent)).toBe(state)
    const final = apply(state, { type: "message.part.updated", properties: { part: text("prt_1", "Hello there") } })
    expect(final.transcript!.messages[0]!.parts).toEqual([text("prt_1", "Hello there")])
  })

  it("keeps parts and messages in id order and replaces by id (a replayed event does not duplicate)", () => {
    const state = apply(
      open,
      { type: "message.updated", properties: { info: assistant("msg_2") } },
      { type: "message.part.updated", properties: { part: text("prt_3", "c") } },
      { type: "message.part.updated", properties: { part: text("prt_1", "a") } },
      { type: "message.part.updated", properties: { part: text("prt_3", "c") } },
      { type: "message.updated", properties: { info: assistant("msg_1") } }
    )
    expect(state.transcript!.messages.map((entry) => entry.info.id)).toEqual(["msg_1", "msg_2"])
    expect(state.transcript!.messages[1]!.parts.map((part) => part.id)).toEqual(["prt_1", "prt_3"])
  })

  it("asks come and go; the session's status follows them", () => {
    const asked = apply(emptyState, { type: "permission.asked", properties: ask("per_1", "ses_1") })
    expect(rowStatus(asked, "ses_1")).toBe("waiting")
    const replied = apply(asked, { type: "permission.replied", properties: { sessionID: "ses_1", requestID: "per_1", reply: "once" } })
    expect(replied.permissions).toEqual({})
    expect(rowStatus(replied, "ses_1")).toBe("idle")
  })
})

describe("rowStatus", () => {
  const cases: ReadonlyArray<[string, ReadonlyArray<unknown>, string]> = [
    ["nothing known", [], "idle"],
    ["busy", [{ type: "session.status", properties: { sessionID: "s", status: { type: "busy" } } }], "running"],
    ["retrying", [{ type: "session.status", properties: { sessionID: "s", status: { type: "retry", attempt: 1, message: "x", next: 1 } } }], "running"],
    ["an ask outranks busy", [
      { type: "session.status", properties: { sessionID: "s", status: { type: "busy" } } },
      { type: "question.asked", properties: { id: "que_1", sessionID: "s", questions: [], time: { created: 1 } } }
    ], "waiting"],
    ["stopped by the step limit", [{ type: "prompt.finished", properties: { sessionID: "s", messageID: "m", reason: "steps", usage: { cost: 0, tokens: 0, steps: 3 } } }], "limit"],
    ["stopped by the budget", [{ type: "prompt.finished", properties: { sessionID: "s", messageID: "m", reason: "budget", usage: { cost: 0, tokens: 0, steps: 3 } } }], "limit"],
    ["failed", [{ type: "prompt.finished", properties: { sessionID: "s", messageID: "m", reason: "error", usage: { cost: 0, tokens: 0, steps: 1 } } }], "error"],
    ["a session error", [{ type: "session.error", properties: { sessionID: "s", error: { name: "X", data: { message: "boom" } } } }], "error"],
    ["a new run clears the last failure", [
      { type: "prompt.finished", properties: { sessionID: "s", messageID: "m", reason: "error", usage: { cost: 0, tokens: 0, steps: 1 } } },
      { type: "session.status", properties: { sessionID: "s", status: { type: "busy" } } },
      { type: "session.status", properties: { sessionID: "s", status: { type: "idle" } } }
    ], "idle"],
    ["aborted is not an error", [{ type: "prompt.finished", properties: { sessionID: "s", messageID: "m", reason: "aborted", usage: { cost: 0, tokens: 0, steps: 1 } } }], "idle"]
  ]
  for (const [name, events, expected] of cases) {
    it(name, () => expect(rowStatus(apply(emptyState, ...events), "s")).toBe(expected))
  }
})

describe("sessionRows", () => {
  const sessions = [
    session("a", 1, { title: "Fix the build" }),
    session("b", 3, { title: "Write docs" }),
    session("c", 2, { title: "explore", parentID: "a" }),
    session("d", 4, { title: "orphan child", parentID: "zzz" })
  ]
  it("lists newest first with children under their parent", () => {
    expect(sessionRows(sessions, "").map((row) => [row.session.id, row.depth])).toEqual([["d", 0], ["b", 0], ["a", 0], ["c", 1]])
  })
  it("searches titles, case-insensitively, keeping the parent of a matching child", () => {
    expect(sessionRows(sessions, "DOCS").map((row) => row.session.id)).toEqual(["b"])
    expect(sessionRows(sessions, "explore").map((row) => row.session.id)).toEqual(["a", "c"])
    expect(sessionRows(sessions, "nothing")).toEqual([])
  })
})
