import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { editor, initialize, project } from "./AcpClient.js"

const { text, toolCall } = ScriptedModel

describe("agent acp", () => {
  it.scopedLive("initializes, opens a session in the editor's cwd and streams an answer", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[{ reasoning: "Thinking it over." }, text("Hello from the agent.")]])
      const box = yield* project(server.url)
      const client = yield* editor(box)
      const init = yield* initialize(client)
      expect(init.protocolVersion).toBe(1)
      expect(init.agentCapabilities).toMatchObject({ loadSession: true, promptCapabilities: { image: true, embeddedContext: true }, mcpCapabilities: { http: true } })
      expect(init.agentInfo?.name).toBe("agent")
      const session = yield* Effect.promise(() => client.agent.request("session/new", { cwd: box.instance.directory, mcpServers: [] }))
      expect(session.modes?.currentModeId).toBe("build")
      expect(session.modes?.availableModes.map((mode) => mode.id)).toEqual(expect.arrayContaining(["build", "plan"]))
      const response = yield* Effect.promise(() => client.agent.request("session/prompt", { sessionId: session.sessionId, prompt: [{ type: "text", text: "hi" }] }))
      expect(response.stopReason, client.stderr()).toBe("end_turn")
      const said = client.of(session.sessionId, "agent_message_chunk").map((update) => (update as { content: { text: string } }).content.text).join("")
      expect(said).toBe("Hello from the agent.")
      const thought = client.of(session.sessionId, "agent_thought_chunk").map((update) => (update as { content: { text: string } }).content.text).join("")
      expect(thought).toBe("Thinking it over.")
      void toolCall
    }))
})
