import {
  AgentConfigKeys,
  Config,
  ConfigError,
  ConfigIgnoredKeys,
  ConfigKeys,
  ExperimentalIgnoredKeys,
  PermissionConfig
} from "@agent/domain"
import type { ConfigSource } from "@agent/domain"
import { Context, Effect, Either, Layer, ParseResult, Schema } from "effect"
import { parse as parseJsonc, parseTree, printParseErrorCode } from "jsonc-parser"
import type { Node as JsonNode, ParseError as JsonParseError } from "jsonc-parser"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { isMap, isScalar, isSeq, LineCounter, parseDocument } from "yaml"
import { keptPluginEntries, pluginFiles, resolvePluginEntry } from "./ConfigPlugins.js"
import { Instance, type InstanceInfo } from "../runtime/Instance.js"
import type { Substitutions } from "./ConfigRedaction.js"

export interface ConfigWarning {
  readonly file: string
  readonly key: string
  readonly message: string
}

/** The effective configuration, decoded once, with where every value came from. */
export interface ConfigInfo {
  readonly config: Config
  /** Files (and `env:VAR` sources) that were loaded, lowest precedence first. */
  readonly sources: ReadonlyArray<string>
  readonly warnings: ReadonlyArray<ConfigWarning>
  /** Config directories (global dir, `.opencode/`, `.agent/`), lowest precedence first. */
  readonly directories: ReadonlyArray<string>
  /**
   * Where the value at `path` (e.g. `["permission", "bash", "git *"]`) was set. Looks up
   * the nearest recorded ancestor when the exact path was set as part of a larger value.
   */
  readonly origin: (path: ReadonlyArray<string>) => ConfigSource | undefined
  /** What `{env:}`/`{file:}` references put in (see ConfigRedaction.ts): masked wherever config is shown. */
  readonly substitutions?: Substitutions
  /**
   * The managed dir's own `permission` (its legacy `tools` included), in the order its files
   * wrote it: the enterprise policy. Absent when the managed dir sets no permission.
   */
  readonly managed?: ManagedPermission
}

export interface ManagedPermission {
  readonly permission: PermissionConfig
  /** Where a path below `permission` was set, within the managed files only. */
  readonly origin: (path: ReadonlyArray<string>) => ConfigSource | undefined
}

export class ConfigService extends Context.Tag("@agent/core/ConfigService")<
  ConfigService,
  {
    readonly get: () => Effect.Effect<Config>
    readonly info: () => Effect.Effect<ConfigInfo>
  }
>() {
  /** Loads the configuration of the current `Instance` once, when the layer is built; its warnings are logged. */
  static readonly layer: Layer.Layer<ConfigService, ConfigError, Instance> = Layer.effect(
    ConfigService,
    Effect.gen(function*() {
      const instance = yield* Instance
      const info = yield* loadConfig(instance)
      for (const warning of info.warnings) yield* Effect.logWarning(describeWarning(warning))
      return makeService(info)
    })
  )

  /** A service over an already loaded (or hand-made) configuration. */
  static readonly layerFromInfo = (info: ConfigInfo): Layer.Layer<ConfigService> =>
    Layer.succeed(ConfigService, makeService(info))
}

/** `file: key: message`, or `file: message` for a warning about the whole file. */
export const describeWarning = (warning: ConfigWarning): string =>
  warning.key === "" ? `${warning.file}: ${warning.message}` : `${warning.file}: ${warning.key}: ${warning.message}`

const makeService = (info: ConfigInfo): Context.Tag.Service<ConfigService> => ({
  get: Effect.fn("ConfigService.get")(function*() {
    return info.config
  }),
  info: Effect.fn("ConfigService.info")(function*() {
    return info
  })
})

/**
 * Loads, merges and decodes every configuration layer of `instance`, lowest precedence first:
 * global dir, `AGENT_CONFIG`, project files (worktree root down to the directory), config dirs
 * (global, then `.opencode/` and `.agent/` root down, with their markdown agents, modes and
 * commands), `AGENT_CONFIG_CONTENT`, `AGENT_PERMISSION`, managed dir.
 */
export const loadConfig = (instance: InstanceInfo): Effect.Effect<ConfigInfo, ConfigError> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(load(instance))
    } catch (error) {
      return error instanceof ConfigError ? Effect.fail(error) : Effect.die(error)
    }
  }).pipe(Effect.withSpan("ConfigService.load"))

// ---------------------------------------------------------------------------------------------
// Plumbing. The loader is synchronous and throws `ConfigError`; `loadConfig` turns that into
// the error channel. Config files are small, so sync fs keeps this simple and fast.

type JsonObject = Record<string, unknown>
type Path = ReadonlyArray<string>

const isObject = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

const pathKey = (p: Path): string => JSON.stringify(p)

const configError = (file: string, detail: string, line?: number, key?: string): ConfigError =>
  new ConfigError({
    file,
    detail,
    ...(line === undefined ? {} : { line }),
    ...(key === undefined ? {} : { key })
  })

const makeSource = (file: string, key: Path, line: number | undefined): ConfigSource =>
  line === undefined ? { file, key: key.join(".") } : { file, key: key.join("."), line }

/** An environment switch is on unless unset, empty, "0" or "false". */
export const isEnvFlag = (value: string | undefined): boolean =>
  value !== undefined && value !== "" && value !== "0" && value.toLowerCase() !== "false"

/** Maps character offsets of a text to 1-based line numbers. */
const lineIndex = (text: string): (offset: number) => number => {
  const starts = [0]
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1)
  return (offset) => {
    let lo = 0
    let hi = starts.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (starts[mid]! <= offset) lo = mid
      else hi = mid - 1
    }
    return lo + 1
  }
}

const readText = (file: string): string | undefined => {
  let stat: fs.Stats
  try {
    stat = fs.statSync(file)
  } catch {
    return undefined
  }
  if (!stat.isFile()) return undefined
  try {
    const text = fs.readFileSync(file, "utf8")
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  } catch (error) {
    throw configError(file, `cannot read file: ${error instanceof Error ? error.message : String(error)}`)
  }
}

const isDirectory = (dir: string): boolean => {
  try {
    return fs.statSync(dir).isDirectory()
  } catch {
    return false
  }
}

const expandHome = (p: string, home: string): string =>
  p === "~" ? home : p.startsWith("~/") ? path.join(home, p.slice(2)) : p

// ---------------------------------------------------------------------------------------------
// Provenance

/** Which source set each value path. Objects point at the last source that merged into them. */
class Provenance {
  private readonly entries = new Map<string, { readonly path: Path; readonly source: ConfigSource }>()

  set(p: Path, source: ConfigSource | undefined): void {
    if (source !== undefined) this.entries.set(pathKey(p), { path: p, source })
  }

  /** Forgets `prefix` and everything below it. */
  drop(prefix: Path): void {
    const exact = pathKey(prefix)
    const below = exact.slice(0, -1) + ","
    for (const key of this.entries.keys()) {
      if (key === exact || key.startsWith(below)) this.entries.delete(key)
    }
  }

  /** Removes and returns the entries at and below `prefix`. */
  extract(prefix: Path): Provenance {
    const out = new Provenance()
    const exact = pathKey(prefix)
    const below = exact.slice(0, -1) + ","
    for (const [key, entry] of this.entries) {
      if (key === exact || key.startsWith(below)) {
        out.entries.set(key, entry)
        this.entries.delete(key)
      }
    }
    return out
  }

  origin(p: Path): ConfigSource | undefined {
    for (let i = p.length; i > 0; i--) {
      const entry = this.entries.get(pathKey(p.slice(0, i)))
      if (entry !== undefined) return entry.source
    }
    return undefined
  }
}

// ---------------------------------------------------------------------------------------------
// Merge

type SourceAt = (p: Path) => ConfigSource | undefined

const dedupeKey = (u: unknown): string => (typeof u === "string" ? u : JSON.stringify(u))

/** Top-level lists that sources add to instead of replacing: `instructions` (without duplicates) and `plugin`. */
const CONCATENATED: ReadonlyMap<string, { readonly dedupe: boolean }> = new Map([
  ["instructions", { dedupe: true }],
  // Duplicates are resolved once everything is merged: the same plugin at another version is one too.
  ["plugin", { dedupe: false }]
])

/**
 * Deep merge of `patch` into `target`: objects key by key (an existing key keeps its position),
 * arrays and scalars replaced, top-level `instructions` and `plugin` concatenated.
 */
const mergeInto = (target: JsonObject, patch: JsonObject, base: Path, at: SourceAt, prov: Provenance): void => {
  for (const key of Object.keys(patch)) {
    if (key === "__proto__") continue
    const value = patch[key]
    const p = [...base, key]
    const existing = target[key]
    const concatenated = base.length === 0 ? CONCATENATED.get(key) : undefined
    if (concatenated !== undefined && Array.isArray(value)) {
      const list: Array<unknown> = Array.isArray(existing) ? existing : []
      if (!Array.isArray(existing)) {
        if (existing !== undefined) prov.drop(p)
        target[key] = list
      }
      const seen = new Set(list.map(dedupeKey))
      value.forEach((item, index) => {
        const k = dedupeKey(item)
        if (concatenated.dedupe && seen.has(k)) return
        seen.add(k)
        prov.set([...p, String(list.length)], at([...p, String(index)]))
        list.push(item)
      })
      prov.set(p, at(p))
      continue
    }
    if (isObject(value)) {
      let into: JsonObject
      if (isObject(existing)) {
        into = existing
      } else {
        if (existing !== undefined) prov.drop(p)
        into = {}
        target[key] = into
      }
      // An object remembers the last source that touched it: the answer for paths below it
      // that no source set (a missing key, a whole agent).
      prov.set(p, at(p))
      mergeInto(into, value, p, at, prov)
    } else {
      if (existing !== undefined) prov.drop(p)
      target[key] = Array.isArray(value) ? value.slice() : value
      prov.set(p, at(p))
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Sources

/** One loaded layer, already normalised into the shape of the merged config. */
interface Source {
  readonly file: string
  readonly value: JsonObject
  /** Where a path of `value` is written in the file. */
  readonly locate: (p: Path) => ConfigSource
}

/** Paths whose value was moved during normalisation, mapped to where they are in the file. */
type Remap = Map<string, Path>

const remapPath = (remap: Remap, p: Path): Path => {
  for (let i = p.length; i > 0; i--) {
    const to = remap.get(pathKey(p.slice(0, i)))
    if (to !== undefined) return [...to, ...p.slice(i)]
  }
  return p
}

/** Unknown agent keys move into `options`; `steps ??= maxSteps`; a bare permission action means `{"*": action}`. */
const normalizeAgent = (entry: unknown, prefix: Path, remap: Remap): unknown => {
  if (!isObject(entry)) return entry
  const out: JsonObject = {}
  const moved: JsonObject = {}
  let hasMoved = false
  for (const key of Object.keys(entry)) {
    if (key === "__proto__") continue
    if (AgentConfigKeys.has(key)) {
      out[key] = entry[key]
    } else {
      moved[key] = entry[key]
      hasMoved = true
      remap.set(pathKey([...prefix, "options", key]), [...prefix, key])
    }
  }
  if (hasMoved) {
    if (out.options === undefined) out.options = moved
    else if (isObject(out.options)) out.options = { ...out.options, ...moved }
  }
  if (out.steps === undefined && out.maxSteps !== undefined) {
    out.steps = out.maxSteps
    remap.set(pathKey([...prefix, "steps"]), [...prefix, "maxSteps"])
  }
  out.permission = normalizePermission(out.permission, [...prefix, "permission"], remap)
  if (out.permission === undefined) delete out.permission
  return out
}

const normalizePermission = (value: unknown, at: Path, remap: Remap): unknown => {
  if (typeof value !== "string") return value
  remap.set(pathKey([...at, "*"]), at)
  return { "*": value }
}

const normalizeAgentMap = (value: unknown, prefix: Path, remap: Remap): unknown => {
  if (!isObject(value)) return value
  const out: JsonObject = {}
  for (const name of Object.keys(value)) {
    if (name === "__proto__") continue
    out[name] = normalizeAgent(value[name], [...prefix, name], remap)
  }
  return out
}

interface LoadContext {
  readonly instance: InstanceInfo
  readonly warnings: Array<ConfigWarning>
  /** What `{env:}` and `{file:}` references put in, with the reference: secrets until shown otherwise. */
  readonly substitutions: Map<string, string>
}

/**
 * Checks the top-level keys of one config object and normalises it: OpenCode-only keys are
 * dropped with a warning, unknown keys are errors.
 */
const normalizeConfig = (
  file: string,
  raw: JsonObject,
  lineOf: (p: Path) => number | undefined,
  ctx: LoadContext,
  remap: Remap,
  baseDir: string
): JsonObject => {
  const out: JsonObject = {}
  for (const key of Object.keys(raw)) {
    if (ConfigIgnoredKeys.has(key)) {
      ctx.warnings.push({ file, key, message: `"${key}" is an OpenCode setting this runtime does not use; ignored` })
      continue
    }
    if (key === "autoshare") {
      out.autoshare = legacyAutoshare(file, raw.autoshare, lineOf, ctx)
      continue
    }
    if (!ConfigKeys.has(key)) throw configError(file, `unrecognized key "${key}"`, lineOf([key]), key)
    out[key] = raw[key]
  }
  const plugins = out.plugin
  if (Array.isArray(plugins)) {
    out.plugin = plugins.map((entry: unknown) => resolvePluginEntry(entry, baseDir))
    if (plugins.length > 0) ctx.warnings.push({ file, key: "plugin", message: PLUGINS_DO_NOT_RUN })
  }
  if (isObject(out.experimental)) {
    const experimental: JsonObject = {}
    for (const key of Object.keys(out.experimental)) {
      if (ExperimentalIgnoredKeys.has(key)) {
        ctx.warnings.push({
          file,
          key: `experimental.${key}`,
          message: `"experimental.${key}" is an OpenCode setting this runtime does not use; ignored`
        })
      } else {
        experimental[key] = out.experimental[key]
      }
    }
    out.experimental = experimental
  }
  if (out.permission !== undefined) out.permission = normalizePermission(out.permission, ["permission"], remap)
  if (out.agent !== undefined) out.agent = normalizeAgentMap(out.agent, ["agent"], remap)
  if (out.mode !== undefined) out.mode = normalizeAgentMap(out.mode, ["mode"], remap)
  return out
}

const PLUGINS_DO_NOT_RUN = "plugins do not run in this runtime; the list is only shown by `agent debug config`"

/** OpenCode's deprecated `autoshare` (a boolean), kept until `postProcess` reads it as `share`. */
const legacyAutoshare = (
  file: string,
  value: unknown,
  lineOf: (p: Path) => number | undefined,
  ctx: LoadContext
): boolean => {
  if (typeof value !== "boolean") {
    throw configError(file, `Expected boolean, actual ${JSON.stringify(value)}`, lineOf(["autoshare"]), "autoshare")
  }
  ctx.warnings.push({
    file,
    key: "autoshare",
    message: `"autoshare" is deprecated; read as ${value ? '"share": "auto"' : "nothing"} (use "share")`
  })
  return value
}

/** Line lookup in a JSONC text: the line of the key (or array item) at `p`, or of its nearest ancestor. */
const jsonLines = (text: string): (p: Path) => number | undefined => {
  let root: JsonNode | undefined
  let parsed = false
  let lineOf: ((offset: number) => number) | undefined
  return (p) => {
    if (!parsed) {
      parsed = true
      root = parseTree(text, [], { allowTrailingComma: true, disallowComments: false })
      lineOf = lineIndex(text)
    }
    if (root === undefined || lineOf === undefined) return undefined
    let node: JsonNode | undefined = root
    let offset: number | undefined
    for (const seg of p) {
      if (node.type === "object") {
        const prop: JsonNode | undefined = node.children?.find((c) => c.children?.[0]?.value === seg)
        if (prop === undefined) break
        offset = prop.offset
        node = prop.children?.[1]
      } else if (node.type === "array") {
        const item: JsonNode | undefined = node.children?.[Number(seg)]
        if (item === undefined) break
        offset = item.offset
        node = item
      } else {
        break
      }
      if (node === undefined) break
    }
    return offset === undefined ? undefined : lineOf(offset)
  }
}

const substitute = (text: string, file: string, baseDir: string, ctx: LoadContext): string => {
  const { instance } = ctx
  const withEnv = text.replace(/\{env:([^}]+)\}/g, (token: string, name: string) => {
    const value = instance.env[name.trim()] ?? ""
    // As it stands in the JSON text, the way the config will hold it once parsed.
    if (value !== "") ctx.substitutions.set(value, token)
    return value
  })
  let lineOf: ((offset: number) => number) | undefined
  return withEnv.replace(/\{file:([^}]+)\}/g, (token: string, ref: string, offset: number) => {
    const lineStart = withEnv.lastIndexOf("\n", offset - 1) + 1
    if (withEnv.slice(lineStart, offset).trim().startsWith("//")) return token
    const expanded = expandHome(ref.trim(), instance.home)
    const resolved = path.isAbsolute(expanded) ? expanded : path.resolve(baseDir, expanded)
    const content = readText(resolved)
    if (content === undefined) {
      lineOf ??= lineIndex(withEnv)
      throw configError(file, `bad file reference: ${token} (${resolved} not found)`, lineOf(offset))
    }
    if (content.trim() !== "") ctx.substitutions.set(content.trim(), token)
    return JSON.stringify(content.trim()).slice(1, -1)
  })
}

/** Substitutes, parses and normalises one JSONC config text. */
const jsonSource = (file: string, rawText: string, baseDir: string, ctx: LoadContext): Source => {
  const text = substitute(rawText, file, baseDir, ctx)
  const errors: Array<JsonParseError> = []
  const parsed: unknown = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false, allowEmptyContent: true })
  if (errors.length > 0) {
    const first = errors[0]!
    const lineOf = lineIndex(text)
    const line = lineOf(first.offset)
    const lineStart = text.lastIndexOf("\n", first.offset - 1) + 1
    throw configError(
      file,
      `invalid JSON: ${printParseErrorCode(first.error)} at column ${first.offset - lineStart + 1}`,
      line
    )
  }
  if (parsed !== undefined && !isObject(parsed)) throw configError(file, "expected a JSON object", 1)
  // Most often a write that never finished: every setting the file should hold is missing.
  if (parsed === undefined) ctx.warnings.push({ file, key: "", message: "the file is empty, so it sets nothing (write {} if that is meant)" })
  const lines = jsonLines(text)
  const remap: Remap = new Map()
  const value = normalizeConfig(file, parsed ?? {}, lines, ctx, remap, baseDir)
  return {
    file,
    value,
    locate: (p) => {
      const key = remapPath(remap, p)
      return makeSource(file, key, lines(key))
    }
  }
}

const FRONT_MATTER = /^---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?---[ \t]*(?:\r?\n|$)/
const FRONT_MATTER_START = /^---[ \t]*\r?\n/

/** Quotes top-level `key: value` lines whose value holds `: `, a common slip in agent files. */
const quoteColonValues = (yaml: string): string =>
  yaml
    .split("\n")
    .map((line) => {
      const m = /^([A-Za-z_][\w-]*):[ \t]+(.*?)\r?$/.exec(line)
      if (m === null) return line
      const value = m[2]!
      if (!value.includes(": ") || /^["'[{|>&*!]/.test(value)) return line
      return `${m[1]}: ${JSON.stringify(value)}`
    })
    .join("\n")

/** What a markdown file defines: an agent (body = `prompt`) or a command (body = `template`). */
type MarkdownKind = "agent" | "mode" | "command"

/**
 * A markdown agent or command: YAML front matter plus the body, landing in `agent.<name>`
 * (body as `prompt`; modes forced primary) or `command.<name>` (body as `template`).
 */
const markdownSource = (file: string, name: string, kind: MarkdownKind): Source => {
  const text = readText(file) ?? ""
  const match = FRONT_MATTER.exec(text)
  // Otherwise its settings (a mode, a deny rule) would silently become part of the prompt.
  if (match === null && FRONT_MATTER_START.test(text)) {
    throw configError(file, "the front matter is never closed: the `---` on line 1 needs a closing `---` line", 1)
  }
  const yamlText = match?.[1] ?? ""
  const body = match === null ? text : text.slice(match[0].length)
  const fileLineOf = lineIndex(text)
  // Front matter starts on line 2 of the file.
  const yamlFirstLine = 2

  let counter = new LineCounter()
  let doc = parseDocument(yamlText, { lineCounter: counter })
  if (doc.errors.length > 0) {
    const retryCounter = new LineCounter()
    const retry = parseDocument(quoteColonValues(yamlText), { lineCounter: retryCounter })
    if (retry.errors.length > 0) {
      const error = doc.errors[0]!
      const line = error.linePos?.[0].line
      throw configError(
        file,
        `invalid YAML front matter: ${error.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "")}`,
        line === undefined ? undefined : line + yamlFirstLine - 1
      )
    }
    doc = retry
    counter = retryCounter
  }
  const data: unknown = doc.toJS()
  if (data !== null && data !== undefined && !isObject(data)) {
    throw configError(file, "front matter must be a YAML mapping", yamlFirstLine)
  }
  const bodyKey = kind === "command" ? "template" : "prompt"
  const entry: JsonObject = { ...(data ?? {}), [bodyKey]: body.trim() }
  if (kind === "mode") entry.mode = "primary"

  const remap: Remap = new Map()
  const root = kind === "command" ? "command" : "agent"
  const prefix = [root, name]
  const value = { [root]: { [name]: kind === "command" ? entry : normalizeAgent(entry, prefix, remap) } }

  const bodyStart = match === null ? 0 : match[0].length
  const firstText = body.search(/\S/)
  const promptLine = fileLineOf(firstText < 0 ? bodyStart : bodyStart + firstText)
  const yamlLine = (p: Path): number | undefined => {
    let node: unknown = doc.contents
    let offset: number | undefined
    for (const seg of p) {
      if (isMap(node)) {
        const pair = node.items.find((item) => isScalar(item.key) && String(item.key.value) === seg)
        if (pair === undefined) break
        offset = isScalar(pair.key) ? pair.key.range?.[0] : undefined
        node = pair.value
      } else if (isSeq(node)) {
        const item: unknown = node.items[Number(seg)]
        if (item === undefined) break
        offset = isScalar(item) || isMap(item) || isSeq(item) ? item.range?.[0] : offset
        node = item
      } else {
        break
      }
    }
    return offset === undefined ? undefined : counter.linePos(offset).line + yamlFirstLine - 1
  }
  return {
    file,
    value,
    locate: (p) => {
      const inFile = remapPath(remap, p).slice(2)
      if (inFile.length === 0) return makeSource(file, p, undefined)
      if (inFile[0] === bodyKey) return makeSource(file, inFile, promptLine)
      return makeSource(file, inFile, yamlLine(inFile))
    }
  }
}

/** Whether the file looks binary: a NUL byte in its first 8 KB (as git decides). */
const isBinaryFile = (file: string): boolean => {
  let fd: number | undefined
  try {
    fd = fs.openSync(file, "r")
    const head = Buffer.alloc(8192)
    return head.subarray(0, fs.readSync(fd, head, 0, head.length, 0)).includes(0)
  } catch {
    return false
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

/**
 * `.md` files below `dir`, sorted, with their names relative to `dir` (`/`-separated, no
 * extension). Other files, and binary `.md` files, are skipped with a warning (dotfiles quietly).
 */
const markdownFiles = (
  dir: string,
  recursive: boolean,
  warnings: Array<ConfigWarning>
): Array<{ readonly file: string; readonly name: string }> => {
  const out: Array<{ file: string; name: string }> = []
  const walk = (current: string) => {
    let entries: Array<fs.Dirent>
    try {
      entries = fs.readdirSync(current, { withFileTypes: true })
    } catch {
      return
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const entry of entries) {
      const full = path.join(current, entry.name)
      const isDir = entry.isDirectory() || (entry.isSymbolicLink() && isDirectory(full))
      if (isDir) {
        if (recursive) walk(full)
      } else if (entry.name.startsWith(".")) {
        continue
      } else if (!entry.name.endsWith(".md")) {
        warnings.push({ file: full, key: "", message: "not a .md file; skipped (agents and commands are markdown files)" })
      } else if (isBinaryFile(full)) {
        warnings.push({ file: full, key: "", message: "binary file, not markdown; skipped" })
      } else {
        const name = path.relative(dir, full).slice(0, -".md".length).split(path.sep).join("/")
        out.push({ file: full, name })
      }
    }
  }
  walk(dir)
  return out
}

// ---------------------------------------------------------------------------------------------
// Validation

const decodeConfig = Schema.decodeUnknownEither(Config, { errors: "all", onExcessProperty: "error" })

/** Schema spells out whole struct types; a config author needs the kind of value. */
const expectedText = (expected: string): string =>
  expected.startsWith("{")
    ? "an object"
    : expected.startsWith("ReadonlyArray<")
    ? "an array"
    : expected.startsWith("readonly [")
    ? "a non-empty array"
    : expected

/** Turns the most specific schema issue into an error naming the file that set the value. */
const validationError = (error: ParseResult.ParseError, prov: Provenance): ConfigError => {
  const all = ParseResult.ArrayFormatter.formatErrorSync(error)
  // Optional fields add an `Expected undefined` branch to every failure; it says nothing.
  const useful = all.filter((issue) => !issue.message.startsWith("Expected undefined"))
  const issues = useful.length > 0 ? useful : all
  let first = issues[0]!
  for (const issue of issues) if (issue.path.length > first.path.length) first = issue
  let p = first.path.map(String)
  const atPath = issues.filter((issue) => pathKey(issue.path.map(String)) === pathKey(p))
  // In a union (e.g. an MCP entry), the branches that do not know this key call it unexpected;
  // when another branch says what the value should be, that is the useful answer.
  const typed = atPath.filter((issue) => issue._tag !== "Unexpected")
  const same = typed.length > 0 ? typed : atPath
  first = same[0]!
  const last = p[p.length - 1] ?? ""
  let detail: string
  if (first._tag === "Unexpected") {
    detail = `unrecognized key "${last}" (${first.message.replace(/^is unexpected, /, "")})`
  } else if (first._tag === "Missing" && /^\d+$/.test(last)) {
    // A non-empty array (an MCP `command`) was given as [].
    p = p.slice(0, -1)
    detail = "must not be empty"
  } else if (first._tag === "Missing") {
    detail = `required key "${last}" is missing`
  } else {
    const parts = same.map((issue) => /^Expected (.*), actual (.*)$/s.exec(issue.message))
    const actual = parts[0]?.[2]
    detail = parts.every((m) => m !== null && m[2] === actual)
      ? `Expected ${[...new Set(parts.map((m) => expectedText(m![1]!)))].join(" | ")}, actual ${actual}`
      : [...new Set(same.map((issue) => issue.message))].join("; ")
  }
  const origin = prov.origin(p)
  return configError(origin?.file ?? "merged config", detail, origin?.line, p.join("."))
}

// ---------------------------------------------------------------------------------------------
// Loading

const CONFIG_FILES = ["opencode.json", "opencode.jsonc", "agent.json", "agent.jsonc"] as const
const OWN_CONFIG_FILES = ["agent.json", "agent.jsonc"] as const
const EDIT_TOOLS: ReadonlySet<string> = new Set(["write", "edit", "patch", "multiedit"])

/** Directories from the worktree root down to `instance.directory` (only the directory outside git). */
const projectDirs = (instance: InstanceInfo): Array<string> => {
  const leaf = path.resolve(instance.directory)
  if (!instance.vcs) return [leaf]
  const root = path.resolve(instance.worktree)
  const rel = path.relative(root, leaf)
  if (rel.startsWith("..") || path.isAbsolute(rel)) return [leaf]
  const dirs = [root]
  let current = root
  for (const part of rel.split(path.sep).filter((s) => s.length > 0)) {
    current = path.join(current, part)
    dirs.push(current)
  }
  return dirs
}

const load = (instance: InstanceInfo): ConfigInfo => {
  const ctx: LoadContext = { instance, warnings: [], substitutions: new Map() }
  const sources: Array<string> = []
  const directories: Array<string> = []
  const merged: JsonObject = {}
  const prov = new Provenance()

  const apply = (source: Source) => {
    mergeInto(merged, source.value, [], source.locate, prov)
    sources.push(source.file)
  }
  const applyFile = (file: string) => {
    const text = readText(file)
    if (text !== undefined) apply(jsonSource(file, text, path.dirname(file), ctx))
  }
  const applyMarkdown = (dir: string) => {
    for (const sub of ["agent", "agents"]) {
      for (const { file, name } of markdownFiles(path.join(dir, sub), true, ctx.warnings)) apply(markdownSource(file, name, "agent"))
    }
    for (const sub of ["mode", "modes"]) {
      for (const { file, name } of markdownFiles(path.join(dir, sub), false, ctx.warnings)) apply(markdownSource(file, name, "mode"))
    }
    for (const sub of ["command", "commands"]) {
      for (const { file, name } of markdownFiles(path.join(dir, sub), true, ctx.warnings)) apply(markdownSource(file, name, "command"))
    }
    const plugins = pluginFiles(dir)
    if (plugins.length === 0) return
    const at: SourceAt = (p) => ({ file: plugins[Number(p[1])] ?? path.join(dir, "plugin"), key: "plugin" })
    mergeInto(merged, { plugin: plugins.map((file) => pathToFileURL(file).href) }, [], at, prov)
    for (const file of plugins) ctx.warnings.push({ file, key: "", message: PLUGINS_DO_NOT_RUN })
  }

  // 1. Global config.
  for (const name of OWN_CONFIG_FILES) applyFile(path.join(instance.paths.config, name))

  // 2. AGENT_CONFIG.
  const explicit = instance.env.AGENT_CONFIG
  if (explicit !== undefined && explicit !== "") {
    const file = path.resolve(instance.directory, expandHome(explicit, instance.home))
    if (readText(file) === undefined) {
      ctx.warnings.push({ file, key: "AGENT_CONFIG", message: `AGENT_CONFIG names a file that does not exist` })
    } else {
      applyFile(file)
    }
  }

  // 3. Project files, root first.
  const projectEnabled = !isEnvFlag(instance.env.AGENT_DISABLE_PROJECT_CONFIG)
  const dirs = projectEnabled ? projectDirs(instance) : []
  for (const dir of dirs) for (const name of CONFIG_FILES) applyFile(path.join(dir, name))

  // 4. Config directories. The global dir's JSON was loaded in step 1; it adds markdown only.
  if (isDirectory(instance.paths.config)) {
    directories.push(instance.paths.config)
    applyMarkdown(instance.paths.config)
  }
  for (const dir of dirs) {
    for (const sub of [".opencode", ".agent"]) {
      const configDir = path.join(dir, sub)
      if (!isDirectory(configDir)) continue
      directories.push(configDir)
      for (const name of CONFIG_FILES) applyFile(path.join(configDir, name))
      applyMarkdown(configDir)
    }
  }

  // 5. Inline content.
  const content = instance.env.AGENT_CONFIG_CONTENT
  if (content !== undefined && content.trim() !== "") {
    apply(jsonSource("env:AGENT_CONFIG_CONTENT", content, instance.directory, ctx))
  }

  // 6. AGENT_PERMISSION (JSON) on top of `permission`, still below the managed layer.
  applyEnvPermission(merged, prov, instance, ctx, sources)

  // 7. Managed config wins over everything. Its permission is also kept on its own, in its own
  // order: merged into the user's keys it would take their positions, and the policy must
  // decide exactly as its author wrote it.
  const managed: JsonObject = {}
  const managedProv = new Provenance()
  for (const name of OWN_CONFIG_FILES) {
    const file = path.join(instance.paths.managed, name)
    const text = readText(file)
    if (text === undefined) continue
    const source = jsonSource(file, text, path.dirname(file), ctx)
    apply(source)
    mergeInto(managed, source.value, [], source.locate, managedProv)
  }
  legacyToolsToPermission(managed, managedProv)

  postProcess(merged, prov, instance, sources)

  const decoded = decodeConfig(merged)
  if (Either.isLeft(decoded)) throw validationError(decoded.left, prov)
  const managedPermission = decodeManagedPermission(managed.permission === undefined ? {} : { permission: managed.permission })
  if (Either.isLeft(managedPermission)) throw validationError(managedPermission.left, managedProv)
  const policy = managedPermission.right.permission
  return {
    config: decoded.right,
    sources,
    warnings: ctx.warnings,
    directories,
    origin: (p) => prov.origin(p),
    substitutions: ctx.substitutions,
    ...(policy === undefined ? {} : { managed: { permission: policy, origin: (p) => managedProv.origin(p) } })
  }
}

const decodeManagedPermission = Schema.decodeUnknownEither(Schema.Struct({ permission: Schema.optional(PermissionConfig) }), {
  errors: "all",
  onExcessProperty: "error"
})

/** `AGENT_PERMISSION` (JSON, or a bare action) merged into `permission`; invalid JSON is a warning. */
const applyEnvPermission = (
  merged: JsonObject,
  prov: Provenance,
  instance: InstanceInfo,
  ctx: LoadContext,
  sources: Array<string>
): void => {
  const envPermission = instance.env.AGENT_PERMISSION
  if (envPermission === undefined || envPermission.trim() === "") return
  const file = "env:AGENT_PERMISSION"
  let value: unknown
  try {
    value = JSON.parse(envPermission)
  } catch (error) {
    ctx.warnings.push({
      file,
      key: "permission",
      message: `invalid JSON, ignored: ${error instanceof Error ? error.message : String(error)}`
    })
    return
  }
  if (typeof value === "string") value = { "*": value }
  if (!isObject(value)) {
    ctx.warnings.push({ file, key: "permission", message: "expected a JSON object or an action; ignored" })
    return
  }
  const lines = jsonLines(envPermission)
  const remap: Remap = new Map([[pathKey(["permission", "*"]), ["permission"]]])
  const at: SourceAt = (p) => {
    const inner = remapPath(remap, p).slice(1)
    return makeSource(file, p, inner.length === 0 ? undefined : lines(inner))
  }
  mergeInto(merged, { permission: value }, [], at, prov)
  sources.push(file)
}

/** Legacy top-level `tools: {name: bool}` → permission rules; explicit permission keys win. */
const legacyToolsToPermission = (merged: JsonObject, prov: Provenance): void => {
  if (!isObject(merged.tools) || (merged.permission !== undefined && !isObject(merged.permission))) return
  const toolsPerms: JsonObject = {}
  const fromTool = new Map<string, string>()
  for (const name of Object.keys(merged.tools)) {
    const enabled = merged.tools[name]
    if (typeof enabled !== "boolean") continue
    const permission = EDIT_TOOLS.has(name) ? "edit" : name
    toolsPerms[permission] = enabled ? "allow" : "deny"
    fromTool.set(permission, name)
  }
  if (Object.keys(toolsPerms).length === 0) return
  const explicit = merged.permission
  const old = prov.extract(["permission"])
  const toolsOrigin = prov.origin(["tools"])
  const next: JsonObject = {}
  merged.permission = next
  prov.set(["permission"], old.origin(["permission"]) ?? toolsOrigin)
  mergeInto(next, toolsPerms, ["permission"], (p) => {
    const tool = fromTool.get(p[1] ?? "")
    return tool === undefined ? toolsOrigin : prov.origin(["tools", tool])
  }, prov)
  if (isObject(explicit)) mergeInto(next, explicit, ["permission"], (p) => old.origin(p), prov)
}

/** OpenCode's migration: `autoshare: true` with no `share` means `share: "auto"`. */
const legacyAutoshareToShare = (merged: JsonObject, prov: Provenance): void => {
  if (!("autoshare" in merged)) return
  if (merged.autoshare === true && merged.share === undefined) {
    merged.share = "auto"
    prov.set(["share"], prov.origin(["autoshare"]))
  }
  delete merged.autoshare
  prov.drop(["autoshare"])
}

/** One entry per plugin, the last source's; the others and their provenance go. */
const dedupePlugins = (merged: JsonObject, prov: Provenance): void => {
  if (!Array.isArray(merged.plugin)) return
  const entries: ReadonlyArray<unknown> = merged.plugin
  const kept = keptPluginEntries(entries)
  if (kept.length === entries.length) return
  const old = prov.extract(["plugin"])
  prov.set(["plugin"], old.origin(["plugin"]))
  merged.plugin = kept.map((from, to) => {
    prov.set(["plugin", String(to)], old.origin(["plugin", String(from)]))
    return entries[from]
  })
}

const postProcess = (
  merged: JsonObject,
  prov: Provenance,
  instance: InstanceInfo,
  sources: Array<string>
): void => {
  // Legacy `mode.<name>` → `agent.<name>` with `mode: "primary"`. Entries of the wrong type
  // stay where they are so validation reports them.
  if (isObject(merged.mode) && (merged.agent === undefined || isObject(merged.agent))) {
    const modes = merged.mode
    const rest: JsonObject = {}
    for (const name of Object.keys(modes)) {
      const entry = modes[name]
      if (!isObject(entry)) {
        rest[name] = entry
        continue
      }
      const moved = prov.extract(["mode", name])
      const at: SourceAt = (p) => moved.origin(["mode", ...p.slice(1)]) ?? prov.origin(["mode"])
      mergeInto(merged, { agent: { [name]: { ...entry, mode: "primary" } } }, [], at, prov)
    }
    if (Object.keys(rest).length > 0) {
      merged.mode = rest
    } else {
      delete merged.mode
      prov.drop(["mode"])
    }
  }

  legacyToolsToPermission(merged, prov)
  legacyAutoshareToShare(merged, prov)
  dedupePlugins(merged, prov)

  if (merged.username === undefined) {
    try {
      merged.username = os.userInfo().username
      prov.set(["username"], { file: "default", key: "username" })
    } catch {
      // No passwd entry (e.g. an arbitrary container uid): leave it unset.
    }
  }

  const flag = (name: string, key: "auto" | "prune") => {
    if (!isEnvFlag(instance.env[name])) return
    const file = `env:${name}`
    mergeInto(merged, { compaction: { [key]: false } }, [], () => ({ file, key: name }), prov)
    sources.push(file)
  }
  flag("AGENT_DISABLE_AUTOCOMPACT", "auto")
  flag("AGENT_DISABLE_PRUNE", "prune")
}
