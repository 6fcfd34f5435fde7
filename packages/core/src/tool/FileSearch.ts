import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { InstanceInfo } from "../runtime/Instance.js"
import { builtinFiles, builtinGrep } from "./BuiltinSearch.js"
import type { Engine, FileSearch } from "./FileSearchTypes.js"
import { ripgrepFiles, ripgrepGrep } from "./RipgrepSearch.js"

export { compilePattern } from "./BuiltinSearch.js"
export {
  type Engine,
  type FileSearch,
  type FileSearchError,
  type FilesInput,
  type FilesResult,
  type GrepInput,
  type GrepMatch,
  type GrepResult,
  InvalidPattern,
  SearchFailed
} from "./FileSearchTypes.js"
export { compileOverride, globToRegExp } from "./Globs.js"

/**
 * File listing and content search for `glob`, `grep` and `list`.
 *
 * Two engines give the same answers: ripgrep when `rg` is on the instance's PATH, and a
 * built-in walker that follows ripgrep's rules (ignore files, `--hidden`, `--glob` overrides)
 * for machines without it. Globs are ripgrep `--glob` globs: relative to the search root,
 * `*` stays within one path segment, and a glob without a `/` matches the file name at any
 * depth. A `--glob` that matches a file includes it even if an ignore file excludes it;
 * directories excluded by ignore files are never entered.
 *
 * This file chooses the engine and orders results; the engines are in BuiltinSearch.ts (with
 * IgnoreWalk.ts, the walk) and RipgrepSearch.ts, globs in Globs.ts.
 */

// ---------------------------------------------------------------------------------------------
// Choosing the engine

const rgByPath = new Map<string, string | undefined>()

/** `rg` on the given PATH, looked up once per PATH value. */
export const findRipgrep = (pathEnv: string | undefined, platform: NodeJS.Platform = process.platform) => {
  const key = `${platform}:${pathEnv ?? ""}`
  if (rgByPath.has(key)) return rgByPath.get(key)
  let found: string | undefined
  const names = platform === "win32" ? ["rg.exe", "rg.cmd"] : ["rg"]
  for (const dir of (pathEnv ?? "").split(platform === "win32" ? ";" : ":")) {
    if (dir === "") continue
    for (const name of names) {
      const candidate = path.join(dir, name)
      try {
        fs.accessSync(candidate, fs.constants.X_OK)
        if (fs.statSync(candidate).isFile()) found = candidate
      } catch {
        // not here
      }
      if (found) break
    }
    if (found) break
  }
  rgByPath.set(key, found)
  return found
}

/**
 * The search engine for `instance`: ripgrep if it is on the instance's PATH, else the
 * built-in walker. `engine` forces one (ripgrep fails at call time when it is missing).
 */
export const make = (instance: InstanceInfo, options: { readonly engine?: Engine } = {}): FileSearch => {
  const rg = findRipgrep(instance.env.PATH, instance.platform)
  const engine = options.engine ?? (rg ? "ripgrep" : "builtin")
  if (engine === "builtin") return { engine, files: builtinFiles, grep: builtinGrep }
  const env = Object.fromEntries(
    Object.entries(instance.env).filter((entry): entry is [string, string] => entry[1] !== undefined)
  )
  const binary = rg ?? "rg"
  return {
    engine,
    files: (input) => ripgrepFiles(binary, env, input),
    grep: (input) => ripgrepGrep(binary, env, input)
  }
}

// ---------------------------------------------------------------------------------------------
// Ordering results

/** Modification times (ms) of `files`; a file that vanished counts as oldest. */
export const modifiedTimes = (files: Iterable<string>): Effect.Effect<ReadonlyMap<string, number>> =>
  Effect.forEach(
    new Set(files),
    (file) =>
      Effect.promise(() =>
        fs.promises.stat(file).then(
          (stat) => [file, stat.mtimeMs] as const,
          () => [file, 0] as const
        )
      ),
    { concurrency: 32 }
  ).pipe(Effect.map((entries) => new Map(entries)))

/** Newest first; equal times by path, so the order is stable. */
export const byNewest = (times: ReadonlyMap<string, number>) => (a: string, b: string): number =>
  (times.get(b) ?? 0) - (times.get(a) ?? 0) || (a < b ? -1 : a > b ? 1 : 0)
