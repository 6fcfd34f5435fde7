import type { QuestionRequest } from "@agent/domain"
import { ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { eventually, serve } from "./support.js"

const { toolCall } = ScriptedModel

const ask = {
  questions: [
    {
      question: "Which database should the service use?",
      header: "Database",
      options: [
        { label: "SQLite", description: "One file, no server" },
        { label: "Postgres", description: "A server, more features" }
      ]
    },
    {
      question: "Which extras?",
      header: "Extras",
      options: [{ label: "Metrics", description: "Prometheus endpoint" }, { label: "Tracing", description: "OTLP" }],
      multiple: true
    }
  ]
}

const post = (url: string, body?: object) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, ...(body ? { body: JSON.stringify(body) } : {}) })

describe("the question tool over HTTP", () => {
  it.scopedLive("a client lists the model's questions and answers them; the model reads the answers", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[toolCall("question", ask)], "Using Postgres with metrics and tracing."])
      const { client, url } = yield* serve({ model })
      const session = (yield* Effect.promise(() => client.session.create({ body: {} }))).data!
      const done = client.session.prompt({ path: { id: session.id }, body: { parts: [{ type: "text", text: "set it up" }] } })

      const pending = yield* eventually(async () =>
        ((await (await fetch(`${url}/question`)).json()) as Array<QuestionRequest>).find((request) => request.sessionID === session.id)
      )
      expect(pending.questions.map((question) => question.header)).toEqual(["Database", "Extras"])
      expect(pending.tool?.callID).toBeDefined()

      const answered = yield* Effect.promise(() => post(`${url}/question/${pending.id}/reply`, { answers: [["Postgres"], ["Metrics", "Tracing"]] }))
      expect(answered.status).toBe(200)
      const reply = yield* Effect.promise(() => done)
      expect(reply.data!.parts.find((part) => part.type === "text")).toMatchObject({ text: "Using Postgres with metrics and tracing." })
      const toolResult = JSON.stringify(model.calls[1]!.prompt.filter((entry) => entry.role === "tool"))
      expect(toolResult).toContain(
        'User has answered your questions: \\"Which database should the service use?\\"=\\"Postgres\\", \\"Which extras?\\"=\\"Metrics, Tracing\\"'
      )
      // answered: gone from the list, and a second answer is refused
      expect(yield* Effect.promise(async () => (await fetch(`${url}/question`)).json())).toEqual([])
      expect((yield* Effect.promise(() => post(`${url}/question/${pending.id}/reply`, { answers: [["SQLite"]] }))).status).toBe(404)
    }))

  it.scopedLive("dismissing the questions over HTTP stops the run", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[toolCall("question", ask)], "never asked"])
      const { client, url } = yield* serve({ model })
      const session = (yield* Effect.promise(() => client.session.create({ body: {} }))).data!
      const done = client.session.prompt({ path: { id: session.id }, body: { parts: [{ type: "text", text: "set it up" }] } })
      const pending = yield* eventually(async () => ((await (await fetch(`${url}/question`)).json()) as Array<QuestionRequest>)[0])
      expect((yield* Effect.promise(() => post(`${url}/question/${pending.id}/reject`))).status).toBe(200)
      yield* Effect.promise(() => done)
      expect(model.calls).toHaveLength(1)
      const messages = (yield* Effect.promise(() => client.session.messages({ path: { id: session.id } }))).data!
      const tool = messages.flatMap((message) => message.parts).find((part) => part.type === "tool") as any
      expect(tool.state).toMatchObject({ status: "error" })
      expect(tool.state.error).toContain("dismissed these questions")
    }))
})
