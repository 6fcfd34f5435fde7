import * as fs from "node:fs"
import * as path from "node:path"

/**
 * Directory watches over the project, so a step that ran something unknown (bash, MCP) looks only
 * at the paths that changed instead of stating every file.
 *
 * Only on Linux: there `fs.watch` is inotify, and every watch of the process shares one inotify
 * queue, delivered in order. `barrier` writes a file into a watched directory of the store and
 * waits for its event: every change made before it (by a tool that has finished) has then been
 * seen. Whatever could make the record incomplete makes the next scan a full one instead: a lost
 * or nameless event, a watch that failed, more events than the kernel queue is sure to hold, a
 * changed `.gitignore` or a `.git` appearing.
 *
 * The watch set (which directories are not ignored) is the caller's business (it asks git);
 * this class only keeps the watches and the record of what happened.
 */

export interface WatchLimits {
  /** At most this many directories are watched; more make `add` return false. */
  readonly maxDirs: number
  /** More events than this over two scans may have overflowed the kernel's queue. */
  readonly maxEvents: number
}

export interface Taken {
  /** Why this record cannot be trusted and the whole project must be scanned, if so. */
  readonly full: string | undefined
  /** Paths (relative, `/`-separated) that something happened to. */
  readonly dirty: ReadonlySet<string>
  /** Paths that were created, removed or renamed (every event on a directory is one of these). */
  readonly renamed: ReadonlySet<string>
}

interface Watched {
  readonly watcher: fs.FSWatcher
  readonly ino: number
  readonly birth: number
}

/** The kernel's limits, so the watches stay a small share of what the user's other tools need. */
const readLimit = (name: string, fallback: number): number => {
  try {
    const value = Number(fs.readFileSync(`/proc/sys/fs/inotify/${name}`, "utf8").trim())
    return Number.isFinite(value) && value > 0 ? value : fallback
  } catch {
    return fallback
  }
}

export const defaultLimits = (): WatchLimits => ({
  maxDirs: Math.min(8192, Math.floor(readLimit("max_user_watches", 8192) / 4)),
  maxEvents: Math.floor(readLimit("max_queued_events", 16384) / 2)
})

export const supported = () => process.platform === "linux"

export class ProjectWatch {
  private readonly watches = new Map<string, Watched>()
  private dirty = new Set<string>()
  private renamed = new Set<string>()
  private events = 0
  private previousEvents = 0
  private stale: string | undefined = "the watches are not set up yet"
  private barrierWatcher: fs.FSWatcher | undefined
  private barrierCount = 0
  private readonly waiting = new Map<string, (delivered: boolean) => void>()

  constructor(
    private readonly root: string,
    /** A directory of our own (in the store) for barrier files. */
    private readonly barrierDir: string,
    private readonly limits: WatchLimits
  ) {}

  get size(): number {
    return this.watches.size
  }

  has(dir: string): boolean {
    return this.watches.has(dir)
  }

  /** Whether `dir` is still the directory that is watched there (not one made in its place). */
  same(dir: string, stat: fs.Stats): boolean {
    const watched = this.watches.get(dir)
    return watched !== undefined && watched.birth !== 0 && watched.ino === stat.ino && watched.birth === stat.birthtimeMs
  }

  /** Marks the record untrustworthy: the next scan is a full one. */
  invalidate(reason: string) {
    this.stale ??= reason
  }

  /**
   * Watches a directory (relative; "" is the root). False when it cannot be watched (limit
   * reached, the kernel refused); a directory that has gone meanwhile is no failure.
   */
  add(dir: string): boolean {
    if (this.watches.has(dir)) return true
    if (this.watches.size >= this.limits.maxDirs) return false
    const absolute = dir === "" ? this.root : path.join(this.root, dir)
    try {
      const stat = fs.lstatSync(absolute)
      if (!stat.isDirectory()) return true
      const watcher = fs.watch(absolute, { persistent: false }, (type, name) => this.onEvent(dir, type, name))
      watcher.on("error", () => this.invalidate(`the watch of ${dir || "."} failed`))
      this.watches.set(dir, { watcher, ino: stat.ino, birth: stat.birthtimeMs })
      return true
    } catch (error) {
      // Gone meanwhile, or not readable (git cannot list it either): nothing to watch there.
      const code = (error as NodeJS.ErrnoException).code
      return code === "ENOENT" || code === "ENOTDIR" || code === "EACCES" || code === "EPERM"
    }
  }

  /** Stops watching `dir` and everything below it. */
  removeUnder(dir: string) {
    for (const [watched, entry] of this.watches) {
      if (dir === "" || watched === dir || watched.startsWith(`${dir}/`)) {
        entry.watcher.close()
        this.watches.delete(watched)
      }
    }
  }

  /** Drops every watch and the record: the caller sets the watches up again and scans everything. */
  reset() {
    this.removeUnder("")
    this.dirty = new Set()
    this.renamed = new Set()
    this.events = 0
    this.previousEvents = 0
    this.stale = undefined
  }

  private onEvent(dir: string, type: string, name: string | Buffer | null) {
    if (typeof name !== "string" || name.length === 0) {
      this.invalidate("a change was reported without a name")
      return
    }
    this.events++
    const lower = name.toLowerCase()
    if (lower === ".gitignore") this.invalidate("a .gitignore changed")
    else if (lower === ".git") this.invalidate("a .git appeared or changed")
    const file = dir === "" ? name : `${dir}/${name}`
    this.dirty.add(file)
    if (type === "rename") this.renamed.add(file)
  }

  /**
   * Resolves true once every change made before the call has been delivered, false when that
   * could not be established in time (the caller then scans everything).
   */
  barrier(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      try {
        if (!this.barrierWatcher) {
          fs.mkdirSync(this.barrierDir, { recursive: true })
          this.barrierWatcher = fs.watch(this.barrierDir, { persistent: false }, (_type, name) => {
            if (typeof name !== "string") return
            const done = this.waiting.get(name)
            if (!done) return
            this.waiting.delete(name)
            done(true)
          })
          this.barrierWatcher.on("error", () => this.closeBarrier())
        }
        const name = `b${++this.barrierCount}`
        const file = path.join(this.barrierDir, name)
        const timer = setTimeout(() => {
          this.waiting.delete(name)
          fs.rmSync(file, { force: true })
          resolve(false)
        }, timeoutMs)
        this.waiting.set(name, (delivered) => {
          clearTimeout(timer)
          fs.rmSync(file, { force: true })
          resolve(delivered)
        })
        fs.writeFileSync(file, "")
      } catch {
        this.closeBarrier()
        resolve(false)
      }
    })
  }

  /** What happened since the last call, and whether it can be trusted; starts a new record. */
  take(): Taken {
    const overflow = this.events + this.previousEvents > this.limits.maxEvents
      ? `more than ${this.limits.maxEvents} changes at once (the kernel may have dropped some)`
      : undefined
    const taken: Taken = { full: this.stale ?? overflow, dirty: this.dirty, renamed: this.renamed }
    this.dirty = new Set()
    this.renamed = new Set()
    this.previousEvents = this.events
    this.events = 0
    this.stale = undefined
    return taken
  }

  private closeBarrier() {
    this.barrierWatcher?.close()
    this.barrierWatcher = undefined
    const waiting = [...this.waiting.values()]
    this.waiting.clear()
    for (const done of waiting) done(false)
    this.invalidate("the barrier watch failed")
  }

  close() {
    this.removeUnder("")
    this.barrierWatcher?.close()
    this.barrierWatcher = undefined
    fs.rmSync(this.barrierDir, { recursive: true, force: true })
  }
}
