import { Agent, DeniedError, type MessageID, type SessionID, type ToolPart } from "@agent/domain"
import { ScriptedModel, TestInstance, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Logger } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { ConfigService } from "../src/config/ConfigService.js"
import { Instance } from "../src/runtime/Instance.js"
import * as Permission from "../src/permission/Permission.js"
import * as Prompts from "../src/runtime/Prompts.js"
import { SessionLoop } from "../src/session/SessionLoop.js"
import { SessionStore } from "../src/store/SessionStore.js"
import { SkillRegistry } from "../src/context/SkillRegistry.js"
import * as Tool from "../src/tool/Tool.js"
import * as SkillTool from "../src/tools/Skill.js"

const skillFile = (name: string, description: string, body = `Body of ${name}.`) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n\n${body}\n`

/** A registry over a fresh sandbox; `setup` may add files once the sandbox paths are known. */
const registryFor = (options: TestInstance.TestInstanceOptions, setup?: (box: TestInstance.Sandbox) => void) =>
  Effect.gen(function*() {
    const box = yield* TestInstance.sandbox(options)
    setup?.(box)
    const logs: Array<string> = []
    const capture = Logger.make(({ message }) => {
      logs.push(Array.isArray(message) ? message.map(String).join(" ") : String(message))
    })
    const context = yield* Layer.build(
      SkillRegistry.layer.pipe(
        Layer.provideMerge(ConfigService.layer),
        Layer.provideMerge(Layer.succeed(Instance, box.instance))
      )
    ).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, capture)))
    const registry = Context.get(context, SkillRegistry)
    return { box, registry, logs, context }
  })

const agentWith = (permission: Parameters<typeof Permission.fromConfig>[0]) =>
  new Agent({ name: "build", mode: "primary", native: true, permission: Permission.fromConfig(permission), options: {} })

const allowAll = agentWith({ "*": "allow" })

/** A tool context whose asks are recorded and answered from `answers` (default allow). */
const contextFor = (agent: Agent, answers: Record<string, "allow" | "deny"> = {}) => {
  const asks: Array<{ permission: string; patterns: ReadonlyArray<string>; always: ReadonlyArray<string> }> = []
  const context: Tool.ToolContext = {
    sessionID: "ses_test" as SessionID,
    messageID: "msg_test" as MessageID,
    callID: "call_1",
    agent,
    abort: new AbortController().signal,
    ask: (request) =>
      Effect.suspend(() => {
        asks.push({ permission: request.permission, patterns: request.patterns, always: request.always })
        return answers[request.patterns[0] ?? ""] === "deny"
          ? Effect.fail(new DeniedError({ permission: request.permission, pattern: request.patterns[0] ?? "", rules: [] }))
          : Effect.void
      }),
    rules: [],
    metadata: () => Effect.void
  }
  return { context, asks }
}

describe("SkillRegistry discovery", () => {
  it.scopedLive("finds skills in every kind of location, first location winning on a name", () =>
    Effect.gen(function*() {
      const { box, registry } = yield* registryFor(
        {
          cwd: "project/packages/app",
          files: {
            // 1. .agents/.claude skill dirs from the working directory up to the root.
            "project/packages/app/.claude/skills/near/SKILL.md": skillFile("near", "in the working directory"),
            "project/packages/app/.claude/skills/shared/SKILL.md": skillFile("shared", "from the working directory"),
            "project/.agents/skills/root-agents/SKILL.md": skillFile("root-agents", "root .agents"),
            "project/.claude/skills/root-claude/SKILL.md": skillFile("root-claude", "root .claude"),
            "project/.claude/skills/shared/SKILL.md": skillFile("shared", "from the root"),
            "project/.agents/skills/both/SKILL.md": skillFile("both", "from .agents"),
            "project/.claude/skills/both/SKILL.md": skillFile("both", "from .claude"),
            // 2. Config directories: {skill,skills}/**/SKILL.md.
            "project/.opencode/skills/group/deep/SKILL.md": skillFile("deep", "nested in .opencode/skills"),
            "project/.agent/skill/single/SKILL.md": skillFile("single", ".agent/skill"),
            "project/.agent/skills/shared/SKILL.md": skillFile("shared", "from .agent"),
            "home/.config/agent/skills/global-config/SKILL.md": skillFile("global-config", "global config dir"),
            "home/.config/agent/skills/cfg-vs-paths/SKILL.md": skillFile("cfg-vs-paths", "from the config dir"),
            // 3. skills.paths.
            "project/tools/skills/x/y/SKILL.md": skillFile("pathed", "from skills.paths"),
            "project/tools/skills/cfg-vs-paths/SKILL.md": skillFile("cfg-vs-paths", "from skills.paths"),
            "project/tools/skills/paths-vs-home/SKILL.md": skillFile("paths-vs-home", "from skills.paths"),
            "home/extra-skills/z/SKILL.md": skillFile("home-path", "from ~/extra-skills"),
            "project/agent.json": { skills: { paths: ["tools/skills", "~/extra-skills"] } },
            // 4. The user's own skills.
            "home/.agents/skills/agents-home/SKILL.md": skillFile("agents-home", "~/.agents"),
            "home/.claude/skills/claude-home/SKILL.md": skillFile("claude-home", "~/.claude"),
            "home/.claude/skills/paths-vs-home/SKILL.md": skillFile("paths-vs-home", "from ~/.claude"),
            "home/.claude/skills/near/SKILL.md": skillFile("near", "from ~/.claude"),
            // Only one level below ~/.claude/skills counts.
            "home/.claude/skills/group/inner/SKILL.md": skillFile("too-deep", "two levels down")
          }
        }
      )
      const skills = yield* registry.list()
      const described = Object.fromEntries(skills.map((skill) => [skill.name, skill.description]))
      expect(described).toEqual({
        "agents-home": "~/.agents",
        both: "from .agents",
        "cfg-vs-paths": "from the config dir",
        "claude-home": "~/.claude",
        deep: "nested in .opencode/skills",
        "global-config": "global config dir",
        "home-path": "from ~/extra-skills",
        near: "in the working directory",
        pathed: "from skills.paths",
        "paths-vs-home": "from skills.paths",
        "root-agents": "root .agents",
        "root-claude": "root .claude",
        shared: "from the working directory",
        single: ".agent/skill"
      })
      // Sorted by name.
      expect(skills.map((skill) => skill.name)).toEqual(Object.keys(described).sort())
      const deep = yield* registry.get("deep")
      expect(deep).toEqual({
        name: "deep",
        description: "nested in .opencode/skills",
        location: box.path("project/.opencode/skills/group/deep/SKILL.md"),
        directory: box.path("project/.opencode/skills/group/deep")
      })
      expect(yield* registry.get("too-deep")).toBeUndefined()
      expect(yield* registry.get("missing")).toBeUndefined()
    }))

  it.scopedLive("broken or incomplete SKILL.md files are skipped with a warning naming the file", () =>
    Effect.gen(function*() {
      const { box, logs, registry } = yield* registryFor({
        files: {
          "project/.claude/skills/good/SKILL.md": skillFile("good", "works"),
          "project/.claude/skills/no-description/SKILL.md": "---\nname: no-description\n---\nbody\n",
          "project/.claude/skills/no-name/SKILL.md": "---\ndescription: nameless\n---\nbody\n",
          "project/.claude/skills/bad-yaml/SKILL.md": "---\nname: [unclosed\ndescription: x\n---\nbody\n",
          "project/.claude/skills/no-front/SKILL.md": "# Just markdown\n"
        }
      })
      expect((yield* registry.list()).map((skill) => skill.name)).toEqual(["good"])
      const warned = (dir: string) => logs.find((line) => line.includes(box.path(`project/.claude/skills/${dir}/SKILL.md`)))
      expect(warned("no-description")).toMatch(/no `description`/)
      expect(warned("no-name")).toMatch(/no `name`/)
      expect(warned("bad-yaml")).toMatch(/invalid YAML/)
      expect(warned("no-front")).toMatch(/no YAML front matter/)
      expect(warned("good")).toBeUndefined()
    }))

  it.scopedLive("symlinked skill directories are followed and their real path is listed", () =>
    Effect.gen(function*() {
      const { box, registry } = yield* registryFor({ files: { "store/linked/SKILL.md": skillFile("linked", "via a link") } }, (box) => {
        fs.mkdirSync(box.path("home/.claude/skills"), { recursive: true })
        fs.symlinkSync(box.path("store/linked"), box.path("home/.claude/skills/linked"))
        // A link loop inside a recursive root must not hang discovery.
        fs.mkdirSync(box.path("project/.opencode/skills/loop"), { recursive: true })
        fs.symlinkSync(box.path("project/.opencode/skills"), box.path("project/.opencode/skills/loop/again"))
      })
      expect((yield* registry.get("linked"))?.directory).toBe(box.path("home/.claude/skills/linked"))
      expect(yield* registry.directories()).toEqual([box.path("home/.claude/skills/linked"), box.path("store/linked")])
    }))

  it.scopedLive("200 skills: discovery time", () =>
    Effect.gen(function*() {
      const files: Record<string, string> = {}
      for (let index = 0; index < 200; index++) {
        const id = String(index).padStart(3, "0")
        const where = index % 4 === 0
          ? `project/.claude/skills/s${id}`
          : index % 4 === 1
          ? `project/.agent/skills/group${index % 7}/s${id}`
          : index % 4 === 2
          ? `home/.claude/skills/s${id}`
          : `home/.config/agent/skills/nested/s${id}`
        files[`${where}/SKILL.md`] = skillFile(`skill-${id}`, `Skill number ${id}`)
        files[`${where}/scripts/run.sh`] = "echo hi\n"
        files[`${where}/reference/notes.md`] = "notes\n"
      }
      const box = yield* TestInstance.sandbox({ files })
      const started = performance.now()
      const context = yield* Layer.build(
        SkillRegistry.layer.pipe(Layer.provideMerge(ConfigService.layer), Layer.provideMerge(Layer.succeed(Instance, box.instance)))
      )
      const built = performance.now() - started
      const skills = yield* Context.get(context, SkillRegistry).list()
      const discovered = performance.now() - started
      console.log(`skill discovery: ${skills.length} skills; layer built in ${built.toFixed(1)} ms, discovery done after ${discovered.toFixed(1)} ms`)
      expect(skills).toHaveLength(200)
      expect(discovered).toBeLessThan(2_000)
    }))
})

describe("SkillRegistry per agent", () => {
  const files = {
    "project/.claude/skills/public/SKILL.md": skillFile("public", "Anyone may use this"),
    "project/.claude/skills/secret/SKILL.md": skillFile("secret", "Only some agents may use this & <that>")
  }

  it.scopedLive("a denied skill is hidden from forAgent, the system block and the tool description", () =>
    Effect.gen(function*() {
      const { box, context, registry } = yield* registryFor({ files })
      const restricted = agentWith({ "*": "allow", skill: { "*": "allow", secret: "deny" } })
      const tool = yield* Effect.provide(SkillTool.make, context)

      expect((yield* registry.forAgent(allowAll)).map((s) => s.name)).toEqual(["public", "secret"])
      expect((yield* registry.forAgent(restricted)).map((s) => s.name)).toEqual(["public"])

      const full = yield* registry.systemBlock(allowAll)
      expect(full).toBe(
        [
          Prompts.read("session/skills.txt"),
          "",
          "<available_skills>",
          "  <skill>",
          "    <name>public</name>",
          "    <description>Anyone may use this</description>",
          `    <location>file://${box.path("project/.claude/skills/public/SKILL.md")}</location>`,
          "  </skill>",
          "  <skill>",
          "    <name>secret</name>",
          "    <description>Only some agents may use this &amp; &lt;that&gt;</description>",
          `    <location>file://${box.path("project/.claude/skills/secret/SKILL.md")}</location>`,
          "  </skill>",
          "</available_skills>"
        ].join("\n")
      )
      const limited = yield* registry.systemBlock(restricted)
      expect(limited).toContain("<name>public</name>")
      expect(limited).not.toContain("secret")

      const description = yield* tool.describe!(allowAll)
      expect(description.startsWith(Prompts.read("tool/skill.txt"))).toBe(true)
      expect(description).toContain("- public: Anyone may use this")
      expect(description).toContain("- secret: Only some agents may use this & <that>")
      const limitedDescription = yield* tool.describe!(restricted)
      expect(limitedDescription).toContain("- public: Anyone may use this")
      expect(limitedDescription).not.toContain("secret")
    }))

  it.scopedLive("no system block when the skill tool is off for the agent or no skill is visible", () =>
    Effect.gen(function*() {
      const { registry } = yield* registryFor({ files })
      expect(yield* registry.systemBlock(agentWith({ "*": "allow", skill: "deny" }))).toBeUndefined()
      expect(yield* registry.systemBlock(agentWith({ "*": "allow", skill: { public: "deny", secret: "deny" } }))).toBeUndefined()
      expect(yield* registry.systemBlock(agentWith({ "*": "allow", skill: { secret: "deny" } }))).toContain("<name>public</name>")

      const empty = yield* registryFor({})
      expect(yield* empty.registry.list()).toEqual([])
      expect(yield* empty.registry.systemBlock(allowAll)).toBeUndefined()
    }))
})

describe("skill tool", () => {
  const body = "Follow these steps.\n\nRun `scripts/build.sh` first."
  const files: Record<string, string> = {
    "project/.claude/skills/builder/SKILL.md": skillFile("builder", "Builds things", body),
    "project/.claude/skills/builder/scripts/build.sh": "echo build\n",
    "project/.claude/skills/builder/reference/api.md": "api\n",
    "project/.claude/skills/builder/node_modules/dep/index.js": "skipped\n",
    "project/.claude/skills/builder/nested/SKILL.md": "not a skill of its own here (no front matter)\n",
    "project/.claude/skills/other/SKILL.md": skillFile("other", "Another skill")
  }
  for (let index = 0; index < 12; index++) files[`project/.claude/skills/builder/templates/t${String(index).padStart(2, "0")}.txt`] = "t\n"

  it.scopedLive("loads the skill: asks `skill` for the name, returns the body, base directory and files", () =>
    Effect.gen(function*() {
      const { box, context } = yield* registryFor({ files })
      const tool = yield* Effect.provide(SkillTool.make, context)
      const { asks, context: ctx } = contextFor(allowAll)
      const result = yield* tool.execute({ name: "builder" }, ctx)
      const dir = box.path("project/.claude/skills/builder")
      expect(asks).toEqual([{ permission: "skill", patterns: ["builder"], always: ["builder"] }])
      expect(result.title).toBe("Loaded skill: builder")
      const listed = [
        "nested/SKILL.md",
        "reference/api.md",
        "scripts/build.sh",
        "templates/t00.txt",
        "templates/t01.txt",
        "templates/t02.txt",
        "templates/t03.txt",
        "templates/t04.txt",
        "templates/t05.txt",
        "templates/t06.txt"
      ].map((file) => path.join(dir, file))
      expect(result.output).toBe(
        [
          `<skill_content name="builder">`,
          "# Skill: builder",
          "",
          body,
          "",
          `Base directory for this skill: file://${dir}`,
          "Paths mentioned in this skill (scripts, references, templates) are relative to that directory; the list below shows at most 10 of its files.",
          "",
          "<skill_files>",
          ...listed.map((file) => `<file>${file}</file>`),
          "</skill_files>",
          "</skill_content>"
        ].join("\n")
      )
      expect(result.output).not.toContain("---")
      expect(result.output).not.toContain(`<file>${path.join(dir, "SKILL.md")}</file>`)
    }))

  it.scopedLive("an unknown skill fails with the list of skills the agent can use", () =>
    Effect.gen(function*() {
      const { context } = yield* registryFor({ files })
      const tool = yield* Effect.provide(SkillTool.make, context)
      const { asks, context: ctx } = contextFor(agentWith({ "*": "allow", skill: { other: "deny" } }))
      const error = yield* Effect.flip(tool.execute({ name: "nope" }, ctx))
      expect(error).toBeInstanceOf(Tool.ToolExecutionError)
      expect(error.message).toBe(`Skill "nope" not found. Available skills: builder`)
      expect(asks).toEqual([])
    }))

  it.scopedLive("a denied ask fails the call without loading the skill", () =>
    Effect.gen(function*() {
      const { context } = yield* registryFor({ files })
      const tool = yield* Effect.provide(SkillTool.make, context)
      const { asks, context: ctx } = contextFor(allowAll, { builder: "deny" })
      const error = yield* Effect.flip(tool.execute({ name: "builder" }, ctx))
      expect(error).toBeInstanceOf(DeniedError)
      expect(asks).toHaveLength(1)
    }))

  it.scopedLive("through the loop: the model loads a skill and sees its content", () =>
    Effect.gen(function*() {
      // The runtime discovers the skills in its own sandbox and offers its built-in skill tool.
      const runtime = yield* TestRuntime.make({
        model: ScriptedModel.make([[ScriptedModel.toolCall("skill", { name: "builder" })], "Loaded it."]),
        files
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const session = yield* store.create({ title: "skills" })
        const outcome = yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "build it" }] })
        expect(outcome.reason).toBe("completed")
        const messages = yield* store.messages(session.id)
        const part = messages.flatMap((message) => message.parts).find((p): p is ToolPart => p.type === "tool")
        expect(part?.state.status).toBe("completed")
        const output = part?.state.status === "completed" ? part.state.output : ""
        expect(output).toMatch(/^<skill_content name="builder">\n# Skill: builder\n\nFollow these steps\./)
      }).pipe(Effect.provide(runtime.layer))
    }))
})
