import { ConfigError } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Scope } from "effect"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { makeAgentRegistry } from "../../src/agent/AgentRegistry.js"
import { loadConfig } from "../../src/config/ConfigService.js"
import * as Permission from "../../src/permission/Permission.js"
import { lineOf, sandbox } from "./helpers.js"

const live = <A, E>(body: Effect.Effect<A, E, Scope.Scope>) => Effect.scoped(body)
const url = (file: string) => pathToFileURL(file).href

/** OpenCode's deprecated keys load as OpenCode's config.ts migrates them. */
describe("legacy keys", () => {
  it.live("autoshare: true without share reads as share: \"auto\", set where autoshare was", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const text = `{\n  "model": "a/b",\n  "autoshare": true\n}`
      const file = box.write(path.join(box.project, "opencode.json"), text)
      const info = yield* loadConfig(box.instance())
      expect(info.config.share).toBe("auto")
      expect("autoshare" in info.config).toBe(false)
      expect(info.origin(["share"])).toEqual({ file, key: "autoshare", line: 3 })
      expect(info.warnings).toEqual([{ file, key: "autoshare", message: '"autoshare" is deprecated; read as "share": "auto" (use "share")' }])
    })))

  it.live("a share set in any file wins over autoshare; autoshare: false sets nothing", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.globalDir, "agent.json"), { share: "disabled" })
      box.write(path.join(box.project, "opencode.json"), { autoshare: true })
      expect((yield* loadConfig(box.instance())).config.share).toBe("disabled")

      const other = yield* sandbox
      other.write(path.join(other.project, "opencode.json"), { autoshare: false })
      const info = yield* loadConfig(other.instance())
      expect(info.config.share).toBeUndefined()
      expect(info.origin(["share"])).toBeUndefined()
    })))

  it.live("an autoshare that is not a boolean is an error at its line", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const text = `{\n  "autoshare": "yes"\n}`
      const file = box.write(path.join(box.project, "opencode.json"), text)
      const error = yield* Effect.flip(loadConfig(box.instance()))
      expect(error).toBeInstanceOf(ConfigError)
      expect(error.message).toBe(`${file}:2: autoshare: Expected boolean, actual "yes"`)
    })))

  it.live("an OpenCode config with every legacy agent form resolves as OpenCode resolves it", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.project, "opencode.json"), {
        tools: { webfetch: false },
        mode: { review: { model: "a/b", tools: { write: false, bash: true }, maxSteps: 4, reasoningEffort: "high" } },
        agent: { build: { maxSteps: 9, textVerbosity: "low", options: { store: false } } }
      })
      const info = yield* loadConfig(box.instance())
      const agents = makeAgentRegistry(box.instance(), info)
      const review = yield* agents.get("review")
      expect(review).toMatchObject({ mode: "primary", steps: 4, options: { reasoningEffort: "high" }, model: { providerID: "a", modelID: "b" } })
      expect(Permission.evaluate("edit", "src/a.ts", review.permission).action).toBe("deny")
      expect(Permission.evaluate("bash", "make", review.permission).action).toBe("allow")
      expect(Permission.evaluate("webfetch", "https://example.com", review.permission).action).toBe("deny")
      const build = yield* agents.get("build")
      expect(build).toMatchObject({ steps: 9, options: { store: false, textVerbosity: "low" } })
    })))
})

describe("plugin", () => {
  it.live("lists from every file and config dir are merged: one entry per package or file, the later one where it stands", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const global = box.write(path.join(box.globalDir, "agent.json"), { plugin: ["oh-my-opencode@2.4.3", "@scope/pkg@1.0.0", "./mine.js"] })
      box.write(path.join(box.globalDir, "plugins", "notify.ts"), "export default {}\n")
      box.write(path.join(box.globalDir, "plugins", "README.md"), "not a plugin\n")
      const text = `{\n  "plugin": [\n    "@scope/pkg@2.0.0",\n    ["./tools/local.ts", {"level": 2}],\n    "oh-my-opencode"\n  ]\n}`
      const project = box.write(path.join(box.project, "opencode.json"), text)
      const dirFile = box.write(path.join(box.project, ".opencode", "opencode.json"), { plugin: ["./tools/local.ts", "file:///opt/p.js"] })
      const dirPlugin = box.write(path.join(box.project, ".agent", "plugin", "audit.js"), "export default {}\n")
      const info = yield* loadConfig(box.instance())
      const local = url(path.join(box.project, "tools", "local.ts"))
      expect(info.config.plugin).toEqual([
        // Relative paths: from the listing file's dir, or the project for a file in .opencode/.
        url(path.join(box.globalDir, "mine.js")),
        "@scope/pkg@2.0.0",
        "oh-my-opencode",
        // Config dirs come after the project's files, the global one first.
        url(path.join(box.globalDir, "plugins", "notify.ts")),
        local,
        "file:///opt/p.js",
        url(dirPlugin)
      ])
      expect(info.origin(["plugin", "0"])).toMatchObject({ file: global, key: "plugin.2" })
      expect(info.origin(["plugin", "1"])).toEqual({ file: project, key: "plugin.0", line: lineOf(text, "@scope/pkg@2.0.0") })
      expect(info.origin(["plugin", "2"])).toEqual({ file: project, key: "plugin.2", line: lineOf(text, '"oh-my-opencode"') })
      expect(info.origin(["plugin", "3"])).toEqual({ file: path.join(box.globalDir, "plugins", "notify.ts"), key: "plugin" })
      expect(info.origin(["plugin", "4"])).toMatchObject({ file: dirFile, key: "plugin.0" })
      expect(info.origin(["plugin", "6"])).toEqual({ file: dirPlugin, key: "plugin" })
      expect(info.warnings.filter((w) => w.message.includes("plugins do not run")).map((w) => w.file)).toEqual([
        global,
        project,
        path.join(box.globalDir, "plugins", "notify.ts"),
        dirFile,
        dirPlugin
      ])
    })))

  it.live("an entry's options are kept; a later entry without options replaces it", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.globalDir, "agent.json"), { plugin: [["tuned", { level: 1 }], ["kept@1", { on: true }]] })
      box.write(path.join(box.project, "opencode.json"), { plugin: ["tuned@3"] })
      const info = yield* loadConfig(box.instance())
      expect(info.config.plugin).toEqual([["kept@1", { on: true }], "tuned@3"])
    })))

  it.live("an entry that is not a specifier is an error at its line", () =>
    live(Effect.gen(function*() {
      const box = yield* sandbox
      const text = `{\n  "plugin": [\n    "ok",\n    42\n  ]\n}`
      const file = box.write(path.join(box.project, "opencode.json"), text)
      const error = yield* Effect.flip(loadConfig(box.instance()))
      expect(error.file).toBe(file)
      expect(error.line).toBe(4)
      expect(error.key).toBe("plugin.1")
    })))
})
