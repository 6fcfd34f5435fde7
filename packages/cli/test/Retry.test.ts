import type { BusEvent, MessageID, PartID, SessionID } from "@agent/domain"
import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { jsonEvent } from "../src/JsonEvents.js"
import { agent, events, project } from "./AgentProcess.js"

const { delay, text, toolCall } = ScriptedModel
/** The provider drops the connection here: what was sent so far arrives, then the body breaks off. */
const cut = { error: new Error("connection dropped"), at: "stream" } as const

type Line = ReturnType<typeof events>[number]

/** What a client folding the json lines holds: each part by id at its latest, minus the ones taken back. */
const fold = (lines: ReadonlyArray<Line>) => {
  const parts = new Map<string, string>()
  for (const line of lines) {
    if (line.part) parts.set(line.part.id, line.part.type)
    if (line.type === "part_removed") parts.delete(line.partID)
  }
  return parts
}

/** The stored parts of the session's assistant messages that `--format json` prints. */
const storedParts = (exported: { messages: Array<{ info: { role: string }; parts: Array<Record<string, any>> }> }) => {
  const parts = new Map<string, string>()
  for (const message of exported.messages) {
    if (message.info.role !== "assistant") continue
    for (const part of message.parts) {
      const printed = part.type === "step-start" || part.type === "step-finish" ||
        (part.type === "text" && part.time?.end !== undefined && !part.synthetic) ||
        (part.type === "tool" && (part.state.status === "completed" || part.state.status === "error"))
      if (printed) parts.set(part.id, part.type)
    }
  }
  return parts
}

describe("agent run: retries", () => {
  it.scopedLive("a retried step prints one step_start, and its json lines add up to what the session stores", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        // The first attempt starts a text and a call, then the connection drops; the retry answers.
        [text("Reading."), toolCall("read", { filePath: "notes.txt" }), delay(300), cut],
        "The notes say hello."
      ])
      const box = yield* project(server.url, { retry: { delay: 20 } }, { "project/notes.txt": "hello\n" })
      const result = yield* agent(box, ["run", "--format", "json", "what do the notes say?"])
      expect(result.code, result.stderr).toBe(0)
      const lines = events(result.stdout)
      expect(lines.filter((line) => line.type === "step_start"), result.stdout).toHaveLength(1)
      expect(lines.filter((line) => line.type === "retry")).toEqual([
        expect.objectContaining({ attempt: 1, message: expect.stringContaining("cut off mid-answer") })
      ])
      expect(lines.at(-1)).toMatchObject({ type: "result", status: "completed", text: "The notes say hello." })

      const exported = yield* agent(box, ["session", "export", lines[0]!.sessionID])
      expect(exported.code, exported.stderr).toBe(0)
      const stored = storedParts(JSON.parse(exported.stdout))
      expect([...stored.values()]).toEqual(["step-start", "text", "step-finish"])
      expect(fold(lines)).toEqual(stored)
    }))

  it.scopedLive("a stream cut off mid-answer is retried with a visible line, and ends with an error naming the cut", () =>
    Effect.gen(function*() {
      const turns = () => [[text("The answer is"), cut], [text("The answer"), cut]]
      const server = yield* MockOpenAIServer.start(turns())
      const box = yield* project(server.url, { retry: { delay: 20, attempts: 1 } })
      const plain = yield* agent(box, ["run", "what is the answer?"])
      expect(plain.code).toBe(1)
      expect(plain.stderr).toMatch(/retrying in 0\.0 s: .*response stream was cut off mid-answer.*, attempt 1 of 1/)
      const final = plain.stderr.split("\n").filter((line) => line.startsWith("agent:"))
      expect(final, plain.stderr).toEqual([expect.stringMatching(/^agent: .*mock\/model-a: the response stream was cut off mid-answer, after \d+ events \(terminated\b[^)]*\)$/)])
      expect(plain.stderr).not.toMatch(/Failed to process successful response|HTTP 200/)
      expect(server.requests).toHaveLength(2)

      const jsonServer = yield* MockOpenAIServer.start(turns())
      const jsonBox = yield* project(jsonServer.url, { retry: { delay: 20, attempts: 1 } })
      const json = yield* agent(jsonBox, ["run", "--format", "json", "what is the answer?"])
      expect(json.code).toBe(1)
      const lines = events(json.stdout)
      expect(lines.map((line) => line.type)).toEqual(["init", "step_start", "retry", "error", "result"])
      expect(lines[2]).not.toHaveProperty("statusCode")
      expect(lines.at(-1)!.reason).toMatch(/cut off mid-answer/)
    }))
})

describe("--format json lines of a retried attempt", () => {
  const sessionID = "ses_json" as SessionID
  const tool = {
    id: "prt_tool" as PartID,
    sessionID,
    messageID: "msg_a" as MessageID,
    type: "tool" as const,
    callID: "call_1",
    tool: "read",
    state: { status: "completed" as const, input: {}, output: "x", title: "a.txt", metadata: {}, time: { start: 1, end: 2 } }
  }
  const removed = (partID: string) =>
    ({ type: "message.part.removed", properties: { sessionID, messageID: "msg_a", partID } }) as unknown as BusEvent

  it("a printed part that the retry discards is taken back once; an unprinted one is not mentioned", () => {
    const printed = new Set<string>()
    expect(jsonEvent(sessionID, { type: "message.part.updated", properties: { part: tool } } as BusEvent, printed)).toMatchObject({ type: "tool_use" })
    expect(jsonEvent(sessionID, removed("prt_tool"), printed)).toMatchObject({ type: "part_removed", partID: "prt_tool", messageID: "msg_a" })
    expect(jsonEvent(sessionID, removed("prt_tool"), printed)).toBeUndefined()
    expect(jsonEvent(sessionID, removed("prt_never_printed"), printed)).toBeUndefined()
  })
})
