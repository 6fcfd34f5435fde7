import { MockOpenAIServer, TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { pathToFileURL } from "node:url"
import { agent } from "./AgentProcess.js"

/** Agents and config as OpenCode resolves them: what `debug agent` shows, what reaches the provider, legacy keys. */
describe("agents as OpenCode resolves them", () => {
  it.scopedLive("agent debug agent prints the whole resolved agent, in OpenCode's fields, with where each rule came from", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({
        files: {
          "project/opencode.json": JSON.stringify({
            agent: {
              reviewer: {
                description: "Reviews diffs",
                mode: "subagent",
                model: "mock/deep/model-a",
                variant: "deep",
                temperature: 0.2,
                top_p: 0.9,
                color: "#FF5733",
                prompt: "Review the diff.",
                maxSteps: 7,
                reasoningEffort: "high",
                options: { store: false, extra: { a: 1 } },
                permission: { bash: { "*": "ask", "git *": "allow" } }
              }
            }
          }, null, 2),
          "project/.opencode/agent/reviewer.md": "---\noptions:\n  extra:\n    b: 2\n---\nReview the diff, briefly.\n"
        }
      })
      const result = yield* agent(box, ["debug", "agent", "reviewer"])
      expect(result.code, result.stderr).toBe(0)
      const shown = JSON.parse(result.stdout) as Record<string, unknown>
      expect(Object.keys(shown)).toEqual([
        "name", "description", "mode", "native", "topP", "temperature", "color", "permission",
        "model", "variant", "prompt", "options", "steps", "source"
      ])
      const file = box.path("project/opencode.json")
      expect(shown).toMatchObject({
        name: "reviewer",
        description: "Reviews diffs",
        mode: "subagent",
        native: false,
        topP: 0.9,
        temperature: 0.2,
        color: "#FF5733",
        model: { providerID: "mock", modelID: "deep/model-a" },
        variant: "deep",
        // The markdown file (a config dir, read after the project's JSON) replaces the prompt and adds to the options.
        prompt: "Review the diff, briefly.",
        options: { store: false, extra: { a: 1, b: 2 }, reasoningEffort: "high" },
        steps: 7,
        source: box.path("project/.opencode/agent/reviewer.md")
      })
      expect(shown.permission).toContainEqual({
        permission: "bash",
        pattern: "git *",
        action: "allow",
        from: `config: ${file} (agent.reviewer.permission.bash.git *)`
      })
      // The built-in defaults come first, with their source too.
      expect((shown.permission as Array<{ from: string }>)[0]!.from).toMatch(/^default/)

      const build = JSON.parse((yield* agent(box, ["debug", "agent", "build"])).stdout) as Record<string, unknown>
      expect(build).toMatchObject({ name: "build", mode: "primary", native: true, options: {}, source: "built-in" })
      expect(build.model).toBeUndefined()
    }))

  it.scopedLive("the agent's options and unknown keys reach the provider's HTTP request, over the model's options and under its variant", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["One.", "Two.", "Three.", "Four."])
      const titles = yield* MockOpenAIServer.start(Array.from({ length: 8 }, () => "A title"))
      const box = yield* TestInstance.sandbox({
        files: {
          "project/agent.json": {
            model: "mock/model-a",
            small_model: "titles/small",
            provider: {
              mock: {
                npm: "@ai-sdk/openai-compatible",
                options: { baseURL: server.url },
                models: {
                  "model-a": {
                    options: { reasoningEffort: "low", chat_template_kwargs: { enable_thinking: true, budget: 1024 } },
                    variants: { deep: { reasoningEffort: "high", disabled: false }, off: { disabled: true, reasoningEffort: "minimal" } }
                  }
                }
              },
              titles: { npm: "@ai-sdk/openai-compatible", options: { baseURL: titles.url }, models: { small: {} } }
            },
            agent: {
              // An unknown key moves into options; options merge deeply over the model's.
              build: { reasoningEffort: "medium", options: { chat_template_kwargs: { budget: 4096 }, top_k: 20 } },
              thinker: { mode: "primary", variant: "deep", options: { chat_template_kwargs: { budget: 4096 } } },
              // A disabled variant of the model is not applied.
              quiet: { mode: "primary", variant: "off" }
            }
          }
        }
      })
      for (const args of [["run", "hi"], ["run", "--agent", "thinker", "hi"], ["run", "--agent", "quiet", "hi"]]) {
        const result = yield* agent(box, args)
        expect(result.code, result.stderr).toBe(0)
      }
      // --variant picks one for this run; a variant the model does not have is a usage error that lists its variants.
      const chosen = yield* agent(box, ["run", "--variant", "deep", "hi"])
      expect(chosen.code, chosen.stderr).toBe(0)
      const unknown = yield* agent(box, ["run", "--variant", "max", "hi"])
      expect(unknown.code).toBe(2)
      expect(unknown.stderr).toMatch(/"mock\/model-a" is not usable: it has no variant "max" \(its variants: deep\)/)
      expect(server.requests).toHaveLength(4)
      const [build, thinker, quiet, deep] = server.requests
      expect(deep).toMatchObject({ reasoning_effort: "high", chat_template_kwargs: { enable_thinking: true, budget: 4096 }, top_k: 20 })
      expect(build).toMatchObject({ reasoning_effort: "medium", chat_template_kwargs: { enable_thinking: true, budget: 4096 }, top_k: 20 })
      expect(thinker).toMatchObject({ reasoning_effort: "high", chat_template_kwargs: { enable_thinking: true, budget: 4096 } })
      expect(thinker).not.toHaveProperty("disabled")
      expect(quiet).toMatchObject({ reasoning_effort: "low", chat_template_kwargs: { enable_thinking: true, budget: 1024 } })
      // Another model's calls carry none of them.
      for (const request of titles.requests) {
        expect(request).not.toHaveProperty("reasoning_effort")
        expect(request).not.toHaveProperty("chat_template_kwargs")
      }
    }), 60_000)

  it.scopedLive("agent debug config lists the plugins of every file and config dir, merged, with a warning that they do not run", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({
        files: {
          "home/.config/agent/agent.json": { plugin: ["oh-my-opencode@2.4.3", "shared-plugin@1.0.0"] },
          "project/opencode.json": JSON.stringify({
            plugin: ["shared-plugin@2.0.0", ["./tools/local.ts", { level: 2 }]],
            autoshare: true
          }, null, 2),
          "project/.opencode/plugin/notify.ts": "export default {}\n",
          "project/.opencode/opencode.json": { plugin: ["oh-my-opencode"] }
        }
      })
      const result = yield* agent(box, ["debug", "config"])
      expect(result.code, result.stderr).toBe(0)
      const shown = JSON.parse(result.stdout)
      const local = pathToFileURL(box.path("project/tools/local.ts")).href
      const notify = pathToFileURL(box.path("project/.opencode/plugin/notify.ts")).href
      // One entry per package (the later file's version wins, where it stands) or file.
      expect(shown.config.plugin).toEqual(["shared-plugin@2.0.0", [local, { level: 2 }], "oh-my-opencode", notify])
      expect(shown.plugins).toEqual({
        note: "plugins do not run in this runtime",
        list: [
          { plugin: "shared-plugin@2.0.0", from: `${box.path("project/opencode.json")}:3` },
          { plugin: local, from: `${box.path("project/opencode.json")}:4` },
          { plugin: "oh-my-opencode", from: `${box.path("project/.opencode/opencode.json")}:3` },
          { plugin: notify, from: box.path("project/.opencode/plugin/notify.ts") }
        ]
      })
      expect(result.stderr).toContain(`${box.path("project/opencode.json")}: plugin: plugins do not run in this runtime`)
      expect(result.stderr).toContain(`${box.path("project/.opencode/plugin/notify.ts")}: plugins do not run in this runtime`)
      // OpenCode's autoshare is read as share.
      expect(shown.config.share).toBe("auto")
      expect(shown.config).not.toHaveProperty("autoshare")
      const origin = yield* agent(box, ["debug", "config", "--origin", "share"])
      expect(origin.stdout).toBe(`${box.path("project/opencode.json")}:11 (autoshare)\n`)
    }))
})
