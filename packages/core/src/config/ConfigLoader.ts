import { Config, ConfigError, type HookScope, HooksConfig, PermissionConfig } from "@agent/domain"
import { Either, ParseResult, Schema } from "effect"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { pluginFiles } from "./ConfigPlugins.js"
import type { InstanceInfo } from "../runtime/Instance.js"
import {
  configError,
  expandHome,
  isDirectory,
  isEnvFlag,
  type JsonObject,
  type LoadContext,
  markdownFiles,
  pathKey,
  readText,
  type Source
} from "./ConfigFiles.js"
import type { ConfigInfo, HookSource } from "./ConfigInfo.js"
import { jsonSource, PLUGINS_DO_NOT_RUN } from "./ConfigJson.js"
import { markdownSource } from "./ConfigMarkdown.js"
import { mergeInto, Provenance, type SourceAt } from "./ConfigMerge.js"
import { applyEnvPermission, legacyToolsToPermission, postProcess } from "./ConfigPostProcess.js"

// Loading: every layer of config files found for an instance, merged with provenance, then decoded.

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
  // `approver` is written `permission.approver` (ConfigJson moves it): the key as the user wrote it.
  const key = p[0] === "approver" ? ["permission", ...p] : p
  return configError(origin?.file ?? "merged config", detail, origin?.line, key.join("."))
}


// ---------------------------------------------------------------------------------------------
// Loading

const CONFIG_FILES = ["opencode.json", "opencode.jsonc", "agent.json", "agent.jsonc"] as const
const OWN_CONFIG_FILES = ["agent.json", "agent.jsonc"] as const

/** Directories from the worktree root down to `instance.directory` (only the directory outside git). */const projectDirs = (instance: InstanceInfo): Array<string> => {
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

/** Loads, merges and decodes the configuration of `instance`; throws `ConfigError`. */
export const load = (instance: InstanceInfo): ConfigInfo => {
  const ctx: LoadContext = { instance, warnings: [], substitutions: new Map() }
  const sources: Array<string> = []
  const directories: Array<string> = []
  const merged: JsonObject = {}
  const prov = new Provenance()

  // Hooks are kept per file too: each file's run (none replaces another's), and where one came from decides whether it runs.
  const hookSources: Array<HookSource> = []
  const apply = (source: Source, scope: HookScope = "user") => {
    mergeInto(merged, source.value, [], source.locate, prov)
    sources.push(source.file)
    if (source.value.hooks !== undefined) hookSources.push(decodeHooks(source, scope))
  }
  const applyFile = (file: string, scope: HookScope = "user") => {
    const text = readText(file)
    if (text !== undefined) apply(jsonSource(file, text, path.dirname(file), ctx), scope)
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
  for (const dir of dirs) for (const name of CONFIG_FILES) applyFile(path.join(dir, name), "project")

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
      for (const name of CONFIG_FILES) applyFile(path.join(configDir, name), "project")
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
    apply(source, "managed")
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
    hooks: hookSources,
    ...(policy === undefined ? {} : { managed: { permission: policy, origin: (p) => managedProv.origin(p) } })
  }
}

const decodeHooksConfig = Schema.decodeUnknownEither(Schema.Struct({ hooks: HooksConfig }), { errors: "all", onExcessProperty: "error" })

/** One file's `hooks`, decoded on its own so an error names that file. */
const decodeHooks = (source: Source, scope: HookScope): HookSource => {
  const value: JsonObject = { hooks: source.value.hooks }
  const decoded = decodeHooksConfig(value)
  if (Either.isLeft(decoded)) {
    const prov = new Provenance()
    mergeInto({}, value, [], source.locate, prov)
    throw validationError(decoded.left, prov)
  }
  return { file: source.file, scope, hooks: decoded.right.hooks }
}

const decodeManagedPermission = Schema.decodeUnknownEither(Schema.Struct({ permission: Schema.optional(PermissionConfig) }), {
  errors: "all",
  onExcessProperty: "error"
})
