import type { Agent } from "@agent/domain"
import { Context, Effect, Fiber, Layer } from "effect"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { parse as parseYaml } from "yaml"
import { ConfigService } from "../config/ConfigService.js"
import * as Prompts from "../runtime/Prompts.js"
import { Instance, type InstanceInfo } from "../runtime/Instance.js"
import * as Permission from "../permission/Permission.js"
import { isWithin as within } from "../tool/ExternalDirectory.js"
import { pullSkills } from "./SkillDownload.js"

/** A skill: a `SKILL.md` whose front matter names and describes it. */
export interface Skill {
  readonly name: string
  readonly description: string
  /** The `SKILL.md` file. */
  readonly location: string
  /** The directory holding `SKILL.md`; paths inside the skill are relative to it. */
  readonly directory: string
}

export interface SkillRegistryShape {
  /** Every skill found, sorted by name. */
  readonly list: () => Effect.Effect<ReadonlyArray<Skill>>
  readonly get: (name: string) => Effect.Effect<Skill | undefined>
  /** The skills `agent` may load: those its rules do not deny (`skill` permission, the name as pattern). */
  readonly forAgent: (agent: Agent) => Effect.Effect<ReadonlyArray<Skill>>
  /**
   * The system-prompt block listing the agent's skills; undefined when it has none or its
   * rules switch the `skill` tool off.
   */
  readonly systemBlock: (agent: Agent) => Effect.Effect<string | undefined>
  /** Every skill's directory (and its real path, when reached through a symlink). */
  readonly directories: () => Effect.Effect<ReadonlyArray<string>>
}

/**
 * Skills found on disk. Discovery starts in the background when the layer is built; the
 * methods wait for it. Where two skills share a name the first location in this order wins:
 *
 * 1. `.agents/skills/<skill>/SKILL.md`, then `.claude/skills/<skill>/SKILL.md`, in every
 *    directory from the working directory up to the work-tree root (nearest first);
 * 2. the config directories (`ConfigService.info().directories`, highest precedence first:
 *    the deepest `.agent/` and `.opencode/` dirs, the global config dir last), each
 *    `skill/**\/SKILL.md` then `skills/**\/SKILL.md`;
 * 3. `skills.paths` entries from the config, in order, each searched for `**\/SKILL.md`
 *    (`~/` expanded, a relative path taken from the directory of the config file that set it),
 *    then the skills of each `skills.urls` entry (SkillDownload.ts: copied into the data dir);
 * 4. `~/.agents/skills/<skill>/SKILL.md`, then `~/.claude/skills/<skill>/SKILL.md`.
 *
 * So the project beats the user's own setup, and a more specific directory beats a broader one.
 * Within one location, directories are walked in name order.
 */
export class SkillRegistry extends Context.Tag("@agent/core/SkillRegistry")<SkillRegistry, SkillRegistryShape>() {
  static readonly layer: Layer.Layer<SkillRegistry, never, Instance | ConfigService> = Layer.scoped(
    SkillRegistry,
    Effect.gen(function*() {
      const instance = yield* Instance
      const info = yield* (yield* ConfigService).info()
      const configPaths = (info.config.skills?.paths ?? []).map((entry, index) => {
        // A relative entry is taken from the directory of the config file that set it.
        const file = info.origin(["skills", "paths", String(index)])?.file
        return { entry, base: file !== undefined && path.isAbsolute(file) ? path.dirname(file) : instance.worktree }
      })
      const urls = info.config.skills?.urls ?? []
      const cacheRoot = path.join(instance.paths.data, "remote-skills")
      const fiber = yield* Effect.forkScoped(
        Effect.forEach(urls, (url) => pullSkills(url, cacheRoot), { concurrency: 4 }).pipe(
          Effect.flatMap((pulled) => discover(skillRoots(instance, info.directories, configPaths, pulled))),
          Effect.catchAllCause((cause) =>
            Effect.logError("skill discovery failed", cause).pipe(Effect.as<Discovered>({ skills: [], directories: [] }))
          )
        )
      )
      return makeRegistry(Fiber.join(fiber))
    })
  )

  /** A registry over a fixed list of skills (tests, embedders). */
  static readonly layerFrom = (skills: ReadonlyArray<Skill>): Layer.Layer<SkillRegistry> =>
    Layer.succeed(
      SkillRegistry,
      makeRegistry(Effect.succeed({ skills: sortByName(skills), directories: [...new Set(skills.map((s) => s.directory))] }))
    )
}

// ---------------------------------------------------------------------------------------------
// Rendering

const escapeXml = (text: string): string => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** `file://` URL of a path, as shown to the model. */
export const fileUrl = (file: string): string => pathToFileURL(file).href

/** The `<available_skills>` list. */
export const availableSkills = (skills: ReadonlyArray<Skill>): string =>
  [
    "<available_skills>",
    ...skills.flatMap((skill) => [
      "  <skill>",
      `    <name>${escapeXml(skill.name)}</name>`,
      `    <description>${escapeXml(skill.description)}</description>`,
      `    <location>${fileUrl(skill.location)}</location>`,
      "  </skill>"
    ]),
    "</available_skills>"
  ].join("\n")

const sortByName = (skills: ReadonlyArray<Skill>): ReadonlyArray<Skill> =>
  [...skills].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))

interface Discovered {
  /** Winners only, sorted by name. */
  readonly skills: ReadonlyArray<Skill>
  readonly directories: ReadonlyArray<string>
}

const makeRegistry = (ready: Effect.Effect<Discovered>): SkillRegistryShape => {
  const visible = (agent: Agent, skills: ReadonlyArray<Skill>) =>
    skills.filter((skill) => Permission.evaluate("skill", skill.name, agent.permission).action !== "deny")
  return {
    list: Effect.fn("SkillRegistry.list")(function*() {
      return (yield* ready).skills
    }),
    get: Effect.fn("SkillRegistry.get")(function*(name: string) {
      return (yield* ready).skills.find((skill) => skill.name === name)
    }),
    // Called every step (or every tool call): untraced, a span would cost more than the call.
    forAgent: Effect.fnUntraced(function*(agent: Agent) {
      return visible(agent, (yield* ready).skills)
    }),
    // Called every step (or every tool call): untraced, a span would cost more than the call.
    systemBlock: Effect.fnUntraced(function*(agent: Agent) {
      if (Permission.disabled(["skill"], agent.permission).has("skill")) return undefined
      const skills = visible(agent, (yield* ready).skills)
      if (skills.length === 0) return undefined
      return `${Prompts.read("session/skills.txt")}\n\n${availableSkills(skills)}`
    }),
    // Called every step (or every tool call): untraced, a span would cost more than the call.
    directories: Effect.fnUntraced(function*() {
      return (yield* ready).directories
    })
  }
}

// ---------------------------------------------------------------------------------------------
// Parsing

const FRONT_MATTER = /^---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?---[ \t]*(?:\r?\n|$)/

export type ParsedSkill =
  | { readonly _tag: "Ok"; readonly name: string; readonly description: string; readonly body: string }
  | { readonly _tag: "Invalid"; readonly reason: string }

/** Splits a `SKILL.md` into its front matter fields and body, or says what is wrong with it. */
export const parseSkill = (raw: string): ParsedSkill => {
  const text = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw
  const match = FRONT_MATTER.exec(text)
  if (match === null) return { _tag: "Invalid", reason: "no YAML front matter (a leading `---` block)" }
  let data: unknown
  try {
    data = parseYaml(match[1] ?? "")
  } catch (error) {
    const message = error instanceof Error ? error.message.split("\n")[0]! : String(error)
    return { _tag: "Invalid", reason: `invalid YAML front matter: ${message}` }
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    return { _tag: "Invalid", reason: "the front matter is not a YAML mapping" }
  }
  const fields = data as Record<string, unknown>
  const name = typeof fields.name === "string" ? fields.name.trim() : ""
  const description = typeof fields.description === "string" ? fields.description.trim() : ""
  if (name === "") return { _tag: "Invalid", reason: "the front matter has no `name`" }
  if (description === "") return { _tag: "Invalid", reason: "the front matter has no `description`" }
  return { _tag: "Ok", name, description, body: text.slice(match[0].length).trim() }
}

// ---------------------------------------------------------------------------------------------
// Discovery

/** Where to look: `children` means `<dir>/*\/SKILL.md`, `recursive` means `<dir>/**\/SKILL.md`. */
interface SkillRoot {
  readonly dir: string
  readonly depth: "children" | "recursive"
}


/** Every place skills may live, highest precedence first (see `SkillRegistry`). */
export const skillRoots = (
  instance: InstanceInfo,
  configDirectories: ReadonlyArray<string>,
  configPaths: ReadonlyArray<{ readonly entry: string; readonly base: string }>,
  /** The cache folders of `skills.urls`. */
  pulled: ReadonlyArray<string> = []
): ReadonlyArray<SkillRoot> => {
  const roots: Array<SkillRoot> = []
  const upward: Array<string> = []
  if (within(instance.directory, instance.worktree)) {
    for (let dir = instance.directory; ; dir = path.dirname(dir)) {
      upward.push(dir)
      if (dir === instance.worktree || path.dirname(dir) === dir) break
    }
  } else {
    upward.push(instance.directory)
  }
  for (const dir of upward) {
    roots.push({ dir: path.join(dir, ".agents", "skills"), depth: "children" })
    roots.push({ dir: path.join(dir, ".claude", "skills"), depth: "children" })
  }
  for (const dir of [...configDirectories].reverse()) {
    roots.push({ dir: path.join(dir, "skill"), depth: "recursive" })
    roots.push({ dir: path.join(dir, "skills"), depth: "recursive" })
  }
  for (const { base, entry } of configPaths) {
    const expanded = entry === "~" ? instance.home : entry.startsWith("~/") ? path.join(instance.home, entry.slice(2)) : entry
    roots.push({ dir: path.resolve(base, expanded), depth: "recursive" })
  }
  for (const dir of pulled) roots.push({ dir, depth: "children" })
  roots.push({ dir: path.join(instance.home, ".agents", "skills"), depth: "children" })
  roots.push({ dir: path.join(instance.home, ".claude", "skills"), depth: "children" })
  return roots
}

/** Directories never searched for skills. */
const SKIP_DIRS: ReadonlySet<string> = new Set([".git", "node_modules"])
/** How deep a recursive search goes below its root. */
const MAX_DEPTH = 8
/** File system calls in flight at once during discovery. */
const FS_CONCURRENCY = 32

const compareNames = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** Runs at most `limit` of the returned function's tasks at once. */
const limiter = (limit: number) => {
  let active = 0
  const waiting: Array<() => void> = []
  return async <A>(task: () => Promise<A>): Promise<A> => {
    if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve))
    active++
    try {
      return await task()
    } finally {
      active--
      waiting.shift()?.()
    }
  }
}

type Loaded = { readonly skill: Skill } | { readonly file: string; readonly problem: string }

/**
 * Finds, reads and parses every SKILL.md under `roots`; bad files are logged and skipped.
 * The walk is plain promises behind one limiter: thousands of tiny fs calls cost several times
 * more as fibers, and this runs at every startup.
 */
export const discover = (roots: ReadonlyArray<SkillRoot>): Effect.Effect<Discovered> =>
  Effect.gen(function*() {
    const started = Date.now()
    const found = yield* Effect.promise(() => findAll(roots))
    // Precedence: the order of `roots`, then walk order.
    const winners = new Map<string, Skill>()
    for (const loaded of found.loaded) {
      if ("problem" in loaded) {
        yield* Effect.logWarning(`skipped skill ${loaded.file}: ${loaded.problem}`)
        continue
      }
      const { skill } = loaded
      const earlier = winners.get(skill.name)
      if (earlier === undefined) winners.set(skill.name, skill)
      else if (earlier.location !== skill.location) {
        yield* Effect.logDebug(`skill "${skill.name}" in ${skill.location} is shadowed by ${earlier.location}`)
      }
    }
    const skills = sortByName([...winners.values()])
    const reals = yield* Effect.promise(() =>
      Promise.all(skills.map((skill) => fsp.realpath(skill.directory).catch(() => skill.directory)))
    )
    const directories = [...new Set(skills.flatMap((skill, index) => [skill.directory, reals[index]!]))]
    yield* Effect.logDebug(`found ${skills.length} skills in ${Date.now() - started} ms`)
    return { skills, directories }
  }).pipe(Effect.withSpan("SkillRegistry.discover"))

const findAll = async (roots: ReadonlyArray<SkillRoot>): Promise<{ readonly loaded: ReadonlyArray<Loaded> }> => {
  const io = limiter(FS_CONCURRENCY)
  const entriesOf = async (dir: string) => {
    const entries = await io(() => fsp.readdir(dir, { withFileTypes: true }).catch(() => []))
    return entries.sort((a, b) => compareNames(a.name, b.name))
  }
  const isDirectory = async (entry: { isDirectory(): boolean; isSymbolicLink(): boolean }, full: string) =>
    entry.isDirectory() ||
    (entry.isSymbolicLink() && (await io(() => fsp.stat(full).then((stat) => stat.isDirectory(), () => false))))

  /** SKILL.md files below `dir`, in walk order. `seen` holds real paths, so link loops end. */
  const walk = async (dir: string, depth: number, seen: Set<string>): Promise<Array<string>> => {
    const real = await io(() => fsp.realpath(dir).catch(() => dir))
    if (seen.has(real)) return []
    seen.add(real)
    const entries = await entriesOf(dir)
    const here = entries.some((entry) => entry.name === "SKILL.md" && !entry.isDirectory()) ? [path.join(dir, "SKILL.md")] : []
    if (depth >= MAX_DEPTH) return here
    const below = await Promise.all(
      entries
        .filter((entry) => !SKIP_DIRS.has(entry.name))
        .map(async (entry) => {
          const full = path.join(dir, entry.name)
          return (await isDirectory(entry, full)) ? walk(full, depth + 1, seen) : []
        })
    )
    return [...here, ...below.flat()]
  }

  const children = async (dir: string): Promise<Array<string>> => {
    const entries = await entriesOf(dir)
    const found = await Promise.all(entries.map(async (entry) => {
      const full = path.join(dir, entry.name)
      if (!(await isDirectory(entry, full))) return []
      const file = path.join(full, "SKILL.md")
      return (await io(() => fsp.stat(file).then((stat) => stat.isFile(), () => false))) ? [file] : []
    }))
    return found.flat()
  }

  const load = async (file: string): Promise<Loaded> => {
    let text: string
    try {
      text = await io(() => fsp.readFile(file, "utf8"))
    } catch (error) {
      return { file, problem: `cannot read it (${error instanceof Error ? error.message : String(error)})` }
    }
    const parsed = parseSkill(text)
    if (parsed._tag === "Invalid") return { file, problem: parsed.reason }
    return { skill: { name: parsed.name, description: parsed.description, location: file, directory: path.dirname(file) } }
  }

  const perRoot = await Promise.all(roots.map(async (root) => {
    const files = root.depth === "recursive" ? await walk(root.dir, 0, new Set()) : await children(root.dir)
    return Promise.all(files.map(load))
  }))
  return { loaded: perRoot.flat() }
}
