/**
 * OpenCode's `plugin` list, read as OpenCode reads it: entries from every config file plus the
 * `plugin(s)/*.{ts,js}` files of every config dir, paths as `file://` URLs, one entry per package
 * or file (the later source wins). This runtime lists them and runs none.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"

/** The specifier of an entry: a bare one, or the first item of `[specifier, options]`. */
export const pluginSpecifier = (entry: unknown): string | undefined =>
  typeof entry === "string" ? entry : Array.isArray(entry) && typeof entry[0] === "string" ? entry[0] : undefined

/** A file rather than a package: `file://`, `./`, `../` or an absolute path (as OpenCode decides). */
const isPathSpec = (spec: string): boolean =>
  spec.startsWith("file://") || spec.startsWith(".") || path.isAbsolute(spec) || /^[A-Za-z]:[\\/]/.test(spec)

/**
 * A path entry as a `file://` URL. Relative paths are taken from the directory of the file that
 * lists them, or from the project when that file sits in `.opencode/` or `.agent/`. Entries of
 * the wrong shape are returned as they are, for validation to report.
 */
export const resolvePluginEntry = (entry: unknown, configDir: string): unknown => {
  const spec = pluginSpecifier(entry)
  if (spec === undefined || !isPathSpec(spec) || spec.startsWith("file://")) return entry
  const dirName = path.basename(configDir)
  const base = dirName === ".opencode" || dirName === ".agent" ? path.dirname(configDir) : configDir
  const url = pathToFileURL(path.resolve(base, spec)).href
  return typeof entry === "string" ? url : [url, ...(entry as ReadonlyArray<unknown>).slice(1)]
}

/** What makes two entries the same plugin: the package name without its version, or the file URL. */
export const pluginIdentity = (spec: string): string => {
  if (isPathSpec(spec)) return spec
  const at = spec.lastIndexOf("@")
  return at > 0 ? spec.slice(0, at) : spec
}

/**
 * The positions of the entries that stay: of entries naming the same plugin, the last one (the
 * highest-precedence source), kept where it stands. Entries of the wrong shape all stay.
 */
export const keptPluginEntries = (entries: ReadonlyArray<unknown>): Array<number> => {
  const seen = new Set<string>()
  const kept: Array<number> = []
  for (let index = entries.length - 1; index >= 0; index--) {
    const spec = pluginSpecifier(entries[index])
    if (spec !== undefined) {
      const identity = pluginIdentity(spec)
      if (seen.has(identity)) continue
      seen.add(identity)
    }
    kept.push(index)
  }
  return kept.reverse()
}

/** `plugin/*.{ts,js}` and `plugins/*.{ts,js}` of a config dir, by name. */
export const pluginFiles = (configDir: string): Array<string> =>
  ["plugin", "plugins"].flatMap((sub) => {
    const dir = path.join(configDir, sub)
    let names: Array<string>
    try {
      names = fs.readdirSync(dir)
    } catch {
      return []
    }
    return names
      .filter((name) => /\.(ts|js)$/.test(name) && isFile(path.join(dir, name)))
      .sort()
      .map((name) => path.join(dir, name))
  })

const isFile = (file: string): boolean => {
  try {
    return fs.statSync(file).isFile()
  } catch {
    return false
  }
}
