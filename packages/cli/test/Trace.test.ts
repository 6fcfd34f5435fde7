import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { agent, events, project } from "./AgentProcess.js"

const { text, toolCall } = ScriptedModel

/** What a user reads in the JSON events, without the ids and times that differ between runs. */
const shape = (stdout: string) =>
  events(stdout).map((line) => ({
    type: line.type,
    ...(line.part?.type ? { part: line.part.type } : {}),
    ...(line.part?.text ? { text: line.part.text } : {}),
    ...(line.part?.state?.status ? { status: line.part.state.status, title: line.part.state.title } : {}),
    ...(line.type === "result" ? { result: line.text, status: line.status } : {})
  }))

const spanLines = (stderr: string) => stderr.split("\n").filter((line) => line.startsWith("span "))

describe("AGENT_TRACE", () => {
  it.scopedLive("AGENT_TRACE=1 prints each finished span on stderr, one line each, and leaves the JSON on stdout as it was", () =>
    Effect.gen(function*() {
      const turns = [[text("Reading."), toolCall("read", { filePath: "notes.txt" })], "The notes say hello."]
      const server = yield* MockOpenAIServer.start([...turns, ...turns])
      const box = yield* project(server.url, {}, { "project/notes.txt": "hello\n" })
      const args = ["run", "--format", "json", "--title", "Notes", "what do the notes say?"]
      const plain = yield* agent(box, args)
      expect(plain.code, plain.stderr).toBe(0)
      expect(spanLines(plain.stderr)).toEqual([])

      const traced = yield* agent(box, args, { env: { AGENT_TRACE: "1" } })
      expect(traced.code, traced.stderr).toBe(0)
      expect(shape(traced.stdout)).toEqual(shape(plain.stdout))
      expect(traced.stdout).not.toMatch(/^span /m)
      const spans = spanLines(traced.stderr)
      const calls = spans.filter((line) => line.startsWith("span LLMService.call "))
      expect(calls, traced.stderr).toHaveLength(2)
      for (const line of calls) {
        expect(line).toMatch(/^span LLMService\.call \d+\.\dms ok id=\w+ parent=\S+ /)
        expect(line).toMatch(/ session\.id="ses_\w+"/)
        expect(line).toMatch(/ agent="build"/)
        expect(line).toMatch(/ model\.id="\S+"/)
      }
      expect(spans.some((line) => line.startsWith("span SessionLoop.prompt "))).toBe(true)
    }))
})
