import { type MockOpenAIServer, ScriptedModel, TestDatabase } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { json, lines, post, replicas, waitFor } from "./ClusterReplicas.js"

// The routes that start or change a run, sent to the replica that does not run the session: a
// command, a compaction, a revert, a question's answer or rejection all take effect on the owner
// (the run never executes on two replicas), and every replica's GET /session/status lists the run.

const { toolCall } = ScriptedModel
const CALLS = 2

const userText = (message: MockOpenAIServer.ChatCompletionRequest["messages"][number] | undefined) => JSON.stringify(message?.content ?? "")

/**
 * Each prompt (the last user message names it: `[s1]`) runs CALLS bash calls, each appending
 * `s1-<call> <replica>` to the log, then answers `done s1`. A request without tools is a compaction's.
 */
const perPrompt = (log: string, sleep: number) => (request: MockOpenAIServer.ChatCompletionRequest) => {
  if ((request.tools ?? []).length === 0) return "Summary: the session ran its steps."
  const users = request.messages.filter((message) => message.role === "user")
  const last = users.at(-1)
  const label = /\[(s\d+)\]/.exec(userText(last))?.[1] ?? "s?"
  const calls = request.messages.slice(request.messages.lastIndexOf(last!)).filter((message) => message.role === "tool").length
  if (calls >= CALLS) return `done ${label}`
  return [toolCall("bash", { command: `sleep ${sleep}; echo "${label}-${calls} $AGENT_TEST_REPLICA" >> ${log}`, description: `step ${calls}` })]
}

/** A session `[qN]` writes its line from one bash call, asks which color, then answers with the tool's result. */
const asking = (log: string) => (request: MockOpenAIServer.ChatCompletionRequest) => {
  const label = /\[(q\d+)\]/.exec(userText(request.messages.find((message) => message.role === "user")))?.[1] ?? "q?"
  const tools = request.messages.filter((message) => message.role === "tool")
  if (tools.length === 0) return [toolCall("bash", { command: `echo "${label}-0 $AGENT_TEST_REPLICA" >> ${log}`, description: "say where" })]
  if (tools.length === 1) {
    return [toolCall("question", {
      questions: [{
        question: `Which color for ${label}?`,
        header: "Color",
        options: [{ label: "Blue", description: "the blue one" }, { label: "Red", description: "the red one" }]
      }]
    })]
  }
  return `done ${label}: ${JSON.stringify(tools.at(-1)?.content ?? "")}`
}

/** The `data:` frames of an event-stream response, one at a time. */
const frames = (response: Response) => {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ""
  return {
    next: Effect.promise(async () => {
      for (;;) {
        const end = buffer.indexOf("\n\n")
        if (end >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const data = block.split("\n").find((line) => line.startsWith("data: "))
          if (data !== undefined) return JSON.parse(data.slice(6)) as Record<string, any>
          continue
        }
        const chunk = await reader.read()
        if (chunk.done) throw new Error(`the stream ended; left: ${buffer}`)
        buffer += chunk.value
      }
    })
  }
}

const createSession = (url: string) => json(`${url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
const answer = (response: Response) => Effect.promise(async () => ({ status: response.status, body: await response.json().catch(() => undefined) as any }))
const textOf = (message: any) => message.parts.filter((part: any) => part.type === "text").map((part: any) => part.text).join("")

/** Which replica runs the session labelled `label`: the one its first bash call wrote from. */
const ownerOf = (log: string, label: string, names: ReadonlyArray<string>) =>
  waitFor(`the first call of ${label}`, Effect.sync(() => lines(log).find(([line]) => line === `${label}-0`)?.[1])).pipe(
    Effect.map((owner) => ({ owner, other: names.find((name) => name !== owner)! }))
  )

describe.runIf(TestDatabase.postgresRuns())("agent serve replicas: routes sent to the replica that does not run the session", () => {
  it.scopedLive("status, revert, summarize and /command through the other replica act on the owner's run", () =>
    Effect.gen(function*() {
      const { log, model, servers } = yield* replicas(["A", "B"], 1.5, {}, {
        command: { steps: { template: "[s1] run the command's steps", description: "runs two steps" } }
      }, perPrompt)
      const url = (name: string) => servers[name]!.url
      const report = () => [`calls: ${fs.readFileSync(log, "utf8")}`, `A: ${servers.A!.stderr()}`, `B: ${servers.B!.stderr()}`, `model: ${model.requests.length}`].join("\n")
      const session = (yield* createSession(url("A"))).id as string
      expect((yield* post(`${url("A")}/session/${session}/prompt_async`, { parts: [{ type: "text", text: "[s0] run the steps" }] })).status).toBe(204)
      const { other, owner } = yield* ownerOf(log, "s0", ["A", "B"])

      // Both replicas list the run, the one that does not run it included.
      for (const name of [other, owner]) {
        const statuses = yield* json(`${url(name)}/session/status`)
        expect(statuses[session]?.type, `status on ${name} (${owner} runs it): ${JSON.stringify(statuses)}`).toBe("busy")
      }
      // Revert is refused while the session runs, also by the replica that does not run it.
      const first = (yield* json(`${url(other)}/session/${session}/message`))[0].info.id
      const busy = yield* answer(yield* post(`${url(other)}/session/${session}/revert`, { messageID: first }))
      expect(busy.status, JSON.stringify(busy.body)).toBe(409)

      // A compaction asked through the other replica waits for the run, as on one process.
      const summarized = yield* answer(yield* post(`${url(other)}/session/${session}/summarize`, {}))
      expect(summarized.status, `${JSON.stringify(summarized.body)}\n${report()}`).toBe(200)
      const messages = yield* json(`${url(other)}/session/${session}/message`)
      const done = messages.findIndex((message: any) => message.info.role === "assistant" && textOf(message) === "done s0")
      const summary = messages.findIndex((message: any) => message.info.role === "assistant" && message.info.summary === true)
      expect(done, report()).toBeGreaterThan(-1)
      expect(summary, "the summary comes after the run's answer").toBeGreaterThan(done)
      expect(lines(log).filter(([line]) => line.startsWith("s0-"))).toEqual([["s0-0", owner], ["s0-1", owner]])

      yield* waitFor("the run to leave every replica's statuses", Effect.forEach([owner, other], (name) => json(`${url(name)}/session/status`)).pipe(
        Effect.map((all) => all.every((statuses) => statuses[session] === undefined) ? true : undefined)
      ))

      // A command through the other replica runs on the owner and answers with the run's message.
      const command = yield* answer(yield* post(`${url(other)}/session/${session}/command`, { command: "steps", arguments: "" }))
      expect(command.status, JSON.stringify(command.body)).toBe(200)
      expect(command.body.info.role).toBe("assistant")
      expect(textOf(command.body)).toBe("done s1")
      expect(lines(log).filter(([line]) => line.startsWith("s1-")), report()).toEqual([["s1-0", owner], ["s1-1", owner]])
      const events = (yield* json(`${url(other)}/session/${session}/message`)).filter((message: any) => message.info.role === "user")
      expect(events.some((message: any) => textOf(message).includes("[s1] run the command's steps"))).toBe(true)

      // Idle now: the revert goes through, and unrevert after it.
      const commandMessage = events.find((message: any) => textOf(message).includes("[s1]")).info.id
      const reverted = yield* answer(yield* post(`${url(other)}/session/${session}/revert`, { messageID: commandMessage }))
      expect(reverted.status, JSON.stringify(reverted.body)).toBe(200)
      expect(reverted.body.id).toBe(session)
      expect(reverted.body.revert?.messageID).toBe(commandMessage)
      const unreverted = yield* answer(yield* post(`${url(owner)}/session/${session}/unrevert`, {}))
      expect(unreverted.status, JSON.stringify(unreverted.body)).toBe(200)
      expect(unreverted.body.revert).toBeUndefined()

      // Starting together, the replicas moved shards between them without pg's query-queue warning.
      for (const name of ["A", "B"]) expect(servers[name]!.stderr()).not.toContain("already executing a query")
    }), 90_000)

  it.scopedLive("a question asked on one replica: answered through the other, the answer reaches the model; rejected through the other, the run ends", () =>
    Effect.gen(function*() {
      const { log, model, servers } = yield* replicas(["A", "B"], 0, {}, {}, asking)
      const url = (name: string) => servers[name]!.url
      const sessions = [(yield* createSession(url("A"))).id as string, (yield* createSession(url("A"))).id as string]
      for (const [index, id] of sessions.entries()) {
        yield* post(`${url("A")}/session/${id}/prompt_async`, { parts: [{ type: "text", text: `[q${index}] ask me` }] })
      }
      const pending = (name: string, sessionID: string) =>
        json(`${url(name)}/question`).pipe(Effect.map((asks: Array<any>) => asks.find((ask) => ask.sessionID === sessionID)))

      // q0: answered through the replica that does not run it.
      const q0 = yield* ownerOf(log, "q0", ["A", "B"])
      const asked0 = yield* waitFor("q0's question, listed by the other replica", pending(q0.other, sessions[0]!))
      expect(asked0.questions[0].question).toBe("Which color for q0?")
      const replied = yield* answer(yield* post(`${url(q0.other)}/question/${asked0.id}/reply`, { answers: [["Red"]] }))
      expect(replied.status, JSON.stringify(replied.body)).toBe(200)
      const final0 = yield* waitFor("q0 to finish", json(`${url(q0.other)}/session/${sessions[0]}/message`).pipe(
        Effect.map((messages) => messages.find((message: any) => textOf(message).startsWith("done q0")))
      ))
      expect(textOf(final0)).toContain(`\\"Which color for q0?\\"=\\"Red\\"`)
      // The model got the answer as the question call's result.
      const toolResults = model.requests.flatMap((request) =>
        request.messages.filter((message) => message.role === "tool").map((message) => typeof message.content === "string" ? message.content : JSON.stringify(message.content))
      )
      expect(toolResults.some((content) => content.includes(`"Which color for q0?"="Red"`))).toBe(true)

      // q1: rejected through the replica that does not run it; its run ends there, asking nothing more.
      const q1 = yield* ownerOf(log, "q1", ["A", "B"])
      const asked1 = yield* waitFor("q1's question, listed by the other replica", pending(q1.other, sessions[1]!))
      const requestsBefore = model.requests.length
      const rejected = yield* answer(yield* post(`${url(q1.other)}/question/${asked1.id}/reject`, {}))
      expect(rejected.status, JSON.stringify(rejected.body)).toBe(200)
      const question = yield* waitFor("q1's question call to end", json(`${url(q1.other)}/session/${sessions[1]}/message`).pipe(
        Effect.map((messages) =>
          messages.flatMap((message: any) => message.parts).find((part: any) => part.type === "tool" && part.tool === "question" && part.state.status === "error")
        )
      ))
      expect(question.state.error).toMatch(/dismissed/i)
      yield* waitFor("q1's run to end on every replica", Effect.forEach(["A", "B"], (name) => json(`${url(name)}/session/status`)).pipe(
        Effect.map((all) => all.every((statuses) => statuses[sessions[1]!] === undefined) ? true : undefined)
      ))
      expect(model.requests.slice(requestsBefore).some((request) => userText(request.messages.find((m) => m.role === "user")).includes("[q1]"))).toBe(false)
      for (const name of ["A", "B"]) expect(yield* json(`${url(name)}/question`)).toEqual([])
      // Each session's bash call ran once, on its owner.
      expect(lines(log).sort()).toEqual([["q0-0", q0.owner], ["q1-0", q1.owner]])
    }), 90_000)

  it.scopedLive("another process's asks held on a replica (POST /permission/remote) are answered through it, whoever owns their sessions", () =>
    Effect.gen(function*() {
      const { servers } = yield* replicas(["A", "B"], 0)
      const A = servers.A!.url
      // Six sessions of another process: their entities are spread over both replicas, the asks all held on A.
      const sessionIDs = Array.from({ length: 6 }, (_, index) => `ses_remote${String(index).padStart(20, "0")}`)
      const streams = yield* Effect.forEach(sessionIDs, (sessionID) =>
        Effect.promise(() =>
          fetch(`${A}/permission/remote`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ sessionID, permission: "bash", patterns: ["git push"], always: ["git push *"], timeout: 60 })
          })
        ).pipe(Effect.map((response) => ({ sessionID, frames: frames(response) }))))
      const asked = yield* Effect.forEach(streams, ({ frames: read }) => read.next)
      // Every replica lists them.
      yield* waitFor("the held asks on B's list", json(`${servers.B!.url}/permission`).pipe(
        Effect.map((asks: Array<any>) => asks.length === sessionIDs.length ? true : undefined)
      ))
      for (const [index, frame] of asked.entries()) {
        expect(frame.type).toBe("asked")
        const replied = yield* answer(yield* post(`${A}/permission/${frame.id}/reply`, { reply: "once" }))
        expect(replied.status, `ask of ${sessionIDs[index]}: ${JSON.stringify(replied.body)}`).toBe(200)
        expect(yield* streams[index]!.frames.next).toEqual({ type: "replied", reply: "once" })
      }
      for (const url of [A, servers.B!.url]) expect(yield* json(`${url}/permission`)).toEqual([])
    }), 60_000)
})
