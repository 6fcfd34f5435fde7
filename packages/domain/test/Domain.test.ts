import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import {
  Agent,
  ConfigError,
  CorrectedError,
  DefaultAgentError,
  DeniedError,
  MessageWithParts,
  parseModelRef,
  PermissionConfig,
  RejectedError,
  SessionID
} from "../src/index.js"

describe("domain schemas", () => {
  it("parses provider/model, keeping slashes in the model id", () => {
    expect(parseModelRef("anthropic/claude-sonnet-4-5")).toEqual({ providerID: "anthropic", modelID: "claude-sonnet-4-5" })
    expect(parseModelRef("openrouter/meta/llama-3")).toEqual({ providerID: "openrouter", modelID: "meta/llama-3" })
    expect(parseModelRef("no-slash")).toBeUndefined()
    expect(parseModelRef("/model")).toBeUndefined()
    expect(parseModelRef("provider/")).toBeUndefined()
  })

  it("rejects ids with the wrong prefix or length", () => {
    const decode = Schema.decodeUnknownEither(SessionID)
    expect(decode("ses_0123456789abcdefABCDEFGHIJ")._tag).toBe("Right")
    expect(decode("msg_0123456789abcdefABCDEFGHIJ")._tag).toBe("Left")
    expect(decode("ses_short")._tag).toBe("Left")
  })

  it("permission config is an action or a map of actions and pattern maps", () => {
    const decode = Schema.decodeUnknownEither(PermissionConfig)
    expect(decode("ask")._tag).toBe("Right")
    expect(decode({ bash: { "git *": "allow" }, edit: "deny" })._tag).toBe("Right")
    expect(decode({ bash: { "git *": "sometimes" } })._tag).toBe("Left")
    expect(decode({ bash: ["allow"] })._tag).toBe("Left")
  })

  it("round-trips a message with tool parts through JSON", () => {
    const value = {
      info: {
        id: "msg_0123456789abcdefABCDEFGHIJ",
        sessionID: "ses_0123456789abcdefABCDEFGHIJ",
        role: "user",
        time: { created: 1 },
        agent: "build",
        model: { providerID: "openai", modelID: "gpt-5" }
      },
      parts: [
        {
          id: "prt_0123456789abcdefABCDEFGHIJ",
          sessionID: "ses_0123456789abcdefABCDEFGHIJ",
          messageID: "msg_0123456789abcdefABCDEFGHIJ",
          type: "tool",
          callID: "call_1",
          tool: "bash",
          state: { status: "error", input: { command: "ls" }, error: "boom", time: { start: 1, end: 2 } }
        }
      ]
    }
    const json = Schema.parseJson(MessageWithParts)
    const decoded = Schema.decodeUnknownSync(json)(JSON.stringify(value))
    expect(JSON.parse(Schema.encodeSync(json)(decoded))).toEqual(value)
    expect(() => Schema.decodeUnknownSync(MessageWithParts)({ ...value, parts: [{ type: "nope" }] })).toThrow()
  })

  it("errors say what happened in words the model and the user understand", () => {
    expect(new DeniedError({ permission: "bash", pattern: "rm -rf /", rules: [{ permission: "bash", pattern: "rm *", action: "deny" }] }).message).toBe(
      `Blocked by the user's permission rules: bash is denied for "rm -rf /". Do not try this call again; pick another way or tell the user what you needed. The bash rules in force: [{"permission":"bash","pattern":"rm *","action":"deny"}]`
    )
    expect(new RejectedError({}).message).toBe("The user said no to this tool call; it did not run.")
    expect(new CorrectedError({ feedback: "use pnpm" }).message).toBe(
      "The user said no to this tool call; it did not run. Their instructions: use pnpm"
    )
    expect(new DefaultAgentError({ name: "x", reason: "hidden" }).message).toBe('default agent "x" is hidden')
    expect(new ConfigError({ file: "/p/agent.json", line: 4, key: "agent.plan.steps", detail: "Expected a positive integer" }).message).toBe(
      "/p/agent.json:4: agent.plan.steps: Expected a positive integer"
    )
  })

  it("agents are schema classes with structural fields", () => {
    const agent = new Agent({ name: "build", mode: "primary", native: true, permission: [], options: {} })
    expect(agent.name).toBe("build")
    expect(() => new Agent({ name: "x", mode: "sometimes" as never, native: true, permission: [], options: {} })).toThrow()
  })
})
