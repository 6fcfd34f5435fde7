import { describe, expect, it } from "@effect/vitest"
import { maskSecret, redactSecrets } from "../src/config/ConfigRedaction.js"

describe("maskSecret", () => {
  it.each([
    ["sk-ant-api03-abcdefghijklmnopf3a9", "sk-...f3a9"],
    ["0123456789abcdef", "012...cdef"],
    ["short-secret", "***"],
    ["", ""]
  ])("%s → %s", (value, shown) => expect(maskSecret(value)).toBe(shown))
})

describe("redactSecrets", () => {
  const substitutions = new Map([["env-value-0123456789", "{env:TOKEN}"], ["claude-model-from-env", "{env:MODEL_NAME}"]])

  it("masks by key, by record and by where a value came from; leaves the rest", () => {
    const config = {
      model: "anthropic/claude-model-from-env",
      provider: {
        openai: {
          env: ["OPENAI_API_KEY"],
          options: { apiKey: "sk-proj-1234567890abcd", baseURL: "https://example.test/v1", headers: { "X-Trace": "short" } },
          models: { m: { headers: { Authorization: "Bearer env-value-0123456789" } } }
        }
      },
      mcp: { gh: { type: "local", command: ["gh-mcp", "--token", "env-value-0123456789"], environment: { GH_HOST: "github.com" } } },
      permission: { bash: { "cat *token*": "ask" } },
      limits: { tokens: 1000 },
      agent: { build: { prompt: "Use env-value-0123456789 wisely", options: { client_secret: "abcdefghijklmnopqrst" } } }
    }
    expect(redactSecrets(config, substitutions)).toEqual({
      model: "anthropic/claude-model-from-env",
      provider: {
        openai: {
          env: ["OPENAI_API_KEY"],
          options: { apiKey: "sk-...abcd", baseURL: "https://example.test/v1", headers: { "X-Trace": "***" } },
          models: { m: { headers: { Authorization: "Bea...6789" } } }
        }
      },
      mcp: { gh: { type: "local", command: ["gh-mcp", "--token", "env...6789 ({env:TOKEN})"], environment: { GH_HOST: "***" } } },
      permission: { bash: { "cat *token*": "ask" } },
      limits: { tokens: 1000 },
      agent: { build: { prompt: "Use env...6789 ({env:TOKEN}) wisely", options: { client_secret: "abc...qrst" } } }
    })
  })
})

describe("redactSecrets of a URL", () => {
  it("a secret URL (from {env:} or under a secret key) stays a URL: scheme and host, the rest masked", () => {
    const hook = "https://hooks.slack.com/services/T000/B000/secret0123456789"
    const substitutions = new Map([[hook, "{env:SLACK_HOOK}"]])
    expect(redactSecrets({ permission: { approver: { webhook: hook } }, notify: hook }, substitutions)).toEqual({
      permission: { approver: { webhook: "https://hooks.slack.com/...6789" } },
      notify: "https://hooks.slack.com/...6789"
    })
    // Credentials in the URL are never shown.
    expect(redactSecrets({ token: "https://user:pass@example.test/x" })).toEqual({ token: "https://example.test/...st/x" })
  })
})
