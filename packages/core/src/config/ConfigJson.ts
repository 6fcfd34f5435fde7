import { AgentConfigKeys, ConfigIgnoredKeys, ConfigKeys, ExperimentalIgnoredKeys } from "@agent/domain"
import { parse as parseJsonc, parseTree, printParseErrorCode } from "jsonc-parser"
import type { Node as JsonNode, ParseError as JsonParseError } from "jsonc-parser"
import { resolvePluginEntry } from "./ConfigPlugins.js"
import {
  configError,
  isObject,
  type JsonObject,
  lineIndex,
  type LoadContext,
  makeSource,
  type Path,
  pathKey,
  type Remap,
  remapPath,
  type Source
} from "./ConfigFiles.js"
import { substitute } from "./ConfigSubstitution.js"

// A JSON(C) config file as a source: its keys checked, agents and permissions normalised, and the
// line of every key kept for provenance.

/** Unknown agent keys move into `options`; `steps ??= maxSteps`; a bare permission action means `{"*": action}`. */
export const normalizeAgent = (entry: unknown, prefix: Path, remap: Remap): unknown => {
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

export const normalizePermission = (value: unknown, at: Path, remap: Remap): unknown => {
  if (typeof value !== "string") return value
  remap.set(pathKey([...at, "*"]), at)
  return { "*": value }
}

export const normalizeAgentMap = (value: unknown, prefix: Path, remap: Remap): unknown => {
  if (!isObject(value)) return value
  const out: JsonObject = {}
  for (const name of Object.keys(value)) {
    if (name === "__proto__") continue
    out[name] = normalizeAgent(value[name], [...prefix, name], remap)
  }
  return out
}

/**
 * Checks the top-level keys of one config object and normalises it: OpenCode-only keys are
 * dropped with a warning, unknown keys are errors.
 */
export const normalizeConfig = (
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
  liftApprover(out, remap)
  if (out.agent !== undefined) out.agent = normalizeAgentMap(out.agent, ["agent"], remap)
  if (out.mode !== undefined) out.mode = normalizeAgentMap(out.mode, ["mode"], remap)
  return out
}

/**
 * `permission.approver` is not a rule: it moves to the top-level `approver` (provenance still names
 * `permission.approver`), so that `permission` stays OpenCode's map of rules for every reader.
 */
const liftApprover = (out: JsonObject, remap: Remap) => {
  if (!isObject(out.permission) || !Object.hasOwn(out.permission, "approver")) return
  const { approver, ...rules } = out.permission
  out.permission = rules
  out.approver = approver
  remap.set(pathKey(["approver"]), ["permission", "approver"])
}

export const PLUGINS_DO_NOT_RUN = "plugins do not run in this runtime; the list is only shown by `agent debug config`"

/** OpenCode's deprecated `autoshare` (a boolean), kept until `postProcess` reads it as `share`. */
export const legacyAutoshare = (
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
export const jsonLines = (text: string): (p: Path) => number | undefined => {
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

/** Substitutes, parses and normalises one JSONC config text. */
export const jsonSource = (file: string, rawText: string, baseDir: string, ctx: LoadContext): Source => {
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
