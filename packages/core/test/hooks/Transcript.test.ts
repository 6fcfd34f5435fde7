import type { MessageWithParts } from "@agent/domain"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import * as Transcript from "../../src/hooks/Transcript.js"

const context = { sessionID: "ses_1", cwd: "/project", version: "0.0.0", mcpServers: [] }

// Only the fields the transcript reads: the rest of a stored message does not reach it.
const user = (id: string, text: string) =>
  ({ info: { id, role: "user", time: { created: 1_000 } }, parts: [{ type: "text", text }] }) as unknown as MessageWithParts

const assistant = (id: string, tool: { status: "running" | "completed"; output?: string }, completed: boolean) =>
  ({
    info: { id, role: "assistant", modelID: "m", time: { created: 2_000, ...(completed ? { completed: 3_000 } : {}) }, ...(completed ? { finish: "tool-calls" } : {}) },
    parts: [
      { type: "text", text: `calling from ${id}` },
      { type: "tool", callID: `call-${id}`, tool: "bash", state: { status: tool.status, input: { command: "ls" }, ...(tool.output ? { output: tool.output } : {}) } }
    ]
  }) as unknown as MessageWithParts

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})
const fileIn = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-transcript-"))
  dirs.push(dir)
  return path.join(dir, "transcripts", "ses_1.jsonl")
}

/** A session as it grows: each step completes the last assistant message and starts a new one. */
const stepsOf = (count: number) => {
  const history: Array<MessageWithParts> = [user("msg_u", "go")]
  const steps: Array<Array<MessageWithParts>> = []
  for (let step = 0; step < count; step++) {
    if (step > 0) history[history.length - 1] = assistant(`msg_a${step - 1}`, { status: "completed", output: `out ${step - 1} ✓` }, true)
    history.push(assistant(`msg_a${step}`, { status: "running" }, false))
    steps.push([...history])
  }
  return steps
}

describe("Transcript.write", () => {
  it("leaves, after every write of a growing session, exactly what a whole render gives", () => {
    const file = fileIn()
    const state = Transcript.emptyFile()
    for (const messages of stepsOf(12)) {
      Transcript.write(file, messages, context, state)
      expect(fs.readFileSync(file, "utf8")).toBe(Transcript.render(messages, context))
    }
    const lines = fs.readFileSync(file, "utf8").trim().split("\n").map((line) => JSON.parse(line))
    // user, then per completed step its assistant line and its results line, then the running step.
    expect(lines).toHaveLength(1 + 11 * 2 + 1)
    expect(lines[2]).toMatchObject({ type: "user", parentUuid: "msg_a0", message: { content: [{ type: "tool_result", content: "out 0 ✓" }] } })
    expect(lines[3]).toMatchObject({ type: "assistant", parentUuid: "msg_a0-results" })
  })

  it("appends rather than replacing the file once it holds the settled messages", () => {
    const file = fileIn()
    const state = Transcript.emptyFile()
    const steps = stepsOf(3)
    Transcript.write(file, steps[0]!, context, state)
    const inode = fs.statSync(file).ino
    Transcript.write(file, steps[1]!, context, state)
    Transcript.write(file, steps[2]!, context, state)
    expect(fs.statSync(file).ino).toBe(inode)
    expect(fs.readFileSync(file, "utf8")).toBe(Transcript.render(steps[2]!, context))
  })

  it.each([
    ["earlier messages were dropped (a revert)", (_file: string, steps: Array<Array<MessageWithParts>>) => steps[1]!],
    ["the file was deleted", (file: string, steps: Array<Array<MessageWithParts>>) => (fs.rmSync(file), steps[5]!)],
    ["someone else appended to the file", (file: string, steps: Array<Array<MessageWithParts>>) => (fs.appendFileSync(file, "{}\n"), steps[5]!)],
    ["someone else cut the file", (file: string, steps: Array<Array<MessageWithParts>>) => (fs.truncateSync(file, 10), steps[4]!)]
  ])("writes the whole transcript again when %s", (_name, change) => {
    const file = fileIn()
    const state = Transcript.emptyFile()
    const steps = stepsOf(6)
    for (const messages of steps.slice(0, 5)) Transcript.write(file, messages, context, state)
    const next = change(file, steps)
    Transcript.write(file, next, context, state)
    expect(fs.readFileSync(file, "utf8")).toBe(Transcript.render(next, context))
    Transcript.write(file, steps[5]!, context, state)
    expect(fs.readFileSync(file, "utf8")).toBe(Transcript.render(steps[5]!, context))
  })

  it("writes an empty file for a session without messages, then its first messages", () => {
    const file = fileIn()
    const state = Transcript.emptyFile()
    Transcript.write(file, [], context, state)
    expect(fs.readFileSync(file, "utf8")).toBe("")
    Transcript.write(file, stepsOf(1)[0]!, context, state)
    expect(fs.readFileSync(file, "utf8").split("\n")).toHaveLength(3)
  })
})
