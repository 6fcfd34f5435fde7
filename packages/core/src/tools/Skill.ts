import { Effect, Schema } from "effect"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import * as Prompts from "../runtime/Prompts.js"
import { fileUrl, parseSkill, type Skill, SkillRegistry } from "../context/SkillRegistry.js"
import * as Tool from "../tool/Tool.js"

/** Files listed in the output, after sorting. */
const MAX_LISTED = 10
/** Files looked at in a skill directory before sorting; a directory with more is sampled. */
const MAX_SCANNED = 2_000
const SKIP_DIRS: ReadonlySet<string> = new Set([".git", "node_modules"])

const Parameters = Schema.Struct({
  name: Schema.String.annotations({ description: "The name of the skill to load, as listed in the available skills" })
})

/** Files in the skill's directory (recursively, SKILL.md itself excluded), sorted, at most `MAX_LISTED`. */
const skillFiles = async (skill: Skill): Promise<Array<string>> => {
  const found: Array<string> = []
  const queue = [skill.directory]
  while (queue.length > 0 && found.length < MAX_SCANNED) {
    const dir = queue.shift()!
    const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => [])
    for (const entry of entries) {
      const full = path.join(dir, entry.name)
      if (entry.isDirectory()) {
        if (!SKIP_DIRS.has(entry.name)) queue.push(full)
      } else if (full !== skill.location) {
        found.push(full)
      }
    }
  }
  return found.sort().slice(0, MAX_LISTED)
}

const render = (skill: Skill, body: string, files: ReadonlyArray<string>): string =>
  [
    `<skill_content name="${skill.name}">`,
    `# Skill: ${skill.name}`,
    "",
    body,
    "",
    `Base directory for this skill: ${fileUrl(skill.directory)}`,
    `Paths mentioned in this skill (scripts, references, templates) are relative to that directory; the list below shows at most ${MAX_LISTED} of its files.`,
    "",
    "<skill_files>",
    ...files.map((file) => `<file>${file}</file>`),
    "</skill_files>",
    "</skill_content>"
  ].join("\n")

/** The `skill` tool: loads a skill's instructions into the conversation. */
export const make: Effect.Effect<Tool.AnyTool, never, SkillRegistry> = Effect.gen(function*() {
  const registry = yield* SkillRegistry
  const base = Prompts.read("tool/skill.txt")

  const fail = (detail: string) => new Tool.ToolExecutionError({ tool: "skill", detail })

  return Tool.make({
    id: "skill",
    fileEffects: "none",
    description: base,
    parameters: Parameters,
    describe: (agent) =>
      Effect.map(registry.forAgent(agent), (skills) =>
        skills.length === 0
          ? `${base}\n\nNo skills are available.`
          : `${base}\n\nAvailable skills:\n${skills.map((skill) => `- ${skill.name}: ${skill.description}`).join("\n")}`),
    execute: (params, context) =>
      Effect.gen(function*() {
        const skill = yield* registry.get(params.name)
        if (skill === undefined) {
          const names = (yield* registry.forAgent(context.agent)).map((s) => s.name)
          return yield* fail(
            `Skill "${params.name}" not found. Available skills: ${names.length > 0 ? names.join(", ") : "none"}`
          )
        }
        yield* context.ask({ permission: "skill", patterns: [skill.name], always: [skill.name], metadata: {} })
        const raw = yield* Effect.promise(() => fsp.readFile(skill.location, "utf8").then((text) => text, () => undefined))
        if (raw === undefined) return yield* fail(`The skill "${skill.name}" can no longer be read from ${skill.location}.`)
        const parsed = parseSkill(raw)
        if (parsed._tag === "Invalid") {
          return yield* fail(`The skill "${skill.name}" in ${skill.location} is broken: ${parsed.reason}.`)
        }
        const files = yield* Effect.promise(() => skillFiles(skill))
        return {
          title: `Loaded skill: ${skill.name}`,
          output: render(skill, parsed.body, files),
          metadata: { name: skill.name, dir: skill.directory }
        }
      })
  })
})
