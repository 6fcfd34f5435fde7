import type * as SqlClient from "@effect/sql/SqlClient"
import type { Context, Effect, Fiber, Scope } from "effect"
import * as path from "node:path"
import type { Bus } from "../runtime/Bus.js"
import type { withBusyRetry } from "../store/Database.js"
import type * as Git from "./Git.js"
import type { StepStart } from "./SnapshotTypes.js"
import type { StoreDiskShape } from "./StoreFile.js"
import * as Tree from "./Tree.js"
import type * as Watch from "./Watch.js"

// What the parts of the Snapshot service share: the layer's dependencies and its mutable state, one
// value created by the layer and passed to the module functions of snapshot/ (no module-level state).

const ROOT_CACHE = 64

/** A file we hashed that git has not yet recorded in the stat cache, by stat signature. */
export interface HashedFile {
  readonly signature: string
  readonly entry: Tree.FileEntry
  readonly at: number
}

/** The mutable state of one Snapshot layer. */
export class SnapshotState {
  /** Why snapshots are off here, once they are. */
  disabled: string | undefined
  /** The project root was checked against the refusals (home directory, file system root, ...). */
  checked = false
  /**
   * With the project's directories watched (Linux), a scan looks at the paths that changed since
   * the last one, and the whole project is stated only when the watches cannot vouch for that
   * (see snapshot/Watch.ts). `watching` is false where watching is off, or had to stop.
   */
  watching: boolean
  watch: Watch.ProjectWatch | undefined = undefined
  /** The store was checked and the stat cache loaded. */
  loaded = false
  /** The files as last seen: the latest snapshot of this process. */
  current: Tree.Dir = Tree.EMPTY
  /**
   * Changed paths not yet written to our index, and those being written: git cannot list their
   * changes (a file it never recorded cannot show as deleted), so every scan looks at them itself.
   */
  readonly pendingIndex = new Set<string>()
  readonly indexing = new Set<string>()
  /** Paths git refused to record: always scanned by us. */
  readonly stuck = new Set<string>()
  /** Paths git re-hashed for the index since the last scan: their content may differ from ours. */
  readonly recheck = new Set<string>()
  /** Trees of recent snapshots by id (most recent last). */
  readonly roots = new Map<string, Tree.Dir>()
  /** Snapshots of steps in progress: kept by garbage collection though no part names them yet. */
  readonly inFlight = new Map<string, number>()
  /**
   * What we hashed of files git has not yet recorded in the stat cache: a file whose signature is
   * unchanged, and that was already settled when we read it, is not read again.
   */
  readonly hashed = new Map<string, HashedFile>()
  /** Loose object count at the last background repack. */
  packedAt = 0
  /** A background update of the stat cache is scheduled or running. */
  flushing = false
  /** Set when the layer closes: the finalizer writes what is left, nothing starts after it. */
  closing = false
  /** A background refresh of racily clean index entries is scheduled or running. */
  refreshing = false
  /** The watches are being set up (with a full scan) in the background. */
  arming = false
  /** A collection scheduled after a session was deleted. */
  gcTimer: Fiber.RuntimeFiber<void> | undefined = undefined

  constructor(disabled: string | undefined, watching: boolean) {
    this.disabled = disabled
    this.watching = watching
  }

  hold(id: string) {
    this.inFlight.set(id, (this.inFlight.get(id) ?? 0) + 1)
  }

  release(start: StepStart | undefined) {
    if (!start) return
    const count = (this.inFlight.get(start.id) ?? 1) - 1
    if (count <= 0) this.inFlight.delete(start.id)
    else this.inFlight.set(start.id, count)
  }

  /** Caches a snapshot's tree, dropping the oldest past ROOT_CACHE. */
  cacheRoot(id: string, dir: Tree.Dir) {
    this.roots.delete(id)
    this.roots.set(id, dir)
    if (this.roots.size > ROOT_CACHE) this.roots.delete(this.roots.keys().next().value!)
  }
}

/** The Snapshot layer's dependencies and settings, with its state. */
export interface SnapshotDeps {
  /** The project root snapshots are relative to. */
  readonly root: string
  /** The store (a GIT_DIR of our own). */
  readonly gitDir: string
  /** This process's index: the stat cache. */
  readonly ownIndex: string
  /** The user's home directory and the data directory (refused as projects). */
  readonly home: string
  readonly dataDir: string
  readonly projectID: string
  readonly maxFiles: number
  readonly maxFileSize: number
  readonly retentionMs: number
  readonly disk: StoreDiskShape
  readonly writer: Tree.ObjectWriter
  readonly git: Git.Runner
  readonly bus: Context.Tag.Service<Bus>
  readonly sql: SqlClient.SqlClient
  readonly dbWrite: ReturnType<typeof withBusyRetry>
  /** Background work (flushes, repacks, watches, collections) runs in the layer's scope. */
  readonly scope: Scope.Scope
  /** Serializes everything that reads or moves `current`. */
  readonly lock: Effect.Semaphore
  /** One opening of the store at a time (steps open it under `lock`, reads without it). */
  readonly loadLock: Effect.Semaphore
  /** Serializes writes of our index (the stat cache). */
  readonly indexLock: Effect.Semaphore
  /** Serializes repacking. */
  readonly packLock: Effect.Semaphore
  readonly state: SnapshotState
}

export const isGitPath = (file: string) => file.split("/").some((segment) => segment.toLowerCase() === ".git")

/** Stores a tree's id and caches it. */
export const remember = (deps: SnapshotDeps, dir: Tree.Dir): string => {
  const id = dir.id(deps.writer)
  deps.state.cacheRoot(id, dir)
  return id
}

/** A path as relative to the project root, `/`-separated; undefined outside it or in a `.git`. */
export const relative = (deps: SnapshotDeps, absolute: string): string | undefined => {
  const rel = path.relative(deps.root, absolute)
  if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) return undefined
  const posix = rel.split(path.sep).join("/")
  return isGitPath(posix) ? undefined : posix
}
