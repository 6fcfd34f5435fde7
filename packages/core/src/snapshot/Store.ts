import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { isAlive } from "../runtime/Pid.js"
import { type StoreDiskShape, writeAtomic, writeIfChanged } from "./StoreFile.js"

/**
 * The snapshot store's own files: creating them, and telling a damaged store at open. Every
 * file written here is replaced in one step (snapshot/StoreFile.ts), so a full disk leaves the
 * old file or none, never an empty one; HEAD is written last, so a store whose creation failed
 * half-way has no HEAD and is simply created again.
 */

/** Never tracked, in any project (the user's `.gitignore` adds to this). */
export const DEFAULT_EXCLUDES = ["node_modules/", ".venv/", "__pycache__/"]
/** Content is stored byte for byte: no line-ending conversion, filters or encodings. */
const ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding\n"
const HEAD = "ref: refs/heads/main\n"
const CONFIG = [
  "[core]",
  "\trepositoryformatversion = 0",
  "\tbare = false",
  "\tfilemode = true",
  "\tsymlinks = true",
  "\tautocrlf = false",
  "\tquotepath = false",
  "\tuntrackedCache = false",
  "[index]",
  "\tversion = 4",
  "[gc]",
  "\tauto = 0",
  ""
].join("\n")

export interface StoreLayout {
  readonly gitDir: string
  /** This process's index (the stat cache). */
  readonly ownIndex: string
  /** The project, whose own `info/exclude` is copied into the store's. */
  readonly worktree: string
}

/** The user's `info/exclude`, found through a `.git` dir or a worktree's `.git` file. */
const userExcludes = (worktree: string): string => {
  try {
    const dotGit = path.join(worktree, ".git")
    let gitDir = dotGit
    if (fs.statSync(dotGit).isFile()) {
      const pointer = /^gitdir:\s*(.+)$/m.exec(fs.readFileSync(dotGit, "utf8"))?.[1]?.trim()
      if (!pointer) return ""
      gitDir = path.resolve(worktree, pointer)
      const common = path.join(gitDir, "commondir")
      if (fs.existsSync(common)) gitDir = path.resolve(gitDir, fs.readFileSync(common, "utf8").trim())
    }
    return fs.readFileSync(path.join(gitDir, "info", "exclude"), "utf8")
  } catch {
    return ""
  }
}

/** Creates the store (plain files: no git process needed), refreshes its settings and ignore rules, and seeds our stat cache. */
export const create = async (disk: StoreDiskShape, layout: StoreLayout): Promise<void> => {
  const { gitDir, ownIndex } = layout
  for (const dir of ["objects/info", "objects/pack", "refs/heads", "refs/tags", "info"]) {
    await fsp.mkdir(path.join(gitDir, dir), { recursive: true })
  }
  await writeIfChanged(disk, path.join(gitDir, "config"), CONFIG)
  await writeIfChanged(disk, path.join(gitDir, "info", "attributes"), ATTRIBUTES)
  const own = userExcludes(layout.worktree)
  await writeIfChanged(
    disk,
    path.join(gitDir, "info", "exclude"),
    `# written by the agent runtime: defaults, then the project's own .git/info/exclude\n${DEFAULT_EXCLUDES.join("\n")}\n${own}${own.endsWith("\n") || own === "" ? "" : "\n"}`
  )
  if (!fs.existsSync(path.join(gitDir, "gc-stamp"))) await writeAtomic(disk, path.join(gitDir, "gc-stamp"), String(Date.now()))
  if (!fs.existsSync(path.join(gitDir, "HEAD"))) await writeAtomic(disk, path.join(gitDir, "HEAD"), HEAD, { syncDir: true })
  // Seed our stat cache from the freshest index another process left (mtime kept, for git's racy check).
  if (!fs.existsSync(ownIndex)) {
    const seed = fs.readdirSync(gitDir)
      .filter((name) => name === "index" || /^index-\d+$/.test(name))
      .map((name) => path.join(gitDir, name))
      .flatMap((file) => {
        try {
          return [{ file, mtime: fs.statSync(file).mtime }]
        } catch {
          return []
        }
      })
      .sort((a, b) => b.mtime.getTime() - a.mtime.getTime())[0]
    if (seed) await writeAtomic(disk, ownIndex, await fsp.readFile(seed.file), { mtime: seed.mtime })
  }
}

/**
 * What is wrong with the store's own files, before git is asked: undefined when they look sound
 * or when there is no complete store yet (no HEAD: it is created afresh). An empty file is what
 * a write cut short by a full disk leaves.
 */
export const inspect = (gitDir: string): string | undefined => {
  let head: string
  try {
    head = fs.readFileSync(path.join(gitDir, "HEAD"), "utf8")
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    return code === "ENOENT" ? undefined : `HEAD cannot be read (${code ?? String(error)})`
  }
  if (head.length === 0) return "HEAD is empty"
  if (!/^(ref: refs\/\S+|[0-9a-f]{40})\s*$/.test(head)) return "HEAD names no branch or commit"
  try {
    if (fs.statSync(path.join(gitDir, "config")).size === 0) return "config is empty"
  } catch {
    // absent: written at open
  }
  return undefined
}

/** Moves a damaged store out of the way, next to where it was; returns where it went. */
export const moveAside = (gitDir: string, now: Date = new Date()): string => {
  const stamp = now.toISOString().replace(/[:.]/g, "-")
  let aside = `${gitDir}.damaged-${stamp}`
  for (let n = 2; fs.existsSync(aside); n++) aside = `${gitDir}.damaged-${stamp}-${n}`
  fs.renameSync(gitDir, aside)
  return aside
}

/**
 * Takes the lock that serializes repairs of one store between processes (a directory next to
 * it holding the owner's pid): false while another live process holds it. A lock whose owner is
 * gone is taken over.
 */
export const tryLock = (gitDir: string): boolean => {
  const lock = `${gitDir}.repairing`
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.mkdirSync(lock)
      try {
        fs.writeFileSync(path.join(lock, "pid"), String(process.pid))
      } catch {
        // the lock holds without it; it is then taken over once it is old
      }
      return true
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
    }
    if (!stale(lock)) return false
    fs.rmSync(lock, { recursive: true, force: true })
  }
  return false
}

export const unlock = (gitDir: string) => fs.rmSync(`${gitDir}.repairing`, { recursive: true, force: true })

const stale = (lock: string): boolean => {
  try {
    const pid = Number(fs.readFileSync(path.join(lock, "pid"), "utf8"))
    return !Number.isInteger(pid) || pid <= 0 || !isAlive(pid)
  } catch {
    try {
      return Date.now() - fs.statSync(lock).mtimeMs > 30_000
    } catch {
      return true
    }
  }
}
