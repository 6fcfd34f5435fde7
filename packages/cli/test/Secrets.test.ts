import { MockOpenAIServer } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { agent, events, project, serve } from "./AgentProcess.js"

/** Planted secrets: each must never be printed, served or logged whole. */
const IN_CONFIG = "sk-planted-config-secret-0001f3a9"
const IN_HEADER = "hdr-planted-header-secret-0004d00d"
const OAUTH = "oauth-planted-client-secret-0003cafe"
const FROM_ENV = "env-planted-secret-value-0002beef"
const FROM_FILE = "file-planted-secret-value-0005feed"
const PLANTED = [IN_CONFIG, IN_HEADER, OAUTH, FROM_ENV, FROM_FILE]

/** A secret shows up when any long piece of its middle does (the mask keeps 3 + 4 characters). */
const leaks = (text: string) => PLANTED.filter((secret) => text.includes(secret.slice(3, -4)))

const secretConfig = {
  provider: {
    mock: {
      options: { apiKey: IN_CONFIG, headers: { "X-Team-Token": IN_HEADER } }
    },
    titles: { options: { apiKey: "{env:PLANTED_SECRET}" } }
  },
  mcp: {
    // Both fail to start (no such command, nothing listening): their errors are logged too.
    tools: { type: "local", command: ["agent-test-no-such-mcp-server"], environment: { API_TOKEN: "{env:PLANTED_SECRET}" } },
    remote: {
      type: "remote",
      url: "http://127.0.0.1:9/mcp",
      headers: { Authorization: "Bearer {file:./key.txt}" },
      oauth: { clientId: "agent-test", clientSecret: OAUTH }
    }
  }
}

describe("secrets in configuration", () => {
  it.scopedLive("are masked on every surface: debug config, a run's events and debug logs, the server's routes and logs, an export", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["Fine.", "Fine again."])
      const box = yield* project(server.url, {}, { "project/key.txt": `${FROM_FILE}\n` })
      // The project's agent.json merged with the secrets, as a user would write them.
      const config = JSON.parse(fs.readFileSync(box.path("project/agent.json"), "utf8"))
      config.provider.mock.options = { ...config.provider.mock.options, ...secretConfig.provider.mock.options }
      config.provider.titles.options = { ...config.provider.titles.options, ...secretConfig.provider.titles.options }
      config.mcp = secretConfig.mcp
      fs.writeFileSync(box.path("project/agent.json"), JSON.stringify(config, null, 2))
      const env = { PLANTED_SECRET: FROM_ENV, AGENT_LOG_LEVEL: "debug" }

      const shown = yield* agent(box, ["debug", "config"], { env })
      expect(shown.code, shown.stderr).toBe(0)
      expect(leaks(shown.stdout + shown.stderr)).toEqual([])
      // Enough is left to recognise each one, and where a reference put it in.
      const effective = JSON.parse(shown.stdout).config
      expect(effective.provider.mock.options.apiKey).toBe("sk-...f3a9")
      expect(effective.provider.mock.options.headers["X-Team-Token"]).toBe("hdr...d00d")
      expect(effective.provider.titles.options.apiKey).toBe("env...beef ({env:PLANTED_SECRET})")
      expect(effective.mcp.tools.environment.API_TOKEN).toBe("env...beef ({env:PLANTED_SECRET})")
      expect(effective.mcp.remote.headers.Authorization).toBe("Bea...feed")
      expect(effective.mcp.remote.oauth).toEqual({ clientId: "agent-test", clientSecret: "oau...cafe" })
      expect(effective.provider.mock.options.baseURL).toBe(server.url)

      const run = yield* agent(box, ["run", "--format", "json", "hello"], { env })
      expect(run.code, run.stderr).toBe(0)
      expect(events(run.stdout).at(-1)).toMatchObject({ type: "result", text: "Fine." })
      expect(leaks(run.stdout + run.stderr)).toEqual([])
      // The key did reach the provider: masking is for display only.
      expect(server.requests.length).toBeGreaterThan(0)

      const sessionID = events(run.stdout).at(-1)!.sessionID as string
      const exported = yield* agent(box, ["session", "export", sessionID], { env })
      expect(exported.code, exported.stderr).toBe(0)
      expect(leaks(exported.stdout + exported.stderr)).toEqual([])

      const served = yield* serve(box, [], env)
      const routes = ["/config", "/agent", "/mcp", "/path", "/command"]
      const bodies = yield* Effect.forEach(routes, (route) =>
        Effect.promise(() => fetch(`${served.url}${route}`).then(async (response) => ({ route, status: response.status, body: await response.text() }))))
      for (const { body, route, status } of bodies) {
        expect(status, `${route}: ${body}`).toBe(200)
        expect(leaks(body), route).toEqual([])
      }
      expect(JSON.parse(bodies[0]!.body).provider.mock.options.apiKey).toBe("sk-...f3a9")
      expect(leaks(served.stderr())).toEqual([])
    }), 60_000)
})
