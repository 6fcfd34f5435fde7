import { ConfigError } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ConfigService, loadConfig } from "../../src/config/ConfigService.js"
import { Instance } from "../../src/runtime/Instance.js"
import { lineOf, sandbox } from "./helpers.js"

const live = <A, E>(body: Effect.Effect<A, E, Scope.Scope>) => Effect.scoped(body)

describe("precedence", () => {
  it.live("global < AGENT_CONFIG < project root < nested dir < .opencode < .agent < AGENT_CONFIG_CONTENT < managed", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const nested = box.cwd
      const layers: Array<{ readonly name: string; readonly file?: string }> = [
        { name: "global", file: path.join(box.globalDir, "agent.json") },
        { name: "explicit", file: path.join(box.root, "elsewhere", "custom.json") },
        { name: "project-root", file: path.join(box.project, "agent.json") },
        { name: "project-nested", file: path.join(nested, "agent.json") },
        { name: "root-opencode-dir", file: path.join(box.project, ".opencode", "opencode.json") },
        { name: "root-agent-dir", file: path.join(box.project, ".agent", "agent.json") },
        { name: "nested-opencode-dir", file: path.join(nested, ".opencode", "agent.jsonc") },
        { name: "nested-agent-dir", file: path.join(nested, ".agent", "opencode.jsonc") },
        { name: "content" },
        { name: "managed", file: path.join(box.managedDir, "agent.json") }
      ]
      for (const layer of layers) {
        if (layer.file) box.write(layer.file, { model: `p/${layer.name}`, agent: { [layer.name]: { description: layer.name } } })
      }
      const env = (withContent: boolean): Record<string, string> => ({
        AGENT_CONFIG: path.join(box.root, "elsewhere", "custom.json"),
        ...(withContent
          ? { AGENT_CONFIG_CONTENT: JSON.stringify({ model: "p/content", agent: { content: { description: "content" } } }) }
          : {})
      })

      const full = yield* loadConfig(box.instance(env(true)))
      expect(full.sources).toEqual(layers.map((layer) => layer.file ?? "env:AGENT_CONFIG_CONTENT"))
      expect(Object.keys(full.config.agent ?? {})).toEqual(layers.map((layer) => layer.name))
      expect(full.directories).toEqual([
        box.globalDir,
        path.join(box.project, ".opencode"),
        path.join(box.project, ".agent"),
        path.join(nested, ".opencode"),
        path.join(nested, ".agent")
      ])

      // Peel the layers off from the top: each time the next one down must win.
      for (let i = layers.length - 1; i >= 0; i--) {
        const layer = layers[i]!
        const info = yield* loadConfig(box.instance(env(i >= 8)))
        expect(info.config.model).toBe(`p/${layer.name}`)
        expect(info.origin(["model"])?.file).toBe(layer.file ?? "env:AGENT_CONFIG_CONTENT")
        if (layer.file) fs.rmSync(layer.file)
      }
    })))

  it.live("in one dir: opencode.json < opencode.jsonc < agent.json < agent.jsonc", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const names = ["opencode.json", "opencode.jsonc", "agent.json", "agent.jsonc"]
      for (const name of names) box.write(path.join(box.project, name), { model: `p/${name}` })
      for (let i = names.length - 1; i >= 0; i--) {
        const info = yield* loadConfig(box.instance())
        expect(info.config.model).toBe(`p/${names[i]}`)
        fs.rmSync(path.join(box.project, names[i]!))
      }
    })))

  it.live("agent.json beats opencode.json in the same dir but not a nearer dir's opencode.json", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.project, "opencode.json"), { model: "p/root-opencode", small_model: "p/root-opencode" })
      box.write(path.join(box.project, "agent.json"), { model: "p/root-agent", small_model: "p/root-agent" })
      box.write(path.join(box.cwd, "opencode.json"), { small_model: "p/nested-opencode" })
      const { config } = yield* loadConfig(box.instance())
      expect(config.model).toBe("p/root-agent")
      expect(config.small_model).toBe("p/nested-opencode")
    })))

  it.live("in one dir .agent/ beats .opencode/, and markdown agents beat the JSON of their dir", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.project, ".opencode", "opencode.json"), {
        agent: { review: { description: "opencode json", model: "p/opencode", temperature: 0.1 } }
      })
      box.write(path.join(box.project, ".opencode", "agent", "review.md"), "---\ndescription: opencode md\n---\nReview.\n")
      box.write(path.join(box.project, ".agent", "agent.json"), { agent: { review: { model: "p/agent" } } })
      const { config } = yield* loadConfig(box.instance())
      expect(config.agent?.review).toEqual({
        description: "opencode md",
        model: "p/agent",
        temperature: 0.1,
        prompt: "Review."
      })
    })))

  it.live("AGENT_DISABLE_PROJECT_CONFIG skips project files and project config dirs", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.globalDir, "agent.json"), { model: "p/global" })
      box.write(path.join(box.project, "agent.json"), { model: "p/project" })
      box.write(path.join(box.project, ".opencode", "agent", "x.md"), "---\ndescription: x\n---\n")
      const on = yield* loadConfig(box.instance())
      expect(on.config.model).toBe("p/project")
      expect(on.config.agent?.x?.description).toBe("x")
      const off = yield* loadConfig(box.instance({ AGENT_DISABLE_PROJECT_CONFIG: "1" }))
      expect(off.config.model).toBe("p/global")
      expect(off.config.agent).toBeUndefined()
      expect(off.sources).toEqual([path.join(box.globalDir, "agent.json")])
      expect(off.directories).toEqual([box.globalDir])
    })))

  it.live("outside git only the directory itself is read", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const outside = path.join(box.root, "plain", "sub")
      box.write(path.join(box.root, "plain", "agent.json"), { model: "p/parent" })
      box.write(path.join(outside, "opencode.json"), { small_model: "p/here" })
      const info = yield* loadConfig(box.instance({}, outside))
      expect(info.config.small_model).toBe("p/here")
      expect(info.config.model).toBeUndefined()
      expect(info.sources).toEqual([path.join(outside, "opencode.json")])
    })))

  it.live("a relative AGENT_CONFIG resolves against the directory; a missing one is a warning", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.cwd, "conf", "mine.json"), { model: "p/mine" })
      const found = yield* loadConfig(box.instance({ AGENT_CONFIG: "conf/mine.json" }))
      expect(found.config.model).toBe("p/mine")
      const missing = yield* loadConfig(box.instance({ AGENT_CONFIG: "conf/none.json" }))
      expect(missing.config.model).toBeUndefined()
      expect(missing.warnings).toEqual([
        expect.objectContaining({ file: path.join(box.cwd, "conf", "none.json"), key: "AGENT_CONFIG" })
      ])
    })))
})

describe("merge", () => {
  it.live("keeps the position of existing keys; later values win", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.globalDir, "agent.json"), { permission: { "*": "ask", bash: "allow", edit: "deny" } })
      box.write(path.join(box.project, "agent.json"), { permission: { edit: "allow", webfetch: "deny", "*": "deny" } })
      const { config } = yield* loadConfig(box.instance())
      expect(Object.entries(config.permission ?? {})).toEqual([
        ["*", "deny"],
        ["bash", "allow"],
        ["edit", "allow"],
        ["webfetch", "deny"]
      ])
    })))

  it.live("merges objects deeply and replaces arrays", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.globalDir, "agent.json"), {
        provider: { ollama: { name: "Ollama", options: { baseURL: "http://a" }, whitelist: ["a", "b"] } }
      })
      box.write(path.join(box.project, "agent.json"), {
        provider: { ollama: { options: { baseURL: "http://b", timeout: 5 }, whitelist: ["c"] } }
      })
      const { config } = yield* loadConfig(box.instance())
      expect(config.provider?.ollama).toEqual({
        name: "Ollama",
        options: { baseURL: "http://b", timeout: 5 },
        whitelist: ["c"]
      })
    })))

  it.live("concatenates instructions across sources without duplicates", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const global = box.write(path.join(box.globalDir, "agent.json"), { instructions: ["a.md", "b.md", "a.md"] })
      const project = box.write(path.join(box.project, "agent.json"), { instructions: ["b.md", "c.md"] })
      const info = yield* loadConfig(box.instance({ AGENT_CONFIG_CONTENT: `{"instructions": ["d.md", "a.md"]}` }))
      expect(info.config.instructions).toEqual(["a.md", "b.md", "c.md", "d.md"])
      expect(info.origin(["instructions", "0"])?.file).toBe(global)
      expect(info.origin(["instructions", "2"])).toEqual({ file: project, key: "instructions.1", line: 4 })
      expect(info.origin(["instructions", "3"])?.file).toBe("env:AGENT_CONFIG_CONTENT")
    })))

  it.live("a bare permission action in any layer means {\"*\": action}", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const global = box.write(path.join(box.globalDir, "agent.json"), `{\n  "permission": "ask"\n}`)
      box.write(path.join(box.project, "agent.json"), { permission: { bash: "allow" } })
      const info = yield* loadConfig(box.instance())
      expect(info.config.permission).toEqual({ "*": "ask", bash: "allow" })
      expect(info.origin(["permission", "*"])).toEqual({ file: global, key: "permission", line: 2 })
    })))
})

describe("substitution", () => {
  it.live("{env:VAR} inserts the raw value, or nothing", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(
        path.join(box.project, "agent.json"),
        `{"model": "{env:MODEL}", "small_model": "x/{env:UNSET}y", "agent": {"build": {"temperature": {env:TEMP}}}}`
      )
      const { config } = yield* loadConfig(box.instance({ MODEL: "anthropic/claude", TEMP: "0.25" }))
      expect(config.model).toBe("anthropic/claude")
      expect(config.small_model).toBe("x/y")
      expect(config.agent?.build?.temperature).toBe(0.25)
    })))

  it.live("{file:path} inserts the trimmed, escaped content of a relative, ~/ or absolute path", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.project, "prompts", "build.txt"), `\n  Say "hi"\n\tthen a back\\slash\n\n`)
      box.write(path.join(box.home, "secrets", "key.txt"), "sk-123\n")
      const absolute = box.write(path.join(box.root, "abs.txt"), "abs")
      box.write(
        path.join(box.project, "agent.json"),
        [
          `{`,
          `  "agent": {"build": {"prompt": "{file:./prompts/build.txt}"}},`,
          `  "provider": {"x": {"options": {"apiKey": "{file:~/secrets/key.txt}", "baseURL": "{file:${absolute}}"}}},`,
          `  // "small_model": "{file:./does-not-exist.txt}",`,
          `  "model": "a/b"`,
          `}`
        ].join("\n")
      )
      const { config } = yield* loadConfig(box.instance())
      expect(config.agent?.build?.prompt).toBe(`Say "hi"\n\tthen a back\\slash`)
      expect(config.provider?.x?.options?.apiKey).toBe("sk-123")
      expect(config.provider?.x?.options?.baseURL).toBe("abs")
      expect(config.small_model).toBeUndefined()
    })))

  it.live("{file:path} in AGENT_CONFIG_CONTENT resolves against the directory", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.cwd, "model.txt"), "p/from-file")
      const { config } = yield* loadConfig(box.instance({ AGENT_CONFIG_CONTENT: `{"model": "{file:model.txt}"}` }))
      expect(config.model).toBe("p/from-file")
    })))

  it.live("a missing {file:} is an error naming the config file, the line and the resolved path", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const file = box.write(
        path.join(box.project, "agent.json"),
        `{\n  "model": "a/b",\n  "agent": {"build": {"prompt": "{file:prompts/nope.txt}"}}\n}`
      )
      const error = yield* Effect.flip(loadConfig(box.instance()))
      expect(error).toBeInstanceOf(ConfigError)
      expect(error.file).toBe(file)
      expect(error.line).toBe(3)
      expect(error.detail).toBe(
        `bad file reference: {file:prompts/nope.txt} (${path.join(box.project, "prompts", "nope.txt")} not found)`
      )
    })))
})

describe("parse errors", () => {
  it.live("accepts JSONC comments and trailing commas", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(
        path.join(box.project, "agent.jsonc"),
        `// project config\n{\n  /* block */ "model": "a/b", // why\n  "instructions": ["x.md",],\n}\n`
      )
      const { config } = yield* loadConfig(box.instance())
      expect(config.model).toBe("a/b")
      expect(config.instructions).toEqual(["x.md"])
    })))

  it.live("bad JSON is an error with file and line", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const file = box.write(path.join(box.project, "agent.json"), `{\n  "model": "a/b"\n  "small_model": "c/d"\n}`)
      const error = yield* Effect.flip(loadConfig(box.instance()))
      expect(error.file).toBe(file)
      expect(error.line).toBe(3)
      expect(error.detail).toContain("CommaExpected")
      expect(error.message).toContain(`${file}:3`)
    })))

  it.live("a non-object config is an error", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const file = box.write(path.join(box.project, "agent.json"), `["model"]`)
      const error = yield* Effect.flip(loadConfig(box.instance()))
      expect(error.file).toBe(file)
      expect(error.detail).toContain("expected a JSON object")
    })))

  it.live("an empty file is an empty config, with a warning naming it", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const file = box.write(path.join(box.project, "agent.json"), "\n")
      const info = yield* loadConfig(box.instance())
      expect(info.sources).toEqual([file])
      expect(info.warnings).toEqual([expect.objectContaining({ file, message: expect.stringMatching(/the file is empty/) })])
    })))
})

describe("validation", () => {
  it.live("an unknown top-level key is an error with line and key", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const file = box.write(path.join(box.project, "agent.json"), `{\n  "model": "a/b",\n  "foo": {"bar": 1}\n}`)
      const error = yield* Effect.flip(loadConfig(box.instance()))
      expect(error.file).toBe(file)
      expect(error.line).toBe(3)
      expect(error.key).toBe("foo")
      expect(error.detail).toBe(`unrecognized key "foo"`)
    })))

  it.live("a wrong type names the file that set it, the line and the key path", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.globalDir, "agent.json"), { agent: { plan: { steps: 3, description: "ok" } } })
      const text = `{\n  "agent": {\n    "plan": {\n      "steps": "ten"\n    }\n  }\n}`
      const file = box.write(path.join(box.project, "agent.json"), text)
      box.write(path.join(box.cwd, "agent.json"), { agent: { plan: { description: "nearer" } } })
      const error = yield* Effect.flip(loadConfig(box.instance()))
      expect(error).toBeInstanceOf(ConfigError)
      expect(error.file).toBe(file)
      expect(error.line).toBe(4)
      expect(error.key).toBe("agent.plan.steps")
      expect(error.detail).toContain(`"ten"`)
    })))

  it.live("a bad permission action names the pattern and the allowed actions", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const text = `{\n  "permission": {\n    "bash": {\n      "git *": "allow",\n      "rm *": "nope"\n    }\n  }\n}`
      const file = box.write(path.join(box.project, ".opencode", "opencode.jsonc"), text)
      const error = yield* Effect.flip(loadConfig(box.instance()))
      expect(error.file).toBe(file)
      expect(error.line).toBe(5)
      expect(error.key).toBe("permission.bash.rm *")
      expect(error.detail).toBe(`Expected "allow" | "deny" | "ask", actual "nope"`)
    })))

  it.live("a model that is not provider/model is an error at its key, in JSON and in front matter", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const file = box.write(path.join(box.project, "agent.json"), `{\n  "model": "a/b",\n  "agent": {\n    "build": {"model": "gpt-4o"}\n  }\n}`)
      const error = yield* Effect.flip(loadConfig(box.instance()))
      expect(error.file).toBe(file)
      expect(error.line).toBe(4)
      expect(error.key).toBe("agent.build.model")
      expect(error.detail).toBe(`expected "provider/model" (e.g. "anthropic/claude-sonnet-4-5"), actual "gpt-4o"`)

      box.write(file, { small_model: "haiku" })
      expect((yield* Effect.flip(loadConfig(box.instance()))).key).toBe("small_model")

      fs.rmSync(file)
      const md = box.write(path.join(box.project, ".agent", "agents", "review.md"), "---\ndescription: x\nmodel: sonnet\n---\nReview.\n")
      const mdError = yield* Effect.flip(loadConfig(box.instance()))
      expect([mdError.file, mdError.line, mdError.key]).toEqual([md, 3, "agent.review.model"])
      // the model id itself may hold slashes
      box.write(md, "---\nmodel: openrouter/meta-llama/llama-3.3-70b\n---\nReview.\n")
      expect((yield* loadConfig(box.instance())).config.agent?.review?.model).toBe("openrouter/meta-llama/llama-3.3-70b")
    })))

  it.live("a bad MCP entry names what the value should be, not the keys another kind of entry lacks", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const file = path.join(box.project, "agent.json")
      const detailOf = (mcp: object) =>
        Effect.gen(function*() {
          box.write(file, { mcp: { files: mcp } })
          const error = yield* Effect.flip(loadConfig(box.instance()))
          expect(error.file).toBe(file)
          return `${error.key}: ${error.detail}`
        })
      expect(yield* detailOf({ type: "local", command: "npx server" })).toBe(
        `mcp.files.command: Expected a non-empty array, actual "npx server"`
      )
      expect(yield* detailOf({ type: "local", command: [] })).toBe("mcp.files.command: must not be empty")
      expect(yield* detailOf({ type: "stdio", command: ["x"] })).toBe(`mcp.files.type: Expected "local" | "remote", actual "stdio"`)
    })))

  it.live("an unknown nested key is an error at that key", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const text = `{\n  "compaction": {\n    "auto": true,\n    "threshold": 3\n  }\n}`
      const file = box.write(path.join(box.project, "agent.json"), text)
      const error = yield* Effect.flip(loadConfig(box.instance()))
      expect(error.file).toBe(file)
      expect(error.line).toBe(4)
      expect(error.key).toBe("compaction.threshold")
      expect(error.detail).toContain(`unrecognized key "threshold"`)
    })))

  it.live("a wrong type in markdown front matter names the .md file", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const file = box.write(
        path.join(box.project, ".opencode", "agent", "review.md"),
        "---\ndescription: Reviews\ntemperature: hot\n---\nBody\n"
      )
      const error = yield* Effect.flip(loadConfig(box.instance()))
      expect(error.file).toBe(file)
      expect(error.line).toBe(3)
      expect(error.key).toBe("agent.review.temperature")
    })))

  it.live("OpenCode-only keys load with a warning naming the file", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const global = box.write(path.join(box.globalDir, "agent.json"), { theme: "tokyonight", model: "a/b" })
      const project = box.write(path.join(box.project, "opencode.json"), {
        keybinds: { leader: "ctrl+x" },
        lsp: false,
        experimental: { batch_tool: true, primary_tools: ["edit"] }
      })
      const info = yield* loadConfig(box.instance())
      expect(info.config.model).toBe("a/b")
      expect(info.config.experimental).toEqual({ primary_tools: ["edit"] })
      expect("theme" in info.config).toBe(false)
      expect(info.warnings.map(({ file, key }) => ({ file, key }))).toEqual([
        { file: global, key: "theme" },
        { file: project, key: "keybinds" },
        { file: project, key: "lsp" },
        { file: project, key: "experimental.batch_tool" }
      ])
    })))
})

describe("markdown agents", () => {
  it.live("loads agent/**/*.md and agents/**/*.md with nested names, and modes as primary agents", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const dir = path.join(box.project, ".opencode")
      box.write(
        path.join(dir, "agent", "review.md"),
        "---\ndescription: Reviews code\nmode: subagent\ntemperature: 0.1\npermission:\n  edit: deny\n---\n\n  You review code.\n\n"
      )
      box.write(path.join(dir, "agents", "frontend", "react.md"), "---\ndescription: React expert\n---\nUse hooks.")
      box.write(path.join(dir, "mode", "debug.md"), "---\nmodel: a/b\n---\nDebug things.\n")
      box.write(path.join(box.globalDir, "modes", "focus.md"), "No front matter at all.\n")
      const info = yield* loadConfig(box.instance())
      expect(info.config.agent).toEqual({
        focus: { prompt: "No front matter at all.", mode: "primary" },
        review: {
          description: "Reviews code",
          mode: "subagent",
          temperature: 0.1,
          permission: { edit: "deny" },
          prompt: "You review code."
        },
        "frontend/react": { description: "React expert", prompt: "Use hooks." },
        debug: { model: "a/b", prompt: "Debug things.", mode: "primary" }
      })
      expect(info.origin(["agent", "review", "permission", "edit"])).toEqual({
        file: path.join(dir, "agent", "review.md"),
        key: "permission.edit",
        line: 6
      })
      expect(info.origin(["agent", "review", "prompt"])?.line).toBe(9)
    })))

  it.live("unknown front matter keys move into options; maxSteps becomes steps", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(
        path.join(box.project, ".agent", "agent", "deep.md"),
        "---\nreasoningEffort: high\nmaxSteps: 7\noptions:\n  store: false\n---\nThink.\n"
      )
      const { config } = yield* loadConfig(box.instance())
      expect(config.agent?.deep).toEqual({
        options: { store: false, reasoningEffort: "high" },
        maxSteps: 7,
        steps: 7,
        prompt: "Think."
      })
    })))

  it.live("a description with an unquoted colon still loads", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.project, ".opencode", "agent", "sec.md"), "---\ndescription: Use for: audits\n---\nAudit.\n")
      const { config } = yield* loadConfig(box.instance())
      expect(config.agent?.sec?.description).toBe("Use for: audits")
    })))

  it.live("bad YAML is an error with file and line", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const file = box.write(
        path.join(box.project, ".opencode", "agent", "bad.md"),
        "---\ndescription: ok\ntools:\n  write: [false\n---\nBody\n"
      )
      const error = yield* Effect.flip(loadConfig(box.instance()))
      expect(error.file).toBe(file)
      expect(error.line).toBe(4)
      expect(error.detail).toContain("invalid YAML")
    })))
})

describe("agent entries", () => {
  it.live("unknown agent keys move into options, merged with explicit options; steps ??= maxSteps", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const text = `{\n  "agent": {\n    "build": {\n      "reasoningEffort": "high",\n      "options": {"store": true},\n      "maxSteps": 12\n    },\n    "plan": {"steps": 2, "maxSteps": 9}\n  }\n}`
      const file = box.write(path.join(box.project, "agent.json"), text)
      const info = yield* loadConfig(box.instance())
      expect(info.config.agent?.build).toEqual({ options: { store: true, reasoningEffort: "high" }, maxSteps: 12, steps: 12 })
      expect(info.config.agent?.plan?.steps).toBe(2)
      expect(info.origin(["agent", "build", "options", "reasoningEffort"])).toEqual({
        file,
        key: "agent.build.reasoningEffort",
        line: 4
      })
      expect(info.origin(["agent", "build", "steps"])).toEqual({ file, key: "agent.build.maxSteps", line: 6 })
    })))

  it.live("legacy mode.<name> becomes agent.<name> with mode primary", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.globalDir, "agent.json"), { agent: { review: { description: "d", mode: "subagent" } } })
      const file = box.write(path.join(box.project, "agent.json"), `{\n  "mode": {\n    "review": {"model": "a/b"}\n  }\n}`)
      const info = yield* loadConfig(box.instance())
      expect(info.config.agent?.review).toEqual({ description: "d", mode: "primary", model: "a/b" })
      expect("mode" in info.config).toBe(false)
      expect(info.origin(["agent", "review", "model"])).toEqual({ file, key: "mode.review.model", line: 3 })
      expect(info.origin(["mode"])).toBeUndefined()
    })))
})

describe("post-processing", () => {
  it.live("legacy top-level tools become permission rules; explicit permission wins", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const text = `{\n  "tools": {"write": false, "bash": true, "webfetch": false},\n  "permission": {"bash": {"git *": "allow"}, "read": "ask"}\n}`
      const file = box.write(path.join(box.project, "agent.json"), text)
      const info = yield* loadConfig(box.instance())
      expect(Object.entries(info.config.permission ?? {})).toEqual([
        ["edit", "deny"],
        ["bash", { "git *": "allow" }],
        ["webfetch", "deny"],
        ["read", "ask"]
      ])
      expect(info.origin(["permission", "edit"])).toEqual({ file, key: "tools.write", line: 2 })
      expect(info.origin(["permission", "bash", "git *"])).toEqual({ file, key: "permission.bash.git *", line: 3 })
    })))

  it.live("patch, multiedit and edit collapse into edit", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.project, "agent.json"), { tools: { patch: true, multiedit: false } })
      const { config } = yield* loadConfig(box.instance())
      expect(config.permission).toEqual({ edit: "deny" })
    })))

  it.live("AGENT_PERMISSION is merged into permission; invalid JSON is a warning", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.project, "agent.json"), { permission: { bash: { "*": "ask", "rm *": "allow" }, edit: "ask" } })
      const info = yield* loadConfig(box.instance({ AGENT_PERMISSION: `{"bash": {"rm *": "deny"}, "webfetch": "deny"}` }))
      expect(info.config.permission).toEqual({ bash: { "*": "ask", "rm *": "deny" }, edit: "ask", webfetch: "deny" })
      expect(info.origin(["permission", "bash", "rm *"])?.file).toBe("env:AGENT_PERMISSION")
      expect(info.sources).toContain("env:AGENT_PERMISSION")

      const bad = yield* loadConfig(box.instance({ AGENT_PERMISSION: `{bash: deny` }))
      expect(bad.config.permission).toEqual({ bash: { "*": "ask", "rm *": "allow" }, edit: "ask" })
      expect(bad.warnings).toEqual([expect.objectContaining({ file: "env:AGENT_PERMISSION", key: "permission" })])
    })))

  it.live("the managed dir wins over AGENT_PERMISSION, and its permission is kept apart in its own order", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.project, "agent.json"), { permission: { bash: { "git *": "deny", "*": "allow" } } })
      const managedText = `{\n  "tools": {"webfetch": false},\n  "permission": {\n    "bash": {\n      "*": "deny",\n      "git *": "allow"\n    }\n  }\n}`
      const managed = box.write(path.join(box.managedDir, "agent.json"), managedText)
      const info = yield* loadConfig(box.instance({ AGENT_PERMISSION: `{"webfetch": "allow", "bash": {"*": "allow"}}` }))
      // merged: the managed values win, at the positions the user's keys already had
      expect(info.config.permission).toEqual({ webfetch: "allow", bash: { "git *": "allow", "*": "deny" } })
      expect(info.origin(["permission", "bash", "*"])?.file).toBe(managed)
      // the policy: the managed files alone, as written (tools first, explicit permission on top)
      expect(info.managed?.permission).toEqual({ webfetch: "deny", bash: { "*": "deny", "git *": "allow" } })
      expect(Object.keys((info.managed?.permission as Record<string, object>).bash!)).toEqual(["*", "git *"])
      expect(info.managed?.origin(["permission", "bash", "git *"])).toEqual({
        file: managed,
        key: "permission.bash.git *",
        line: lineOf(managedText, `"git *"`)
      })
      expect(info.managed?.origin(["permission", "webfetch"])).toMatchObject({ file: managed, key: "tools.webfetch", line: 2 })

      fs.rmSync(managed)
      expect((yield* loadConfig(box.instance())).managed).toBeUndefined()
    })))

  it.live("a bad managed permission is an error naming the managed file", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const managed = box.write(path.join(box.managedDir, "agent.json"), `{\n  "permission": {"bash": {"curl *": "never"}}\n}`)
      const error = yield* Effect.flip(loadConfig(box.instance()))
      expect(error.file).toBe(managed)
      expect(error.line).toBe(2)
      expect(error.key).toBe("permission.bash.curl *")
    })))

  it.live("username defaults to the OS user; compaction switches come from env", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.project, "agent.json"), { compaction: { auto: true, tail_turns: 2 } })
      const plain = yield* loadConfig(box.instance())
      expect(plain.config.username).toBe(os.userInfo().username)
      expect(plain.origin(["username"])?.file).toBe("default")
      expect(plain.config.compaction).toEqual({ auto: true, tail_turns: 2 })

      box.write(path.join(box.cwd, "agent.json"), { username: "ci-bot" })
      const env = yield* loadConfig(box.instance({ AGENT_DISABLE_AUTOCOMPACT: "1", AGENT_DISABLE_PRUNE: "true" }))
      expect(env.config.username).toBe("ci-bot")
      expect(env.config.compaction).toEqual({ auto: false, tail_turns: 2, prune: false })
      expect(env.origin(["compaction", "auto"])?.file).toBe("env:AGENT_DISABLE_AUTOCOMPACT")
    })))
})

describe("provenance", () => {
  it.live("origin names the file and line of each value", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const globalText = `{\n  "permission": {\n    "bash": "ask",\n    "edit": "deny"\n  }\n}`
      const global = box.write(path.join(box.globalDir, "agent.jsonc"), globalText)
      const projectText = `{\n  // team rules\n  "permission": {\n    "bash": {\n      "git *": "allow"\n    }\n  }\n}`
      const project = box.write(path.join(box.project, "opencode.jsonc"), projectText)
      const info = yield* loadConfig(box.instance())
      expect(info.origin(["permission", "bash"])).toEqual({
        file: project,
        key: "permission.bash",
        line: lineOf(projectText, `"bash"`)
      })
      expect(info.origin(["permission", "bash", "git *"])).toEqual({ file: project, key: "permission.bash.git *", line: 5 })
      expect(info.origin(["permission", "edit"])).toEqual({ file: global, key: "permission.edit", line: 4 })
      // Not set anywhere: the nearest ancestor answers.
      expect(info.origin(["permission", "bash", "ls *"])?.file).toBe(project)
    })))

  it.live("a later source replacing a subtree drops the provenance of the replaced values", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.globalDir, "agent.json"), { permission: { bash: { "git *": "allow", "rm *": "deny" } } })
      const project = box.write(path.join(box.project, "agent.json"), `{\n  "permission": {\n    "bash": "ask"\n  }\n}`)
      const info = yield* loadConfig(box.instance())
      expect(info.config.permission).toEqual({ bash: "ask" })
      expect(info.origin(["permission", "bash", "git *"])).toEqual({ file: project, key: "permission.bash", line: 3 })
    })))

  it.live("a scalar replaced by an object keeps only the object's provenance", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.globalDir, "agent.json"), { permission: { bash: "deny", edit: "ask" } })
      const project = box.write(path.join(box.project, "agent.json"), { permission: { bash: { "git *": "allow" } } })
      const info = yield* loadConfig(box.instance())
      expect(info.origin(["permission", "bash"])?.file).toBe(project)
      expect(info.origin(["permission", "bash", "rm *"])?.file).toBe(project)
      expect(info.origin(["permission"])?.file).toBe(project)
    })))
})

describe("ConfigService layers", () => {
  it.live("layer loads the Instance's config once; layerFromInfo serves a given one", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.project, "agent.json"), { model: "p/layer" })
      const instance = Layer.succeed(Instance, box.instance())
      const config = yield* Effect.gen(function*() {
        const service = yield* ConfigService
        return yield* service.get()
      }).pipe(Effect.provide(ConfigService.layer.pipe(Layer.provide(instance))))
      expect(config.model).toBe("p/layer")

      const info = yield* loadConfig(box.instance())
      const served = yield* Effect.gen(function*() {
        return yield* (yield* ConfigService).info()
      }).pipe(Effect.provide(ConfigService.layerFromInfo(info)))
      expect(served).toBe(info)
    })))

  it.live("layer fails with ConfigError on a broken config", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.project, "agent.json"), `{"model": }`)
      const instance = Layer.succeed(Instance, box.instance())
      const error = yield* Effect.flip(
        Effect.gen(function*() {
          return yield* (yield* ConfigService).get()
        }).pipe(Effect.provide(ConfigService.layer.pipe(Layer.provide(instance))))
      )
      expect(error).toBeInstanceOf(ConfigError)
    })))
})
