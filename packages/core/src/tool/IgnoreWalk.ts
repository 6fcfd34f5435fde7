import ignore, { type Ignore } from "ignore"
import * as fs from "node:fs"
import * as path from "node:path"
import { compileOverride, type OverrideGlob } from "./Globs.js"

// The built-in engine's walk: an async, bounded-concurrency walk of a directory tree that applies
// ripgrep's rules (ignore files and their precedence, `--glob` overrides, no symlinks followed).

/** Runs async tasks, at most `limit` at a time, newest first (depth-first keeps the queue short). */
export class TaskPool {
  readonly #queue: Array<() => Promise<void>> = []
  #active = 0
  #stopped = false
  #failure: { error: unknown } | undefined
  readonly #done: Promise<void>
  #resolve!: () => void
  #reject!: (error: unknown) => void

  constructor(readonly limit: number) {
    this.#done = new Promise((resolve, reject) => {
      this.#resolve = resolve
      this.#reject = reject
    })
  }

  get stopped() {
    return this.#stopped
  }

  push(task: () => Promise<void>) {
    if (this.#stopped) return
    this.#queue.push(task)
    this.#pump()
  }

  stop() {
    this.#stopped = true
    this.#queue.length = 0
    this.#settle()
  }

  /** Resolves when every task has finished (or the pool was stopped and the running ones finished). */
  wait(): Promise<void> {
    this.#settle()
    return this.#done
  }

  #pump() {
    while (!this.#stopped && this.#active < this.limit && this.#queue.length > 0) {
      const task = this.#queue.pop()!
      this.#active++
      task().then(
        () => this.#finished(),
        (error: unknown) => {
          this.#failure ??= { error }
          this.stop()
          this.#finished()
        }
      )
    }
  }

  #finished() {
    this.#active--
    this.#pump()
    this.#settle()
  }

  #settle() {
    if (this.#active > 0 || (!this.#stopped && this.#queue.length > 0)) return
    if (this.#failure) this.#reject(this.#failure.error)
    else this.#resolve()
  }
}

const IGNORE_FILES = [".gitignore", ".ignore", ".rgignore"] as const

/** The ignore files of one directory. */
interface IgnoreLayer {
  readonly dir: string
  readonly git: Ignore | undefined
  /** `.git/info/exclude`, only in a repository root. */
  readonly exclude: Ignore | undefined
  readonly plain: Ignore | undefined
  readonly custom: Ignore | undefined
  /** The directory is a repository root (has `.git`). */
  readonly repo: boolean
}

/** Ignore layers from the nearest directory outwards. */
interface Chain {
  readonly layer: IgnoreLayer | undefined
  readonly parent: Chain | undefined
  /** Some directory in the chain is in a git repository, so `.gitignore` files apply. */
  readonly inGit: boolean
}

const toPosix = (p: string) => (path.sep === "/" ? p : p.split(path.sep).join("/"))

type Verdict = "ignore" | "include" | undefined

/** `target` relative to `dir` (which contains it), `/`-separated; cheaper than `path.relative`. */
const relativeInside = (dir: string, target: string): string | undefined => {
  const prefix = dir.endsWith(path.sep) ? dir : dir + path.sep
  return target.startsWith(prefix) && target.length > prefix.length ? toPosix(target.slice(prefix.length)) : undefined
}

const testLayer = (matcher: Ignore | undefined, dir: string, target: string, isDir: boolean): Verdict => {
  if (!matcher) return undefined
  const relative = relativeInside(dir, target)
  if (relative === undefined) return undefined
  const result = matcher.test(isDir ? `${relative}/` : relative)
  return result.ignored ? "ignore" : result.unignored ? "include" : undefined
}

/** ripgrep's precedence: `.rgignore` over `.ignore` over `.gitignore` over `.git/info/exclude`, nearest file first. */
const ignoredByFiles = (chain: Chain, target: string, isDir: boolean): boolean => {
  let custom: Verdict
  let plain: Verdict
  let git: Verdict
  let exclude: Verdict
  let crossedRepo = false
  for (let link: Chain | undefined = chain; link; link = link.parent) {
    const layer = link.layer
    if (!layer) continue
    custom ??= testLayer(layer.custom, layer.dir, target, isDir)
    plain ??= testLayer(layer.plain, layer.dir, target, isDir)
    // Ignore files of an enclosing repository stop at a nested repository's root.
    if (chain.inGit && !crossedRepo) {
      git ??= testLayer(layer.git, layer.dir, target, isDir)
      exclude ??= testLayer(layer.exclude, layer.dir, target, isDir)
    }
    if (layer.repo) crossedRepo = true
  }
  return (custom ?? plain ?? git ?? exclude) === "ignore"
}

const readText = async (file: string): Promise<string | undefined> => {
  try {
    return await fs.promises.readFile(file, "utf8")
  } catch {
    return undefined
  }
}

const exists = async (file: string) => {
  try {
    await fs.promises.lstat(file)
    return true
  } catch {
    return false
  }
}

const loadLayer = async (dir: string, names: ReadonlySet<string>): Promise<IgnoreLayer | undefined> => {
  const repo = names.has(".git")
  const matcher = async (present: boolean, file: string) => {
    const text = present ? await readText(file) : undefined
    return text === undefined ? undefined : ignore({ allowRelativePaths: true }).add(text)
  }
  const [git, plain, custom, exclude] = await Promise.all([
    matcher(names.has(".gitignore"), path.join(dir, ".gitignore")),
    matcher(names.has(".ignore"), path.join(dir, ".ignore")),
    matcher(names.has(".rgignore"), path.join(dir, ".rgignore")),
    matcher(repo, path.join(dir, ".git", "info", "exclude"))
  ])
  if (!git && !plain && !custom && !exclude && !repo) return undefined
  return { dir, git, plain, custom, exclude, repo }
}

/** The ignore files of the search root's ancestors, which ripgrep applies too. */
const ancestorChain = async (root: string): Promise<Chain> => {
  const dirs: Array<string> = []
  for (let dir = path.dirname(root); ; dir = path.dirname(dir)) {
    dirs.push(dir)
    if (path.dirname(dir) === dir) break
  }
  let chain: Chain | undefined
  for (const dir of dirs.reverse()) {
    const names = new Set<string>()
    await Promise.all(
      [...IGNORE_FILES, ".git"].map(async (name) => {
        if (await exists(path.join(dir, name))) names.add(name)
      })
    )
    const layer = await loadLayer(dir, names)
    chain = { layer, parent: chain, inGit: (chain?.inGit ?? false) || (layer?.repo ?? false) }
  }
  return chain!
}

interface Overrides {
  readonly globs: ReadonlyArray<OverrideGlob>
  readonly hasIncludes: boolean
}

const compileOverrides = (globs: ReadonlyArray<string>): Overrides => {
  const compiled = globs.map(compileOverride)
  return { globs: compiled, hasIncludes: compiled.some((glob) => glob.include) }
}

/** The last glob that matches decides; `undefined` when none does. */
const overrideVerdict = (overrides: Overrides, relative: string, isDir: boolean): Verdict => {
  for (let i = overrides.globs.length - 1; i >= 0; i--) {
    const glob = overrides.globs[i]!
    if (glob.directoryOnly && !isDir) continue
    if (glob.regex.test(relative)) return glob.include ? "include" : "ignore"
  }
  return undefined
}

interface WalkOptions {
  readonly root: string
  readonly globs: ReadonlyArray<string>
  readonly pool: TaskPool
  readonly onFile: (file: string) => void
  readonly onError: () => void
}

/** Walks `root` (a directory) with the pool, calling `onFile` for every file ripgrep would list. */
export const walk = async (options: WalkOptions): Promise<void> => {
  const { root, pool, onFile, onError } = options
  const overrides = compileOverrides(options.globs)
  const rootChain = await ancestorChain(root)

  const visit = async (dir: string, dirRelative: string, parentChain: Chain): Promise<void> => {
    // One readdir per directory: about 4x faster than iterating `opendir` entry by entry.
    let entries: Array<fs.Dirent>
    try {
      entries = await fs.promises.readdir(dir, { withFileTypes: true })
    } catch {
      onError()
      return
    }
    if (pool.stopped) return
    const names = new Set<string>()
    for (const entry of entries) {
      if ((IGNORE_FILES as ReadonlyArray<string>).includes(entry.name) || entry.name === ".git") names.add(entry.name)
    }
    const layer = names.size > 0 ? await loadLayer(dir, names) : undefined
    const chain: Chain = layer
      ? { layer, parent: parentChain, inGit: parentChain.inGit || layer.repo }
      : parentChain

    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    const subdirs: Array<readonly [string, string]> = []
    for (const entry of entries) {
      if (pool.stopped) return
      const isDir = entry.isDirectory()
      // Symlinks are not followed and special files are not searched, as with ripgrep.
      if (!isDir && !entry.isFile()) continue
      const absolute = path.join(dir, entry.name)
      const relative = dirRelative === "" ? entry.name : `${dirRelative}/${entry.name}`
      const verdict = overrideVerdict(overrides, relative, isDir)
      if (verdict === "ignore") continue
      if (verdict === undefined) {
        if (!isDir && overrides.hasIncludes) continue
        if (ignoredByFiles(chain, absolute, isDir)) continue
      }
      if (isDir) subdirs.push([absolute, relative])
      else onFile(absolute)
    }
    // Pushed in reverse so the pool (last in, first out) visits them in name order.
    for (let i = subdirs.length - 1; i >= 0; i--) {
      const [sub, subRelative] = subdirs[i]!
      pool.push(() => visit(sub, subRelative, chain))
    }
  }

  pool.push(() => visit(root, "", rootChain))
  await pool.wait()
}
