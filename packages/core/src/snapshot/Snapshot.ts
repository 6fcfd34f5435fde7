import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Data, Duration, Effect, Fiber, Layer, Option, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Bus } from "../runtime/Bus.js"
import { warnBackgroundFailure } from "../runtime/BackgroundFailure.js"
import { Instance } from "../runtime/Instance.js"
import { isAlive } from "../runtime/Pid.js"
import { ConfigService } from "../config/ConfigService.js"
import { filename as databaseFile, withBusyRetry } from "../store/Database.js"
import * as Git from "./Git.js"
import * as Store from "./Store.js"
import { StoreDisk, writeAtomic } from "./StoreFile.js"
import * as Tree from "./Tree.js"
import * as Watch from "./Watch.js"

/**
 * The project's files at each step, for undo and session diffs.
 *
 * Snapshots are git trees in a store of our own (`<data>/snapshot/<project>/`, a separate GIT_DIR
 * with the project as work tree, as in OpenCode); the user's repository is never opened. Costs are
 * kept to what changed:
 * - a step whose tools cannot change files costs nothing, one whose tools name the files they
 *   change (edit, write, apply_patch) hashes those files, and only other steps (bash, MCP,
 *   custom tools, subagents) scan the project: on Linux the project's directories are watched
 *   and such a scan looks at the paths that changed (snapshot/Watch.ts); where the watches
 *   cannot vouch for that (the first scan, a changed `.gitignore`, a burst of changes, other
 *   systems, `snapshot_store.watch: false`) every file is stated with `git ls-files` over a stat
 *   cache;
 * - trees are built in memory and shared between snapshots, objects are stored once by content;
 * - `.gitignore` is honoured, files over `snapshot_store.max_file_size` are left out, and a home
 *   directory or a tree over `snapshot_store.max_files` is refused (the run goes on without
 *   snapshots, and a `snapshot.disabled` event says why);
 * - snapshots of deleted sessions, and of sessions idle for `retention_days`, are collected.
 */

const DEFAULT_MAX_FILES = 25_000
const DEFAULT_MAX_FILE_SIZE = 2 * 1024 * 1024
const DEFAULT_RETENTION_DAYS = 7
/** Objects younger than this survive a collection: another process may be about to refer to them. */
const DEFAULT_GC_GRACE = Duration.minutes(15)
/** More changed files than this are hashed by git in one batch rather than one by one here. */
const BULK_THRESHOLD = 256
const ROOT_CACHE = 64
/** The stat cache is updated at most this often, or at once when this many paths wait. */
const FLUSH_DELAY = Duration.seconds(1)
const FLUSH_BATCH = 200
const FLUSH_BYTES = 32 * 1024 * 1024
/** Git's timestamps here have one-second resolution: wait past it before refreshing the stat cache. */
const RACY_SETTLE = Duration.millis(1500)
/** How long a step waits for the project's watches to catch up before it scans everything instead. */
const BARRIER_TIMEOUT_MS = 2000
/** Loose objects written before they are packed. */
const PACK_EVERY = 4000
const GC_INTERVAL_MS = 24 * 60 * 60 * 1000
/** Wait this long after a session is deleted before collecting, so deletions batch up. */
const GC_AFTER_DELETE = Duration.seconds(30)

export interface SnapshotStatus {
  readonly enabled: boolean
  /** Why snapshots are off. */
  readonly reason?: string
  /** The directory snapshots cover (the project's root). */
  readonly directory: string
  /** Where the store lives. */
  readonly store: string
}

/** What a step's tools may have done to the project's files. */
export type StepTouch =
  | { readonly kind: "none" }
  | { readonly kind: "paths"; readonly paths: ReadonlyArray<string> }
  | { readonly kind: "unknown" }

export interface StepStart {
  readonly id: string
  readonly root: Tree.Dir
}

export interface StepResult {
  /** The snapshot after the step (for the step-finish part). */
  readonly snapshot: string
  /** The patch part: the snapshot before the step and the files (absolute) that the step changed. */
  readonly patch?: { readonly hash: string; readonly files: ReadonlyArray<string> }
}

/** Snapshots of one run's steps: the first step scans, later ones start where the last ended. */
export interface StepRecorder {
  readonly begin: () => Effect.Effect<StepStart | undefined>
  readonly finish: (start: StepStart | undefined, touch: StepTouch) => Effect.Effect<StepResult | undefined>
  /** The attempt failed and is retried: the next finish scans, so its changes are not lost. */
  readonly failed: (start: StepStart | undefined) => void
}

export interface RestoreFile {
  /** Relative to the project root, `/`-separated. */
  readonly file: string
  /** What to put back; undefined removes the file. */
  readonly target: Tree.FileEntry | undefined
  /** What the file must be now; anything else is a conflict and the file is left alone. */
  readonly expected: Tree.FileEntry | undefined
}

export interface RestoreResult {
  /** Snapshot taken just before (holding the files as they were). */
  readonly before: string
  /** Snapshot right after. */
  readonly after: string
  readonly restored: ReadonlyArray<string>
  readonly conflicts: ReadonlyArray<string>
}

export interface GcOptions {
  /** Objects younger than this are kept (default 15 minutes). */
  readonly grace?: Duration.DurationInput
}

export interface GcReport {
  /** Snapshots still referenced by sessions (and the files now). */
  readonly kept: number
  readonly bytesBefore: number
  readonly bytesAfter: number
}

/** A snapshot the store does not hold (collected, or made on another machine). */
export class SnapshotMissing extends Data.TaggedError("SnapshotMissing")<{ readonly id: string }> {
  override get message() {
    return `snapshot ${this.id} is not in the store (it was garbage-collected or made elsewhere)`
  }
}

/** The store cannot be read (git is missing, or the store is damaged). */
export class SnapshotUnavailable extends Data.TaggedError("SnapshotUnavailable")<{ readonly detail: string }> {
  override get message() {
    return `the snapshot store cannot be read: ${this.detail}`
  }
}

export type SnapshotError = SnapshotMissing | SnapshotUnavailable

export interface SnapshotShape {
  readonly status: () => Effect.Effect<SnapshotStatus>
  /** Records the project's files now (a full scan); undefined when snapshots are off. */
  readonly track: () => Effect.Effect<string | undefined>
  /** A recorder for one run of the session loop. */
  readonly steps: () => StepRecorder
  /** Files that differ between two snapshots. */
  readonly changes: (from: string, to: string) => Effect.Effect<ReadonlyArray<Tree.Change>, SnapshotError>
  /** The entries of `files` (relative paths) in a snapshot; undefined where the file is absent. */
  readonly entries: (
    snapshot: string,
    files: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyMap<string, Tree.FileEntry | undefined>, SnapshotError>
  /** Contents of stored objects by id. */
  readonly read: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, Buffer>, SnapshotError>
  /** Puts files back where they are as expected; the others are reported as conflicts. */
  readonly restore: (files: ReadonlyArray<RestoreFile>) => Effect.Effect<RestoreResult, SnapshotError>
  /** Drops snapshot data no live session refers to. */
  readonly gc: (options?: GcOptions) => Effect.Effect<GcReport>
  /** The project root snapshots are relative to. */
  readonly root: string
}

// --- helpers ---------------------------------------------------------------------------------

const isGitPath = (file: string) => file.split("/").some((segment) => segment.toLowerCase() === ".git")

const dirSize = (dir: string): number => {
  let total = 0
  const walk = (current: string) => {
    let entries: Array<fs.Dirent>
    try {
      entries = fs.readdirSync(current, { withFileTypes: true })
    } catch {
      return
    }
    for (const entry of entries) {
      const full = path.join(current, entry.name)
      if (entry.isDirectory()) walk(full)
      else {
        try {
          total += fs.statSync(full).size
        } catch {
          // removed meanwhile
        }
      }
    }
  }
  walk(dir)
  return total
}

type Hashed =
  | { readonly kind: "file"; readonly entry: Tree.FileEntry }
  | { readonly kind: "gone" }
  | { readonly kind: "skip" }

// --- the service ---------------------------------------------------------------------------

export class Snapshot extends Context.Tag("@agent/core/Snapshot")<Snapshot, SnapshotShape>() {
  static readonly layer: Layer.Layer<Snapshot, never, Instance | ConfigService | SqlClient.SqlClient | Bus> = Layer
    .scoped(Snapshot, make())
}

function make() {
  return Effect.gen(function*() {
    const instance = yield* Instance
    const config = yield* (yield* ConfigService).get()
    const sql = yield* SqlClient.SqlClient
    const bus = yield* Bus
    const scope = yield* Effect.scope
    const dbWrite = withBusyRetry(instance.env.AGENT_DB === ":memory:" ? ":memory:" : databaseFile(instance))

    const root = instance.worktree
    const gitDir = path.join(instance.paths.data, "snapshot", instance.projectID)
    const objectsDir = path.join(gitDir, "objects")
    const ownIndex = path.join(gitDir, `index-${process.pid}`)
    const context: Git.GitContext = {
      gitDir,
      workTree: root,
      indexFile: ownIndex,
      home: instance.env.HOME ?? instance.home,
      xdgConfigHome: instance.env.XDG_CONFIG_HOME
    }
    const maxFiles = config.snapshot_store?.max_files ?? DEFAULT_MAX_FILES
    const maxFileSize = config.snapshot_store?.max_file_size ?? DEFAULT_MAX_FILE_SIZE
    const retentionMs = (config.snapshot_store?.retention_days ?? DEFAULT_RETENTION_DAYS) * 24 * 60 * 60 * 1000

    const disk = yield* StoreDisk
    const writer = new Tree.ObjectWriter(objectsDir, disk)
    const git = yield* Git.shellRunner(context, gitDir)
    /** Serializes everything that reads or moves `current`. */
    const lock = yield* Effect.makeSemaphore(1)
    /** Serializes writes of our index (the stat cache). */
    const indexLock = yield* Effect.makeSemaphore(1)
    /** Serializes repacking. */
    const packLock = yield* Effect.makeSemaphore(1)

    let disabled: string | undefined = config.snapshot === false ? "snapshots are turned off in the config (snapshot: false)" : undefined
    let checked = false
    /**
     * With the project's directories watched (Linux), a scan looks at the paths that changed since
     * the last one, and the whole project is stated only when the watches cannot vouch for that
     * (see snapshot/Watch.ts). `watching` is false where watching is off, or had to stop.
     */
    let watching = config.snapshot_store?.watch !== false && Watch.supported()
    let watch: Watch.ProjectWatch | undefined
    let loaded = false
    /** The files as last seen: the latest snapshot of this process. */
    let current: Tree.Dir = Tree.EMPTY
    /**
     * Changed paths not yet written to our index, and those being written: git cannot list their
     * changes (a file it never recorded cannot show as deleted), so every scan looks at them itself.
     */
    const pendingIndex = new Set<string>()
    const indexing = new Set<string>()
    /** Paths git refused to record: always scanned by us. */
    const stuck = new Set<string>()
    /** Paths git re-hashed for the index since the last scan: their content may differ from ours. */
    const recheck = new Set<string>()
    const roots = new Map<string, Tree.Dir>()
    /** Snapshots of steps in progress: kept by garbage collection though no part names them yet. */
    const inFlight = new Map<string, number>()
    const hold = (id: string) => inFlight.set(id, (inFlight.get(id) ?? 0) + 1)
    const release = (start: StepStart | undefined) => {
      if (!start) return
      const count = (inFlight.get(start.id) ?? 1) - 1
      if (count <= 0) inFlight.delete(start.id)
      else inFlight.set(start.id, count)
    }

    const remember = (dir: Tree.Dir): string => {
      const id = dir.id(writer)
      roots.delete(id)
      roots.set(id, dir)
      if (roots.size > ROOT_CACHE) roots.delete(roots.keys().next().value!)
      return id
    }

    const refuse = (reason: string) =>
      Effect.gen(function*() {
        if (disabled) return
        disabled = reason
        watching = false
        watch?.close()
        watch = undefined
        yield* Effect.logWarning(`snapshots disabled for ${root}: ${reason}`)
        yield* bus.publish({ type: "snapshot.disabled", properties: { directory: root, reason } })
      })

    /** Why this directory must not be tracked at all, if it must not. */
    const refusal = (): string | undefined => {
      const home = path.resolve(instance.home)
      if (root === path.parse(root).root) return `${root} is the file system root; snapshots are off`
      if (root === home) return `${root} is your home directory; snapshots are off (start the agent inside a project)`
      if (home.startsWith(root + path.sep)) return `${root} contains your home directory; snapshots are off`
      const data = path.resolve(instance.paths.data)
      if (data === root || data.startsWith(root + path.sep)) {
        return `the data directory ${data} is inside ${root}; snapshots are off so the store does not track itself`
      }
      return undefined
    }

    // --- store layout ------------------------------------------------------------------------

    /** A write of the store's own files, as a typed failure (a full disk is one). */
    const storeIO = (what: string, run: () => Promise<void>) =>
      Effect.tryPromise({
        try: run,
        catch: (error) => new SnapshotUnavailable({ detail: `${what}: ${error instanceof Error ? error.message : String(error)}` })
      })

    /**
     * A damaged store (an empty HEAD or config, or one git cannot open) is moved aside at open and
     * a new one is started, with one warning: otherwise every later run would fail on every step.
     */
    const damage = Effect.gen(function*() {
      const found = Store.inspect(gitDir)
      if (found !== undefined || !fs.existsSync(path.join(gitDir, "HEAD"))) return found
      return yield* git(["rev-parse", "--git-dir"]).pipe(
        Effect.as(undefined),
        Effect.catchAll((error) => Effect.succeed(`git cannot open it: ${error.stderr.trim().split("\n").slice(-2).join(" ")}`))
      )
    })

    const repairStore = Effect.gen(function*() {
      if ((yield* damage) === undefined) return
      // One process moves the store; the others wait for it and then find a sound store.
      for (let waited = 0; !Store.tryLock(gitDir); waited += 50) {
        if (waited >= 10_000) return yield* new SnapshotUnavailable({ detail: `another process is repairing ${gitDir}` })
        yield* Effect.sleep("50 millis")
      }
      yield* Effect.gen(function*() {
        const reason = yield* damage
        if (reason === undefined) return
        const aside = Store.moveAside(gitDir)
        yield* Effect.logWarning(
          `the snapshot store ${gitDir} was damaged (${reason}); it was moved to ${aside} and a new store was started. ` +
            "Undo works for the steps from now on; older snapshots are only in the moved copy."
        )
      }).pipe(Effect.ensuring(Effect.sync(() => Store.unlock(gitDir))))
    }).pipe(
      Effect.catchAllDefect((defect) =>
        new SnapshotUnavailable({ detail: `cannot move the damaged store aside: ${defect instanceof Error ? defect.message : String(defect)}` })
      )
    )

    const parseStage = (output: Buffer) => {
      const entries: Array<readonly [string, Tree.FileEntry]> = []
      for (const line of Git.splitZ(output)) {
        // "<mode> <id> <stage>\t<path>"
        const tab = line.indexOf("\t")
        const [mode, id] = line.slice(0, tab).split(" ")
        entries.push([line.slice(tab + 1), { type: "file", mode: mode as Tree.FileMode, id: id! }])
      }
      return entries
    }

    /** Our index as a tree: the files as git last hashed them. */
    const loadIndex = Effect.gen(function*() {
      if (!fs.existsSync(ownIndex)) return Tree.EMPTY
      return Tree.build(parseStage(yield* git(["ls-files", "-s", "-z"])))
    })

    /** Checks the store, creates what is missing and loads our stat cache as `current` (once). */
    const load = Effect.gen(function*() {
      if (loaded) return
      yield* repairStore
      yield* storeIO(`cannot set up ${gitDir}`, () => Store.create(disk, { gitDir, ownIndex, worktree: root }))
      // A lock left by a killed git of an earlier process with our pid would block every update.
      fs.rmSync(`${ownIndex}.lock`, { force: true })
      // The stat cache is only a cache: one git finds corrupt is dropped, and the first scan hashes again.
      current = yield* loadIndex.pipe(
        Effect.catchIf((error) => error.code !== null && /\bindex\b/i.test(error.stderr), (error) =>
          Effect.zipRight(
            Effect.logWarning(`snapshot stat cache ${ownIndex} dropped, git cannot read it: ${error.message}`),
            Effect.sync(() => {
              fs.rmSync(ownIndex, { force: true })
              return Tree.EMPTY
            })
          )
        )
      )
      recheck.clear()
      loaded = true
    })

    /** Opens the store for tracking; false when snapshots are off here. */
    const open = Effect.gen(function*() {
      if (disabled) return false
      if (!checked) {
        const refused = refusal()
        if (refused) {
          yield* refuse(refused)
          return false
        }
        checked = true
      }
      yield* load
      return true
    }).pipe(
      Effect.catchAll((error) =>
        Effect.as(refuse(`the snapshot store cannot be used: ${error._tag === "SnapshotUnavailable" ? error.detail : error.message}`), false)
      )
    )

    /** Reading and restoring work wherever the store exists, even where tracking is refused. */
    const openForRead = load.pipe(Effect.mapError((error) => new SnapshotUnavailable({ detail: error.message })))

    /** A store that exists but cannot be written (a read-only data directory). */
    const readOnlyStore = () => {
      if (!fs.existsSync(path.join(gitDir, "HEAD"))) return false
      try {
        fs.accessSync(gitDir, fs.constants.W_OK)
        return false
      } catch {
        return true
      }
    }
    /** Only looking at stored snapshots: a read-only store is read as it is, without setting it up. */
    const openToLook = Effect.suspend(() => (!loaded && readOnlyStore() ? Effect.void : openForRead))

    // --- hashing and the stat cache ----------------------------------------------------------

    const relative = (absolute: string): string | undefined => {
      const rel = path.relative(root, absolute)
      if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) return undefined
      const posix = rel.split(path.sep).join("/")
      return isGitPath(posix) ? undefined : posix
    }

    /**
     * What we hashed of files git has not yet recorded in the stat cache, by stat signature: a file
     * whose signature is unchanged, and that was already settled when we read it, is not read again.
     */
    const hashed = new Map<string, { readonly signature: string; readonly entry: Tree.FileEntry; readonly at: number }>()
    const signatureOf = (stat: fs.Stats) => `${stat.mtimeMs}:${stat.ctimeMs}:${stat.size}:${stat.ino}:${stat.mode}`
    /** A change in the same clock tick keeps the signature; files without sub-second times get a wider margin. */
    const settled = (stat: fs.Stats, at: number) => {
      const margin = stat.mtimeMs % 1000 === 0 && stat.ctimeMs % 1000 === 0 ? 2000 : 50
      return Math.max(stat.mtimeMs, stat.ctimeMs) < at - margin
    }

    const hashPath = (file: string): Hashed => {
      const absolute = path.join(root, file)
      let stat: fs.Stats
      try {
        stat = fs.lstatSync(absolute)
      } catch {
        return { kind: "gone" }
      }
      try {
        if (stat.isSymbolicLink() || stat.isFile()) {
          if (stat.isFile() && stat.size > maxFileSize) return { kind: "skip" }
          const signature = signatureOf(stat)
          const known = hashed.get(file)
          if (known && known.signature === signature && settled(stat, known.at)) return { kind: "file", entry: known.entry }
          const at = Date.now()
          const entry: Tree.FileEntry = stat.isSymbolicLink()
            ? { type: "file", mode: "120000", id: writer.write("blob", fs.readlinkSync(absolute, { encoding: "buffer" })) }
            : {
              type: "file",
              mode: (stat.mode & 0o100) !== 0 ? "100755" : "100644",
              id: writer.write("blob", fs.readFileSync(absolute))
            }
          hashed.set(file, { signature, entry, at })
          return { kind: "file", entry }
        }
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (code === "ENOENT") return { kind: "gone" }
        return { kind: "skip" } // unreadable: leave it out
      }
      // A directory (a nested repository), socket or fifo: not a file of ours.
      return Tree.lookup(current, file) ? { kind: "gone" } : { kind: "skip" }
    }

    /** What changed at these paths relative to `current` (hashing them). */
    const refresh = (files: Iterable<string>): Map<string, Tree.FileEntry | undefined> => {
      const delta = new Map<string, Tree.FileEntry | undefined>()
      for (const file of files) {
        if (delta.has(file) || isGitPath(file)) continue
        const hashed = hashPath(file)
        if (hashed.kind === "skip") continue
        const now = hashed.kind === "file" ? hashed.entry : undefined
        if (!Tree.sameFile(Tree.lookup(current, file), now)) delta.set(file, now)
      }
      return delta
    }

    /** Puts queued objects on disk (before git reads the store, and in the background); never while git packs. */
    const flushObjects = Effect.suspend(() => packLock.withPermits(1)(writeObjects)).pipe(Effect.tap(() => packLoose))
    const writeObjects = Effect.tryPromise({
      try: () => writer.flush(),
      catch: (error) => new SnapshotUnavailable({ detail: `cannot write to the store: ${error instanceof Error ? error.message : String(error)}` })
    })

    /** Every few thousand loose objects (a few hundred steps), pack them in the background. */
    let packedAt = 0
    const packLoose = Effect.suspend(() => {
      if (closing || writer.files - packedAt < PACK_EVERY) return Effect.void
      packedAt = writer.files
      return packLock.withPermits(1)(git(["repack", "-d", "-q"]).pipe(Effect.uninterruptible, Effect.ignore)).pipe(
        Effect.forkIn(scope),
        Effect.asVoid
      )
    })

    /** `--replace`: a file may take the place of a directory (or the other way round). */
    const updateIndex = (files: ReadonlyArray<string>) =>
      git(["update-index", "--add", "--remove", "--replace", "-z", "--stdin"], { input: files.join("\0") + "\0" })

    /** Writes the changed paths into our index (the stat cache), one batch at a time. */
    const flushIndex = indexLock.withPermits(1)(
      Effect.suspend(() => {
        const batch = [...pendingIndex]
        pendingIndex.clear()
        if (batch.length === 0) return Effect.void
        for (const file of batch) indexing.add(file)
        // Uninterruptible: a git killed mid-write would leave a lock that blocks every later update.
        return updateIndex(batch).pipe(
          Effect.uninterruptible,
          Effect.tap(() =>
            Effect.sync(() => {
              for (const file of batch) {
                recheck.add(file)
                hashed.delete(file)
                stuck.delete(file)
              }
            })
          ),
          Effect.ensuring(Effect.sync(() => batch.forEach((file) => indexing.delete(file)))),
          // Correct either way: paths git did not take stay scan candidates of our own.
          Effect.catchAll((error) =>
            Effect.zipRight(
              Effect.sync(() => batch.forEach((file) => stuck.add(file))),
              Effect.logWarning(`snapshot stat cache not updated: ${error.message}`)
            )
          ),
          Effect.asVoid
        )
      })
    )

    /**
     * The stat cache is brought up to date in the background, at most every second (or at once past
     * FLUSH_BATCH paths): until then a scan lists those files again and `hashed` answers for them.
     */
    let flushing = false
    /** Set when the layer closes: the finalizer writes what is left, nothing starts after it. */
    let closing = false
    const waiting = () => pendingIndex.size > 0 || writer.pending.count > 0
    const scheduleFlush = Effect.suspend(() => {
      if (flushing || closing || !waiting()) return Effect.void
      flushing = true
      const loop: Effect.Effect<void, SnapshotUnavailable> = Effect.suspend(() =>
        waiting() ? Effect.zipRight(Effect.zipRight(flushObjects, flushIndex), loop) : Effect.void
      )
      const urgent = pendingIndex.size >= FLUSH_BATCH || writer.pending.bytes >= FLUSH_BYTES
      const wait = urgent ? Effect.void : Effect.sleep(FLUSH_DELAY)
      return Effect.zipRight(wait, loop).pipe(
        Effect.ensuring(Effect.sync(() => (flushing = false))),
        Effect.catchAllCause((cause) => Effect.logError("snapshot stat cache update failed", cause)),
        Effect.forkIn(scope),
        Effect.asVoid
      )
    })

    const commit = (delta: ReadonlyMap<string, Tree.FileEntry | undefined>) =>
      Effect.gen(function*() {
        if (delta.size === 0) return
        current = Tree.apply(current, delta)
        for (const file of delta.keys()) pendingIndex.add(file)
        yield* scheduleFlush
      })

    /** Lists changed and new files (relative to our index); "over" when there are too many to track. */
    const listChanged = Effect.gen(function*() {
      let count = 0
      let over = false
      const output = yield* git(["ls-files", "-z", "-m", "-o", "--exclude-standard"], {
        onStdout: (chunk) => {
          for (let index = chunk.indexOf(0); index >= 0; index = chunk.indexOf(0, index + 1)) count++
          if (count > maxFiles) over = true
          return !over
        }
      })
      if (over) return "over" as const
      return Git.splitZ(output).filter((file) => !file.endsWith("/"))
    })

    const tooMany = (count: number) =>
      `the project has more than ${maxFiles} files that are not ignored (${count} or more; limit snapshot_store.max_files). ` +
      `Undo and session diffs are off for it: ignore large directories in .gitignore or raise the limit.`

    /**
     * Files changed in the same second as the index was written are "racily clean" to git: every
     * later `ls-files` and index write re-reads them. After a bulk update (a project just cloned or
     * generated, a big install) the whole index can be racy, so it is refreshed once things settle.
     */
    let refreshing = false
    const refreshLater = Effect.suspend(() => {
      if (refreshing || closing) return Effect.void
      refreshing = true
      return Effect.sleep(RACY_SETTLE).pipe(
        Effect.zipRight(indexLock.withPermits(1)(git(["update-index", "-q", "--refresh"]).pipe(Effect.uninterruptible, Effect.ignore))),
        // Git wrote one loose object per file: pack them (a fraction of the space, one file).
        Effect.zipRight(packLock.withPermits(1)(git(["repack", "-d", "-q"]).pipe(Effect.uninterruptible, Effect.ignore))),
        Effect.ensuring(Effect.sync(() => (refreshing = false))),
        Effect.forkIn(scope),
        Effect.asVoid
      )
    })

    /** Hashes many files with git in one go, then reads the whole index back. */
    const bulkRefresh = (files: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        yield* flushIndex
        const batch = files.filter((file) => {
          if (isGitPath(file)) return false
          try {
            const stat = fs.lstatSync(path.join(root, file))
            if (stat.isSymbolicLink()) return true
            if (stat.isFile()) return stat.size <= maxFileSize
            return Tree.lookup(current, file) !== undefined // was a file: --remove drops it
          } catch {
            return Tree.lookup(current, file) !== undefined
          }
        })
        if (batch.length > 0) {
          yield* indexLock.withPermits(1)(updateIndex(batch).pipe(Effect.uninterruptible))
          yield* refreshLater
        }
        const next = yield* loadIndex
        recheck.clear()
        const delta = new Map<string, Tree.FileEntry | undefined>()
        for (const change of Tree.diff(current, next, writer)) delta.set(change.file, change.after)
        current = next
        return delta
      })

    /** Brings `current` up to date with the whole project (every file stated). False when tracking had to stop. */
    const fullScan = Effect.gen(function*() {
      const listed = yield* listChanged
      if (listed === "over") {
        yield* refuse(tooMany(maxFiles + 1))
        return false
      }
      const candidates = new Set([...listed, ...recheck, ...pendingIndex, ...indexing, ...stuck])
      recheck.clear()
      // Files we already hashed and git has not recorded yet cost a stat: only new ones count here.
      const unknown = listed.reduce((count, file) => (pendingIndex.has(file) || indexing.has(file) || hashed.has(file) ? count : count + 1), 0)
      if (unknown > BULK_THRESHOLD) {
        yield* bulkRefresh([...candidates])
      } else {
        yield* commit(refresh(candidates))
      }
      if (current.count > maxFiles) {
        yield* refuse(tooMany(current.count))
        return false
      }
      return true
    })

    // --- watched scans -----------------------------------------------------------------------

    const stopWatching = (reason: string) =>
      Effect.suspend(() => {
        watching = false
        watch?.close()
        watch = undefined
        return Effect.logDebug(`snapshots of ${root} scan the whole project after each step: ${reason}`)
      })

    /** Which of these paths git ignores (the project's ignore files and our defaults). */
    const ignoredAmong = (files: ReadonlyArray<string>) =>
      files.length === 0
        ? Effect.succeed(new Set<string>())
        : git(["check-ignore", "-z", "--stdin", "--no-index"], { input: files.join("\0") + "\0" }).pipe(
          Effect.map((output) => new Set(Git.splitZ(output))),
          // exit code 1: none of them is ignored
          Effect.catchIf((error) => error.code === 1, () => Effect.succeed(new Set<string>()))
        )

    /**
     * Watches `dirs` and the directories below them that git does not ignore (not nested
     * repositories), level by level; the files found there go to `found`. False when a watch
     * could not be added.
     */
    const watchTrees = (active: Watch.ProjectWatch, dirs: ReadonlyArray<string>, found?: Set<string>) =>
      Effect.gen(function*() {
        let level = dirs.filter((dir) => !isGitPath(dir))
        while (level.length > 0) {
          const ignored = yield* ignoredAmong(level.filter((dir) => dir !== ""))
          const next: Array<string> = []
          for (const dir of level) {
            if (ignored.has(dir)) continue
            // Watched before it is read: whatever changes after the listing is reported.
            if (!active.add(dir)) return false
            let entries: Array<fs.Dirent>
            try {
              entries = fs.readdirSync(dir === "" ? root : path.join(root, dir), { withFileTypes: true })
            } catch {
              continue
            }
            if (dir !== "" && entries.some((entry) => entry.name.toLowerCase() === ".git")) {
              active.removeUnder(dir) // a nested repository: not ours
              continue
            }
            for (const entry of entries) {
              const child = dir === "" ? entry.name : `${dir}/${entry.name}`
              if (entry.isDirectory()) {
                if (entry.name.toLowerCase() !== ".git") next.push(child)
              } else if (found && (entry.isFile() || entry.isSymbolicLink())) found.add(child)
            }
          }
          level = next
        }
        return true
      })

    /** Sets up the watches over the whole project (before a full scan, which then sees everything). */
    const syncWatches = Effect.gen(function*() {
      if (!watching) return
      watch ??= new Watch.ProjectWatch(root, path.join(gitDir, `watch-${process.pid}`), Watch.defaultLimits())
      watch.reset()
      const ok = yield* watchTrees(watch, [""]).pipe(Effect.orElseSucceed(() => false))
      if (!ok) yield* stopWatching(`more than ${watch.size} directories to watch, or the system refused a watch`)
    })

    /** Waits until the watches have seen every change made so far; what they saw, or undefined. */
    const settleWatches = Effect.suspend(() => {
      const active = watch
      if (!watching || !active) return Effect.succeed(undefined)
      return Effect.promise(() => active.barrier(BARRIER_TIMEOUT_MS)).pipe(
        Effect.map((delivered) => {
          const taken = active.take()
          return delivered ? taken : { ...taken, full: "the watches did not answer in time" }
        })
      )
    })

    /** Brings `current` up to date from what the watches saw. Undefined when a full scan is needed. */
    const watchedScan = (active: Watch.ProjectWatch, taken: Watch.Taken) =>
      Effect.gen(function*() {
        if (taken.full !== undefined || taken.dirty.size > BULK_THRESHOLD) return undefined
        const candidates = new Set<string>()
        for (const file of taken.dirty) if (!isGitPath(file)) candidates.add(file)
        // Directories that appeared, went or were replaced: their old files are looked at, the new
        // ones are watched and read.
        const fresh: Array<string> = []
        for (const dir of [...taken.renamed].sort()) {
          if (isGitPath(dir)) continue
          let stat: fs.Stats | undefined
          try {
            stat = fs.lstatSync(path.join(root, dir))
          } catch {
            stat = undefined
          }
          const isDir = stat?.isDirectory() === true
          if (!isDir && !active.has(dir)) continue
          if (isDir && active.same(dir, stat!)) continue
          active.removeUnder(dir)
          const before = Tree.find(current, dir)
          if (before?.type === "dir") for (const [file] of Tree.files(before, dir)) candidates.add(file)
          if (isDir && !fresh.some((parent) => dir.startsWith(`${parent}/`))) fresh.push(dir)
        }
        if (fresh.length > 0 && !(yield* watchTrees(active, fresh, candidates))) return undefined
        // Files new to us count only when git does not ignore them.
        const newFiles = [...candidates].filter((file) => {
          if (Tree.lookup(current, file)) return false
          try {
            const stat = fs.lstatSync(path.join(root, file))
            return stat.isFile() || stat.isSymbolicLink()
          } catch {
            return false
          }
        })
        for (const file of yield* ignoredAmong(newFiles)) candidates.delete(file)
        yield* commit(refresh(candidates))
        if (current.count > maxFiles) {
          yield* refuse(tooMany(current.count))
          return false
        }
        return true
      })

    /**
     * Sets the watches up (again) and then states every file, in the background, so the step that
     * asked for a full scan does not wait for it; the next scan waits for the lock and then looks
     * only at what the watches saw.
     */
    let arming = false
    const armWatches = Effect.suspend(() => {
      if (!watching || arming || closing) return Effect.void
      arming = true
      return lock.withPermits(1)(
        Effect.suspend(() => (disabled ? Effect.void : syncWatches)).pipe(
          Effect.zipRight(Effect.suspend(() => (watching && !disabled ? fullScan : Effect.void)))
        )
      ).pipe(
        Effect.tapErrorCause(() => Effect.sync(() => watch?.invalidate("setting up the watches failed"))),
        Effect.ensuring(Effect.sync(() => (arming = false))),
        Effect.catchAllCause(warnBackgroundFailure("setting up the snapshot watches failed")),
        Effect.forkIn(scope),
        Effect.asVoid
      )
    })

    /** Brings `current` up to date with the project. False when tracking had to stop. */
    const scan = Effect.gen(function*() {
      const active = watch
      if (active && !arming) {
        const taken = yield* settleWatches
        if (taken) {
          const done = yield* watchedScan(active, taken).pipe(
            Effect.catchAll((error) => Effect.as(Effect.logDebug(`watched snapshot scan failed, scanning everything: ${error.message}`), undefined))
          )
          if (done !== undefined) return done
        }
      }
      const done = yield* fullScan
      if (done) yield* armWatches
      return done
    })

    const guarded = <A>(label: string, effect: Effect.Effect<A | undefined, Git.GitFailure | SnapshotUnavailable>) =>
      effect.pipe(
        Effect.catchAllCause((cause) =>
          Effect.as(Effect.logWarning(`snapshot ${label} failed; this step has no snapshot`, cause), undefined)
        )
      )

    const track = Effect.fn("Snapshot.track")(function*() {
      return yield* guarded(
        "track",
        lock.withPermits(1)(Effect.gen(function*() {
          if (!(yield* open)) return undefined
          if (!(yield* scan)) return undefined
          const id = remember(current)
          yield* flushObjects
          return id
        }))
      )
    })

    const steps = (): StepRecorder => {
      let scanned = false
      let forceScan = false
      // `current` moved during a step that only refreshed its own files (a background scan, another
      // session): it may hold a file as it was for a moment (a write's temp file), so the next step scans.
      let rescan = false
      return {
        begin: () =>
          guarded(
            "step start",
            lock.withPermits(1)(Effect.gen(function*() {
              if (disabled || !(yield* open)) return undefined
              // The first step of a run scans (the user may have edited files since the last run).
              if (!scanned || rescan) {
                if (!(yield* scan)) return undefined
                scanned = true
                rescan = false
              }
              const start = current
              const id = remember(start)
              yield* scheduleFlush
              hold(id)
              return { id, root: start }
            }))
          ),
        finish: (start, touch) =>
          Effect.ensuring(guarded(
            "step finish",
            lock.withPermits(1)(Effect.gen(function*() {
              if (!start || disabled) return undefined
              const effective: StepTouch = forceScan ? { kind: "unknown" } : touch
              forceScan = false
              let end: Tree.Dir
              if (effective.kind === "none") {
                end = start.root
              } else if (effective.kind === "paths") {
                const files = effective.paths.flatMap((file) => {
                  const rel = relative(file)
                  return rel ? [rel] : []
                })
                const delta = refresh(files)
                const unchangedSince = current === start.root
                if (!unchangedSince) rescan = true
                yield* commit(delta)
                // Only this step's own files, as they are now: changes other sessions made meanwhile
                // stay theirs, and a background scan that already recorded one of these files (so it
                // is not in `delta`) must not hide it from this step's patch.
                const own = new Map(files.map((file) => [file, Tree.lookup(current, file)] as const))
                end = unchangedSince ? current : Tree.apply(start.root, own)
              } else {
                if (!(yield* scan)) return undefined
                end = current
              }
              const snapshot = remember(end)
              yield* scheduleFlush
              const changed = Tree.diff(start.root, end, writer)
              if (changed.length === 0) return { snapshot }
              return { snapshot, patch: { hash: start.id, files: changed.map((change) => path.join(root, change.file)) } }
            }))
          ), Effect.sync(() => release(start))),
        failed: (start) => {
          forceScan = true
          release(start)
        }
      }
    }

    // --- reading back ------------------------------------------------------------------------

    const treeOf = (id: string) =>
      Effect.gen(function*() {
        const cached = roots.get(id)
        if (cached) return cached
        yield* openToLook
        yield* flushObjects
        const output = yield* git(["ls-tree", "-r", "-z", "--full-tree", id]).pipe(
          Effect.mapError(() => new SnapshotMissing({ id }))
        )
        const entries: Array<readonly [string, Tree.FileEntry]> = []
        for (const line of Git.splitZ(output)) {
          // "<mode> <type> <id>\t<path>"
          const tab = line.indexOf("\t")
          const [mode, , object] = line.slice(0, tab).split(" ")
          entries.push([line.slice(tab + 1), { type: "file", mode: mode as Tree.FileMode, id: object! }])
        }
        const dir = Tree.build(entries).withId(id)
        roots.set(id, dir)
        if (roots.size > ROOT_CACHE) roots.delete(roots.keys().next().value!)
        return dir
      })

    const changes = Effect.fn("Snapshot.changes")(function*(from: string, to: string) {
      const [a, b] = [yield* treeOf(from), yield* treeOf(to)]
      return Tree.diff(a, b, writer)
    })

    const entries = Effect.fn("Snapshot.entries")(function*(snapshot: string, files: ReadonlyArray<string>) {
      const tree = yield* treeOf(snapshot)
      return new Map(files.map((file) => [file, Tree.lookup(tree, file)] as const))
    })

    const read = Effect.fn("Snapshot.read")(function*(ids: ReadonlyArray<string>) {
      yield* openToLook
      yield* flushObjects
      const objects = yield* Git.readObjects(git, ids).pipe(Effect.orElseSucceed(() => new Map<string, Buffer>()))
      for (const id of ids) if (!objects.has(id)) return yield* new SnapshotMissing({ id })
      return objects
    })

    // --- restoring ---------------------------------------------------------------------------

    /** Removes directories left empty by a removal, up to the project root. */
    const pruneEmptyDirs = (file: string) => {
      let dir = path.dirname(path.join(root, file))
      while (dir !== root && dir.startsWith(root + path.sep)) {
        try {
          fs.rmdirSync(dir)
        } catch {
          return
        }
        dir = path.dirname(dir)
      }
    }

    const writeFile = (file: string, entry: Tree.FileEntry, content: Buffer) => {
      const absolute = path.join(root, file)
      fs.mkdirSync(path.dirname(absolute), { recursive: true })
      if (entry.mode === "120000") {
        fs.rmSync(absolute, { force: true })
        fs.symlinkSync(content.toString("utf8"), absolute)
        return
      }
      const temp = path.join(path.dirname(absolute), `.${path.basename(absolute)}.agent-restore-${process.pid}`)
      fs.writeFileSync(temp, content, { mode: entry.mode === "100755" ? 0o755 : 0o644 })
      fs.chmodSync(temp, entry.mode === "100755" ? 0o755 : 0o644)
      fs.renameSync(temp, absolute)
    }

    /** A path where a file cannot be put: a directory sits there or on the way. */
    const blocked = (file: string): boolean => {
      const segments = file.split("/")
      for (let index = 1; index <= segments.length; index++) {
        const partial = path.join(root, ...segments.slice(0, index))
        try {
          const stat = fs.lstatSync(partial)
          if (index < segments.length && !stat.isDirectory()) return true
          if (index === segments.length && stat.isDirectory()) return true
        } catch {
          return false
        }
      }
      return false
    }

    const restore = Effect.fn("Snapshot.restore")(function*(files: ReadonlyArray<RestoreFile>) {
      return yield* lock.withPermits(1)(Effect.gen(function*() {
        yield* openForRead
        const list = files.filter((file) => !isGitPath(file.file))
        // The files as they are now: the "before" snapshot, and what conflicts are checked against.
        yield* commit(refresh(list.map((file) => file.file)))
        const before = remember(current)
        const conflicts: Array<string> = []
        const todo: Array<RestoreFile> = []
        for (const file of list) {
          const now = Tree.lookup(current, file.file)
          if (!Tree.sameFile(now, file.expected)) conflicts.push(file.file)
          else if (!Tree.sameFile(now, file.target)) todo.push(file)
        }
        const ids = todo.flatMap((file) => (file.target && file.target.mode !== "160000" ? [file.target.id] : []))
        const contents = yield* read(ids)
        const restored: Array<string> = []
        for (const file of todo) {
          if (file.target?.mode === "160000") continue // a nested repository: not ours to change
          if (file.target && blocked(file.file)) {
            conflicts.push(file.file)
            continue
          }
          if (file.target) writeFile(file.file, file.target, contents.get(file.target.id)!)
          else {
            fs.rmSync(path.join(root, file.file), { force: true })
            pruneEmptyDirs(file.file)
          }
          restored.push(file.file)
        }
        yield* commit(refresh(restored))
        const after = remember(current)
        return { before, after, restored: list.filter((file) => !conflicts.includes(file.file)).map((file) => file.file), conflicts }
      }))
    })

    // --- garbage collection ------------------------------------------------------------------

    const liveSnapshots = Effect.gen(function*() {
      const since = Date.now() - retentionMs
      const parts = yield* dbWrite(sql<{ id: string | null }>`
        SELECT DISTINCT COALESCE(json_extract(p.data, '$.snapshot'), json_extract(p.data, '$.hash')) AS id
        FROM part p JOIN session s ON s.id = p.session_id
        WHERE s.project_id = ${instance.projectID} AND s.time_updated >= ${since}
          AND p.type IN ('step-start', 'step-finish', 'snapshot', 'patch')`)
      const reverts = yield* dbWrite(sql<{ snapshot: string | null; applied: string | null }>`
        SELECT json_extract(revert, '$.snapshot') AS snapshot, json_extract(revert, '$.applied') AS applied
        FROM session WHERE project_id = ${instance.projectID} AND revert IS NOT NULL AND time_updated >= ${since}`)
      const ids = new Set<string>()
      for (const row of parts) if (row.id) ids.add(row.id)
      for (const row of reverts) {
        if (row.snapshot) ids.add(row.snapshot)
        if (row.applied) ids.add(row.applied)
      }
      return ids
    })

    const gc = Effect.fn("Snapshot.gc")(function*(options: GcOptions = {}) {
      return yield* lock.withPermits(1)(Effect.gen(function*() {
        if (!fs.existsSync(path.join(gitDir, "HEAD"))) return { kept: 0, bytesBefore: 0, bytesAfter: 0 }
        yield* openForRead
        yield* flushObjects
        yield* flushIndex
        const bytesBefore = dirSize(gitDir)
        const live = yield* liveSnapshots
        // What this process holds, and every other process's stat cache (their files now).
        live.add(current.id(writer))
        for (const id of inFlight.keys()) live.add(id)
        const others: Array<Array<readonly [string, Tree.FileEntry]>> = []
        for (const name of fs.readdirSync(gitDir)) {
          // The barrier directory of a process that is gone (see snapshot/Watch.ts).
          const watchDir = /^watch-(\d+)$/.exec(name)
          if (watchDir && !isAlive(Number(watchDir[1]))) fs.rmSync(path.join(gitDir, name), { recursive: true, force: true })
          const match = /^index(?:-(\d+))?$/.exec(name)
          if (!match || path.join(gitDir, name) === ownIndex) continue
          const pid = match[1] ? Number(match[1]) : undefined
          if (pid !== undefined && !isAlive(pid)) {
            fs.rmSync(path.join(gitDir, name), { force: true })
            continue
          }
          others.push(
            yield* git(["ls-files", "-s", "-z"], { indexFile: path.join(gitDir, name) }).pipe(
              Effect.map(parseStage),
              Effect.orElseSucceed(() => [])
            )
          )
        }
        // Only objects the store still has can be kept (git refuses refs to missing objects).
        const wanted = [...live, ...others.flatMap((entries) => entries.map(([, entry]) => entry.id))]
        const check = yield* git(["cat-file", "--batch-check"], { input: [...new Set(wanted)].join("\n") + "\n" })
        const present = new Set(
          check.toString("utf8").split("\n").filter((line) => / (tree|blob|commit) \d+$/.test(line)).map((line) => line.split(" ")[0]!)
        )
        const keep = [...live].filter((id) => present.has(id))
        // Other processes' stat caches: the files as they are now, kept as one tree each.
        for (const entries of others) {
          keep.push(Tree.build(entries.filter(([, entry]) => entry.mode === "160000" || present.has(entry.id))).id(writer))
        }
        yield* flushObjects // the trees just built for other processes' stat caches
        const refs = [...new Set(keep)].sort().map((id) => `${id} refs/snapshots/${id}`)
        yield* storeIO(`cannot write ${gitDir}/packed-refs`, () =>
          writeAtomic(
            disk,
            path.join(gitDir, "packed-refs"),
            `# pack-refs with: peeled fully-peeled sorted \n${refs.join("\n")}${refs.length ? "\n" : ""}`,
            { syncDir: true }
          ))
        const graceSeconds = Math.floor(Duration.toMillis(Duration.decode(options.grace ?? DEFAULT_GC_GRACE)) / 1000)
        yield* packLock.withPermits(1)(
          Effect.zipRight(
            git(["repack", "-A", "-d", "-q"]),
            git(["prune", `--expire=${graceSeconds <= 0 ? "now" : `${graceSeconds}.seconds.ago`}`])
          )
        )
        // Cached trees and the record of written objects may name what was just removed.
        writer.reset()
        roots.clear()
        hashed.clear()
        yield* storeIO(`cannot write ${gitDir}/gc-stamp`, () => writeAtomic(disk, path.join(gitDir, "gc-stamp"), String(Date.now())))
        return { kept: keep.length, bytesBefore, bytesAfter: dirSize(gitDir) }
      }).pipe(
        Effect.catchAll((error) =>
          Effect.as(Effect.logWarning(`snapshot garbage collection failed: ${error.message}`), { kept: 0, bytesBefore: 0, bytesAfter: 0 })
        )
      ))
    })

    const backgroundGc = gc().pipe(
      Effect.asVoid,
      Effect.catchAllCause(warnBackgroundFailure("snapshot garbage collection failed"))
    )

    // Collect after sessions are deleted (batched), and once a day.
    let gcTimer: Fiber.RuntimeFiber<void> | undefined
    const deletions = yield* bus.subscribe({ types: ["session.deleted"] })
    yield* deletions.pipe(
      Stream.runForEach(() =>
        Effect.suspend(() => {
          if (gcTimer || !fs.existsSync(path.join(gitDir, "HEAD"))) return Effect.void
          return Effect.sleep(GC_AFTER_DELETE).pipe(
            Effect.zipRight(backgroundGc),
            Effect.ensuring(Effect.sync(() => (gcTimer = undefined))),
            Effect.forkIn(scope),
            Effect.tap((fiber) => Effect.sync(() => (gcTimer = fiber))),
            Effect.asVoid
          )
        })
      ),
      Effect.catchAllCause((cause) => Effect.logError("snapshot deletion watcher stopped", cause)),
      Effect.forkScoped
    )
    const stampFile = path.join(gitDir, "gc-stamp")
    const stamp = Option.liftThrowable(() => Number(fs.readFileSync(stampFile, "utf8")))()
    if (Option.isSome(stamp) && Date.now() - stamp.value > GC_INTERVAL_MS) yield* Effect.forkIn(backgroundGc, scope)

    // Leave our stat cache as the seed for the next process.
    // A failed write keeps its objects queued: try a few times, then give up with a warning.
    const flushAllObjects = flushObjects.pipe(
      Effect.retry({ times: 3 }),
      Effect.catchAll((error) => Effect.logWarning(`snapshot objects not written: ${error.message}`))
    )
    yield* Effect.addFinalizer(() =>
      Effect.zipRight(Effect.sync(() => {
        closing = true
        watch?.close()
      }), Effect.zipRight(flushAllObjects, flushIndex)).pipe(
        Effect.zipRight(Effect.sync(() => {
          if (fs.existsSync(ownIndex)) fs.renameSync(ownIndex, path.join(gitDir, "index"))
        })),
        Effect.catchAllCause(() => Effect.void)
      )
    )

    const status = Effect.fn("Snapshot.status")(function*() {
      if (!disabled && !checked) {
        const refused = refusal()
        if (refused) return { enabled: false, reason: refused, directory: root, store: gitDir }
      }
      return disabled
        ? { enabled: false, reason: disabled, directory: root, store: gitDir }
        : { enabled: true, directory: root, store: gitDir }
    })

    return { status, track, steps, changes, entries, read, restore, gc, root } satisfies SnapshotShape
  })
}
