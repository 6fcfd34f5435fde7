import { MockOpenAIServer, OtlpReceiver, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { agent, events, project, serve } from "./AgentProcess.js"

const { text, toolCall } = ScriptedModel

/** Attributes that carry prompt or output text: exported only under `telemetry.log_content`. */
const CONTENT_KEYS = [
  "gen_ai.input.messages",
  "gen_ai.output.messages",
  "gen_ai.system_instructions",
  "gen_ai.tool.call.arguments",
  "gen_ai.tool.call.result"
]

const PROMPT = "what do the secret notes say?"
const NOTES = "the notes hold a zebra\n"

/** A run that reads a file, hands a task to the general subagent, and answers. */
const turns = () => [
  [text("Reading."), toolCall("read", { filePath: "notes.txt" })],
  [toolCall("task", { description: "Check notes", prompt: "check the notes again", subagent_type: "general" })],
  "The child agent agrees.",
  "The notes mention a zebra."
]

const otelEnv = (receiver: OtlpReceiver.OtlpReceiver, extra: Record<string, string> = {}) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  OTEL_SERVICE_NAME: "agent-under-test",
  OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test,team=a%20b",
  OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20t0ken",
  ...extra
})

const runArgs = ["run", "--format", "json", "--title", "Notes", PROMPT]

const sessionOf = (stdout: string): string => {
  const line = events(stdout).find((event) => typeof event.sessionID === "string" || typeof event.part?.sessionID === "string")
  return (line?.sessionID ?? line?.part?.sessionID) as string
}

describe("OpenTelemetry export", () => {
  it.scopedLive("agent run exports the run's GenAI span tree and its metrics before it exits, without content by default", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start(turns())
      const box = yield* project(model.url, {}, { "project/notes.txt": NOTES })
      const receiver = yield* OtlpReceiver.start
      const result = yield* agent(box, runArgs, { env: otelEnv(receiver) })
      expect(result.code, result.stderr).toBe(0)
      const sessionID = sessionOf(result.stdout)
      expect(sessionID).toMatch(/^ses_/)

      // Everything arrived before the process ended: no waiting here.
      const traceRequests = receiver.requests.filter((request) => request.path === "/v1/traces")
      expect(traceRequests.length).toBeGreaterThan(0)
      expect(traceRequests[0]!.headers.authorization).toBe("Bearer t0ken")
      const spans = receiver.spans()
      expect(spans[0]!.resource).toMatchObject({ "service.name": "agent-under-test", "deployment.environment": "test", team: "a b" })

      const runs = spans.filter((span) => span.name.startsWith("invoke_agent"))
      expect(runs.map((span) => span.name).sort()).toEqual(["invoke_agent build", "invoke_agent general"])
      const parentRun = runs.find((span) => span.name === "invoke_agent build")!
      expect(parentRun.attributes).toMatchObject({
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "build",
        "gen_ai.conversation.id": sessionID,
        "gen_ai.provider.name": "mock",
        "gen_ai.request.model": "model-a",
        "agent.run.stop_reason": "completed"
      })

      // Every model call is a `chat` span under its run, with usage.
      const chats = spans.filter((span) => span.name.startsWith("chat "))
      expect(chats).toHaveLength(4)
      for (const chat of chats) {
        expect(chat.name).toBe("chat model-a")
        expect(chat.kind).toBe(3) // CLIENT
        expect(chat.attributes).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.provider.name": "mock", "gen_ai.request.model": "model-a" })
        expect(chat.attributes["gen_ai.usage.input_tokens"]).toEqual(expect.any(Number))
        expect(chat.attributes["gen_ai.usage.output_tokens"]).toEqual(expect.any(Number))
        expect(OtlpReceiver.nearest(spans, chat, "invoke_agent")).toBeDefined()
      }
      expect(chats.filter((chat) => OtlpReceiver.nearest(spans, chat, "invoke_agent") === parentRun)).toHaveLength(3)

      // Tool calls are `execute_tool` spans of the run (not of the model call they came from).
      const read = spans.find((span) => span.name === "execute_tool read")!
      expect(read.attributes).toMatchObject({
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "read",
        "gen_ai.conversation.id": sessionID,
        "gen_ai.agent.name": "build"
      })
      expect(read.attributes["gen_ai.tool.call.id"]).toEqual(expect.any(String))
      expect(OtlpReceiver.ancestors(spans, read)[0]).toBe("invoke_agent build")
      const task = spans.find((span) => span.name === "execute_tool task")!
      expect(OtlpReceiver.nearest(spans, task, "invoke_agent")).toBe(parentRun)

      // The subagent's run sits under the task call that started it, in its own (child) session.
      const childRun = runs.find((span) => span.name === "invoke_agent general")!
      expect(OtlpReceiver.nearest(spans, childRun, "execute_tool")).toBe(task)
      expect(childRun.traceId).toBe(parentRun.traceId)
      expect(childRun.attributes["gen_ai.conversation.id"]).toMatch(/^ses_/)
      expect(childRun.attributes["gen_ai.conversation.id"]).not.toBe(sessionID)

      // No content unless asked for.
      for (const span of spans) for (const key of CONTENT_KEYS) expect(span.attributes[key], `${span.name} ${key}`).toBeUndefined()
      expect(receiver.rawText()).not.toContain("secret notes")
      expect(receiver.rawText()).not.toContain("zebra")

      // The metrics' last export happened at exit too.
      const points = receiver.points()
      const tokens = points.filter((point) => point.metric === "gen_ai.client.token.usage")
      expect(tokens.map((point) => point.attributes["gen_ai.token.type"]).sort()).toEqual(["input", "output"])
      expect(tokens[0]!.attributes).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.provider.name": "mock", "gen_ai.request.model": "model-a" })
      expect(tokens[0]!.count).toBe(4)
      const durations = points.filter((point) => point.metric === "gen_ai.client.operation.duration")
      expect(durations.find((point) => point.attributes["gen_ai.operation.name"] === "chat")?.count).toBe(4)
      expect(durations.filter((point) => point.attributes["gen_ai.operation.name"] === "invoke_agent").map((point) => point.attributes["gen_ai.agent.name"]).sort())
        .toEqual(["build", "general"])
      const toolDurations = points.filter((point) => point.metric === "gen_ai.execute_tool.duration")
      expect(toolDurations.map((point) => point.attributes["gen_ai.tool.name"]).sort()).toEqual(["read", "task"])
      const active = points.filter((point) => point.metric === "agent.sessions.active")
      expect(active.map((point) => point.value)).toEqual([0])
      const decisions = points.filter((point) => point.metric === "agent.permission.decisions")
      expect(decisions.find((point) => point.attributes["agent.permission"] === "read")?.attributes["agent.permission.decision"]).toBe("allow")
      // No session ids on metrics: their attributes stay low-cardinality.
      expect(points.some((point) => Object.values(point.attributes).includes(sessionID))).toBe(false)
    }))

  it.scopedLive("telemetry.log_content: true puts the prompt, the answers and the tool's arguments and result on the spans", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start(turns())
      const box = yield* project(model.url, { telemetry: { log_content: true } }, { "project/notes.txt": NOTES })
      const receiver = yield* OtlpReceiver.start
      const result = yield* agent(box, runArgs, { env: otelEnv(receiver) })
      expect(result.code, result.stderr).toBe(0)
      const spans = receiver.spans()

      const run = spans.find((span) => span.name === "invoke_agent build")!
      expect(JSON.parse(String(run.attributes["gen_ai.input.messages"]))).toEqual([{ role: "user", parts: [{ type: "text", content: PROMPT }] }])
      expect(String(run.attributes["gen_ai.output.messages"])).toContain("The notes mention a zebra.")

      const chats = spans.filter((span) => span.name === "chat model-a")
      const first = chats.find((span) => !String(span.attributes["gen_ai.input.messages"]).includes("tool_call"))!
      expect(String(first.attributes["gen_ai.input.messages"])).toContain(PROMPT)
      expect(JSON.parse(String(first.attributes["gen_ai.system_instructions"]))[0]).toMatchObject({ type: "text" })
      expect(chats.some((span) => String(span.attributes["gen_ai.output.messages"]).includes("The notes mention a zebra."))).toBe(true)

      const read = spans.find((span) => span.name === "execute_tool read")!
      expect(JSON.parse(String(read.attributes["gen_ai.tool.call.arguments"]))).toEqual({ filePath: "notes.txt" })
      expect(String(read.attributes["gen_ai.tool.call.result"])).toContain("the notes hold a zebra")
    }))

  it.scopedLive("agent serve exports the span tree of a prompt sent over HTTP, and flushes it when stopped", () =>
    Effect.gen(function*() {
      const model = yield* MockOpenAIServer.start([[toolCall("read", { filePath: "notes.txt" })], "It says zebra."])
      const box = yield* project(model.url, {}, { "project/notes.txt": NOTES })
      const receiver = yield* OtlpReceiver.start
      // A long batch delay: what arrives, arrives because the server flushed on its way out.
      const served = yield* serve(box, [], otelEnv(receiver, { OTEL_BSP_SCHEDULE_DELAY: "600000" }))
      const post = (path: string, body: unknown) =>
        Effect.promise(() =>
          fetch(`${served.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
            .then(async (response) => ({ status: response.status, body: await response.json() as Record<string, any> }))
        )
      const session = yield* post("/session", {})
      const sessionID = session.body.id as string
      const reply = yield* post(`/session/${sessionID}/message`, { parts: [{ type: "text", text: PROMPT }] })
      expect(reply.status).toBe(200)
      served.child.kill("SIGTERM")
      const code = yield* Effect.promise(() => served.exited)
      expect(code, served.stderr()).toBe(0)

      const spans = receiver.spans()
      const run = spans.find((span) => span.name === "invoke_agent build")
      expect(run, spans.map((span) => span.name).join(", ")).toBeDefined()
      expect(run!.attributes).toMatchObject({ "gen_ai.conversation.id": sessionID, "gen_ai.agent.name": "build" })
      const chats = spans.filter((span) => span.name === "chat model-a")
      expect(chats).toHaveLength(2)
      for (const chat of chats) expect(OtlpReceiver.nearest(spans, chat, "invoke_agent")).toBe(run)
      const read = spans.find((span) => span.name === "execute_tool read")!
      expect(OtlpReceiver.ancestors(spans, read)[0]).toBe("invoke_agent build")
      // The run is inside the HTTP request that asked for it.
      expect(OtlpReceiver.ancestors(spans, run!)).toContain("SessionLoop.prompt")
      expect(receiver.rawText()).not.toContain("zebra")
      expect(receiver.points().some((point) => point.metric === "gen_ai.client.token.usage")).toBe(true)
    }))
})
