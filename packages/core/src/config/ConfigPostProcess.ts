import * as os from "node:os"
import { keptPluginEntries } from "./ConfigPlugins.js"
import type { InstanceInfo } from "../runtime/Instance.js"
import { isEnvFlag, isObject, type JsonObject, type LoadContext, makeSource, pathKey, type Remap, remapPath } from "./ConfigFiles.js"
import { jsonLines } from "./ConfigJson.js"
import { mergeInto, Provenance, type SourceAt } from "./ConfigMerge.js"

// What happens to the merged config before it is decoded: AGENT_PERMISSION, the legacy keys
// (`mode`, `tools`, `autoshare`), duplicate plugins, defaults and env flags.

const EDIT_TOOLS: ReadonlySet<string> = new Set(["write", "edit", "patch", "multiedit"])


/** `AGENT_PERMISSION` (JSON, or a bare action) merged into `permission`; invalid JSON is a warning. */
export const applyEnvPermission = (
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
export const legacyToolsToPermission = (merged: JsonObject, prov: Provenance): void => {
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
export const legacyAutoshareToShare = (merged: JsonObject, prov: Provenance): void => {
  if (!("autoshare" in merged)) return
  if (merged.autoshare === true && merged.share === undefined) {
    merged.share = "auto"
    prov.set(["share"], prov.origin(["autoshare"]))
  }
  delete merged.autoshare
  prov.drop(["autoshare"])
}

/** One entry per plugin, the last source's; the others and their provenance go. */
export const dedupePlugins = (merged: JsonObject, prov: Provenance): void => {
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

export const postProcess = (
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

