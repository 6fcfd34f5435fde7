import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { agent, events, project, serve } from "./AgentProcess.js"

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

  it.scopedLive("agent serve prints the spans of the requests it serves under AGENT_TRACE=1, and none without", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([])
      const box = yield* project(server.url)
      const create = (url: string) =>
        Effect.promise(() =>
          fetch(`${url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }).then((r) => r.json())
        )
      const traced = yield* serve(box, [], { AGENT_TRACE: "1" })
      const session = (yield* create(traced.url)) as { id: string }
      const deadline = Date.now() + 10_000
      while (!spanLines(traced.stderr()).some((line) => line.startsWith("span SessionStore.create ")) && Date.now() < deadline) {
        yield* Effect.sleep("50 millis")
      }
      const created = spanLines(traced.stderr()).find((line) => line.startsWith("span SessionStore.create "))
      expect(created, traced.stderr()).toMatch(/^span SessionStore\.create \d+\.\dms ok /)
      expect(session.id).toMatch(/^ses_/)

      const plain = yield* serve(box)
      yield* create(plain.url)
      yield* Effect.sleep("200 millis")
      expect(spanLines(plain.stderr())).toEqual([])
    }))
})
