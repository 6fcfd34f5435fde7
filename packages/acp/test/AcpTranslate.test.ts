import type { BusEvent, MessageID, PartID, SessionID, ToolPart } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { planOf, promptParts, stopReasonOf, toolContent, toolKind, toolLocations } from "../src/AcpTranslate.js"
import { makeView, updatesOf } from "../src/AcpView.js"

const ids = { id: "prt_1" as PartID, sessionID: "ses_1" as SessionID, messageID: "msg_1" as MessageID }

const toolPart = (tool: string, state: ToolPart["state"]): ToolPart => ({ ...ids, type: "tool", callID: "call_1", tool, state })

describe("toolKind", () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["read", "read"], ["list", "read"], ["edit", "edit"], ["write", "edit"], ["apply_patch", "edit"],
    ["glob", "search"], ["grep", "search"], ["bash", "execute"], ["webfetch", "fetch"],
    ["todowrite", "think"], ["task", "think"], ["fixture_ok", "other"], ["question", "other"]
  ]
  for (const [tool, kind] of cases) it(`${tool} is ${kind}`, () => expect(toolKind(tool)).toBe(kind))
})

describe("toolLocations", () => {
  it("resolves a file argument against the session's directory, with its line", () =>
    expect(toolLocations("read", { filePath: "src/a.ts", offset: 10 }, "/p")).toEqual([{ path: "/p/src/a.ts", line: 10 }]))
  it("takes apply_patch's files from its metadata", () =>
    expect(toolLocations("apply_patch", { patchText: "" }, "/p", { files: [{ filepath: "/p/a" }, { filepath: "/p/b" }] })).toEqual([{ path: "/p/a" }, { path: "/p/b" }]))
  it("a search names its directory", () => expect(toolLocations("grep", { pattern: "x", path: "lib" }, "/p")).toEqual([{ path: "/p/lib" }]))
  it("bash touches no known file", () => expect(toolLocations("bash", { command: "ls" }, "/p")).toEqual([]))
})

describe("toolContent", () => {
  const time = { start: 1, end: 2 }
  it("an edit is a diff of its strings", () =>
    expect(toolContent(toolPart("edit", { status: "completed", input: { filePath: "a.txt", oldString: "a", newString: "b" }, output: "ok", title: "a.txt", metadata: {}, time }), "/p"))
      .toEqual([{ type: "diff", path: "/p/a.txt", oldText: "a", newText: "b" }]))
  it("a write is a diff from nothing", () =>
    expect(toolContent(toolPart("write", { status: "completed", input: { filePath: "/abs/n.txt", content: "x" }, output: "ok", title: "n", metadata: {}, time }), "/p"))
      .toEqual([{ type: "diff", path: "/abs/n.txt", oldText: null, newText: "x" }]))
  it("other tools show their output, failures their error", () => {
    expect(toolContent(toolPart("bash", { status: "completed", input: { command: "ls" }, output: "a\n", title: "ls", metadata: {}, time }), "/p"))
      .toEqual([{ type: "content", content: { type: "text", text: "a\n" } }])
    expect(toolContent(toolPart("bash", { status: "error", input: { command: "ls" }, error: "boom", time }), "/p"))
      .toEqual([{ type: "content", content: { type: "text", text: "boom" } }])
  })
  describe("a command in the editor's terminal", () => {
    const terminal = [{ type: "terminal", terminalId: "term_1" }]
    const text = (value: string) => [{ type: "content", content: { type: "text", text: value } }]
    const running = toolPart("bash", { status: "running", input: { command: "ls" }, metadata: { terminalId: "term_1" }, time: { start: 1 } })
    const done = toolPart("bash", { status: "completed", input: { command: "ls" }, output: "a\n", title: "ls", metadata: { terminalId: "term_1", exit: 0 }, time })
    const failed = toolPart("bash", { status: "error", input: { command: "ls" }, error: "aborted", metadata: { terminalId: "term_1" }, time })
    const cases: ReadonlyArray<readonly [string, ToolPart, boolean, unknown]> = [
      ["running, live: the terminal", running, true, terminal],
      ["done, live: the terminal", done, true, terminal],
      ["done, replayed (the terminal is gone): its output", done, false, text("a\n")],
      ["running, replayed: nothing", running, false, []],
      ["failed: the error", failed, true, text("aborted")]
    ]
    for (const [name, part, live, expected] of cases) it(name, () => expect(toolContent(part, "/p", live)).toEqual(expected))
  })
})

describe("stopReasonOf", () => {
  const cases: ReadonlyArray<readonly [Parameters<typeof stopReasonOf>[0], Parameters<typeof stopReasonOf>[1], string | undefined]> = [
    ["completed", "stop", "end_turn"],
    ["completed", "length", "max_tokens"],
    ["completed", "content-filter", "refusal"],
    ["aborted", undefined, "cancelled"],
    ["steps", undefined, "max_turn_requests"],
    ["rejected", undefined, "end_turn"],
    ["error", "length", "max_tokens"],
    ["error", undefined, undefined],
    ["budget", undefined, undefined],
    ["duration", undefined, undefined],
    ["stall", undefined, undefined]
  ]
  for (const [reason, finish, expected] of cases) {
    it(`${reason}${finish ? ` (${finish})` : ""} is ${expected ?? "an error"}`, () => expect(stopReasonOf(reason, finish)).toBe(expected))
  }
})

describe("planOf", () => {
  it("keeps order, status and priority; leaves out cancelled items", () =>
    expect(planOf([
      { content: "a", status: "completed", priority: "high" },
      { content: "b", status: "cancelled", priority: "low" },
      { content: "c", status: "pending", priority: "medium" }
    ])).toEqual({ sessionUpdate: "plan", entries: [{ content: "a", status: "completed", priority: "high" }, { content: "c", status: "pending", priority: "medium" }] }))
})

describe("promptParts", () => {
  it("text, images, embedded resources and links", () =>
    expect(promptParts([
      { type: "text", text: "look" },
      { type: "image", mimeType: "image/png", data: "AAA" },
      { type: "resource", resource: { uri: "file:///p/a.ts", text: "code" } },
      { type: "resource_link", name: "b.ts", uri: "file:///p/b.ts" }
    ])).toEqual([
      { type: "text", text: "look" },
      { type: "file", mime: "image/png", url: "data:image/png;base64,AAA" },
      { type: "text", text: "<file path=\"/p/a.ts\">\ncode\n</file>", synthetic: true },
      { type: "text", text: "@/p/b.ts", synthetic: false }
    ]))
})

describe("updatesOf", () => {
  const assistant = {
    type: "message.updated",
    properties: { info: { id: ids.messageID, sessionID: ids.sessionID, role: "assistant" } }
  } as unknown as BusEvent
  const textPart = (text: string) => ({ type: "message.part.updated", properties: { part: { ...ids, type: "text", text } } }) as BusEvent
  const delta = (text: string) =>
    ({ type: "message.part.delta", properties: { sessionID: ids.sessionID, messageID: ids.messageID, partID: ids.id, field: "text", delta: text } }) as BusEvent

  it("sends each character once: deltas as they come, and what a full part adds", () => {
    const view = makeView()
    const sent = [assistant, textPart(""), delta("Hel"), delta("lo"), textPart("Hello, world")].flatMap((event) => updatesOf(view, event, "/p"))
    expect(sent.map((update) => (update as { content: { text: string } }).content.text)).toEqual(["Hel", "lo", ", world"])
  })
  it("the user's own parts are not echoed", () => {
    const view = makeView()
    const user = { type: "message.updated", properties: { info: { id: ids.messageID, sessionID: ids.sessionID, role: "user" } } } as unknown as BusEvent
    expect([user, textPart("my prompt")].flatMap((event) => updatesOf(view, event, "/p"))).toEqual([])
  })
  it("a tool call is announced once, then updated", () => {
    const view = makeView()
    const part = (status: "pending" | "running") =>
      ({ type: "message.part.updated", properties: { part: toolPart("read", status === "pending" ? { status, input: {}, raw: "" } : { status, input: { filePath: "a" }, time: { start: 1 } }) } }) as BusEvent
    const kinds = [assistant, part("pending"), part("running")].flatMap((event) => updatesOf(view, event, "/p")).map((update) => update.sessionUpdate)
    expect(kinds).toEqual(["tool_call", "tool_call_update"])
  })
})
