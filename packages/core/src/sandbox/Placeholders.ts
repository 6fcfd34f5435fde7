/**
 * Placeholders: an empty directory made where an absent config file would be (agent.json, .agent/,
 * ...), bound read-only in a sandbox so a command cannot create it. Several sandboxes, of several
 * agent processes in one project, may rely on one placeholder, and removing it while one still does
 * detaches that sandbox's mount (the name is then unprotected there) or makes a sandbox about to
 * start fail ("Can't find source path"). So they are counted across processes (docs/sandbox.md,
 * "Placeholders"): each sandbox that relies on placeholders has a manifest naming them in a per-user
 * registry directory, bubblewrap holds a lock on that manifest (`--lock-file`) for exactly the
 * sandbox's life, and a placeholder is removed only when no live manifest names it. Making and
 * removing run under one lock shared by the processes (RegistryLock.ts).
 */
import { Option, Schema } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type Mount, PROTECTED_CONFIG } from "./Layout.js"
import { inodeKey, lockedInodes, pause, running, self, withLock } from "./RegistryLock.js"

/** A manifest this young counts as live: its sandbox may not have taken its lock yet (bubblewrap's start). */
const GRACE_MS = 2_000
/** An unreadable manifest (another version's, a torn write) is dropped once this old. */
const UNREADABLE_MAX_AGE_MS = 60 * 60 * 1000
/** How long a release waits for the lock of a sandbox that has ended (its init closes its fds one by one). */
const ENDED_LOCK_WAIT_MS = 200

const Manifest = Schema.Struct({
  /** The process that wrote it and its start time (a recycled pid does not count). */
  pid: Schema.Number,
  start: Schema.String,
  created: Schema.Number,
  /** Its writer let go while the sandbox still ran (background jobs): live only while its lock is held. */
  released: Schema.optional(Schema.Boolean),
  paths: Schema.Array(Schema.String)
})
type Manifest = typeof Manifest.Type
const decodeManifest = Schema.decodeUnknownOption(Schema.parseJson(Manifest))

/** What is at a placeholder's path now. */
export type PathState = "missing" | "empty-directory" | "other"

/** What to do with a protected path when a sandbox starts. */
export type HoldDecision = "make" | "share" | "present" | "leave-out"

/**
 * A protected path when a sandbox starts, given what is there, whether a live sandbox holds it as a
 * placeholder (`named`), and whether it is a config name a placeholder may hold (`holdable`).
 */
export const holdDecision = (state: PathState, named: boolean, holdable: boolean): HoldDecision =>
  state === "missing"
    ? holdable ? "make" : "leave-out" // a read-only path that vanished: bubblewrap would not start
    : state === "empty-directory" && named
    ? "share"
    : "present"

export const pathState = (file: string): PathState => {
  try {
    const stat = fs.lstatSync(file)
    if (!stat.isDirectory()) return "other"
    return fs.readdirSync(file).length === 0 ? "empty-directory" : "other"
  } catch {
    return "missing"
  }
}

const holdable = (file: string) => (PROTECTED_CONFIG as ReadonlyArray<string>).includes(path.basename(file))

/** `file` is an empty directory under a config name: what a placeholder looks like (a sandbox may hold it). */
export const standsIn = (file: string): boolean => holdable(file) && pathState(file) === "empty-directory"

const tryRemoveDir = (dir: string) => {
  try {
    fs.rmdirSync(dir)
  } catch {
    // In use, not empty, or gone: leave it.
  }
}

/** The placeholders one sandbox relies on, and its mounts with them in. */
export interface Holding {
  readonly mounts: Array<Mount>
  /** The manifest naming them (bubblewrap's `--lock-file`); absent when it holds none. */
  readonly manifest?: string
  readonly paths: ReadonlyArray<string>
}

interface Scan {
  /** Paths named by live manifests. */
  readonly named: Set<string>
  /** Paths of manifests found stale (and removed): placeholders no one may rely on any more. */
  readonly orphaned: Array<string>
}

export class Placeholders {
  /** This registry's manifests whose sandbox has not been released. */
  private readonly own = new Map<string, Holding>()
  /** Placeholders this registry's sandboxes hold, counted: what a kept sandbox is matched on. */
  private readonly held = new Map<string, number>()
  private readonly me = self()
  private counter = 0

  constructor(readonly dir: string) {}

  /**
   * The registry directory every agent process of this user shares: `<tmpdir>/agent-placeholders-<uid>`,
   * private to the user. When it cannot be used (another user's, a symlink) a private one is made, and
   * placeholders are then counted in this process only.
   */
  static directory(): string {
    const shared = path.join(os.tmpdir(), `agent-placeholders-${process.getuid?.() ?? "user"}`)
    try {
      fs.mkdirSync(shared, { mode: 0o700 })
    } catch {
      // Exists: checked below.
    }
    try {
      const stat = fs.lstatSync(shared)
      if (stat.isDirectory() && stat.uid === process.getuid?.() && (stat.mode & 0o077) === 0) return shared
    } catch {
      // Fall through.
    }
    return fs.mkdtempSync(path.join(os.tmpdir(), "agent-placeholders-"))
  }

  /**
   * A runtime that died may have left placeholders: removes those no live sandbox relies on (from
   * stale manifests, and empty directories named like config files, which nothing but the sandbox makes).
   */
  collect(configDirs: ReadonlyArray<string>): void {
    withLock(this.dir, () => {
      const { named, orphaned } = this.scan()
      const suspects = configDirs.flatMap((dir) => PROTECTED_CONFIG.filter((name) => !name.startsWith(".")).map((name) => path.join(dir, name)))
      for (const file of [...orphaned, ...suspects]) {
        if (!named.has(file) && pathState(file) === "empty-directory") tryRemoveDir(file)
      }
    })
  }

  /**
   * The mounts of one sandbox with its placeholders held: an absent config name gets one (made, or
   * shared with a live sandbox that made it), a present path is bound as it is, a read-only path that
   * vanished is left out. Writes the manifest the sandbox is to lock.
   */
  hold(mounts: ReadonlyArray<Mount>): Holding {
    return withLock(this.dir, () => {
      const { named, orphaned } = this.scan()
      for (const file of orphaned) if (!named.has(file) && pathState(file) === "empty-directory") tryRemoveDir(file)
      const paths: Array<string> = []
      const result = mounts.flatMap((mount): Array<Mount> => {
        if (mount.kind === "writable") return [mount]
        let decision = holdDecision(pathState(mount.path), named.has(mount.path), holdable(mount.path))
        if (decision === "make") {
          try {
            fs.mkdirSync(mount.path)
          } catch {
            decision = pathState(mount.path) === "missing" ? "leave-out" : "present"
          }
        }
        if (decision === "leave-out") return []
        if (decision === "present") return [{ path: mount.path, kind: "readonly" }]
        paths.push(mount.path)
        return [{ path: mount.path, kind: "placeholder" }]
      })
      if (paths.length === 0) return { mounts: result, paths }
      const manifest = path.join(this.dir, `${this.me.pid}-${++this.counter}-${crypto.randomBytes(4).toString("hex")}.json`)
      this.write(manifest, { pid: this.me.pid, start: this.me.start, created: Date.now(), paths })
      const holding: Holding = { mounts: result, manifest, paths }
      this.own.set(manifest, holding)
      for (const file of paths) this.held.set(file, (this.held.get(file) ?? 0) + 1)
      return holding
    })
  }

  /**
   * The sandbox of `holding` has ended (`ended`), or its runtime lets go of it: its placeholders are
   * removed unless another live sandbox relies on them. A sandbox still running (background jobs after
   * the runtime's end) keeps its manifest, marked released, until its lock goes.
   */
  release(holding: Holding, ended: boolean): void {
    const manifest = holding.manifest
    if (manifest === undefined || !this.own.has(manifest)) return
    this.own.delete(manifest)
    for (const file of holding.paths) {
      const count = (this.held.get(file) ?? 1) - 1
      if (count > 0) this.held.set(file, count)
      else this.held.delete(file)
    }
    const deadline = Date.now() + (ended ? ENDED_LOCK_WAIT_MS : 0)
    while (this.locked(manifest) && Date.now() < deadline) pause(5)
    withLock(this.dir, () => {
      if (this.locked(manifest)) {
        // Still running: live by its lock alone from now on; whoever scans after it ends removes it.
        this.write(manifest, { pid: this.me.pid, start: this.me.start, created: 0, released: true, paths: [...holding.paths] })
        return
      }
      fs.rmSync(manifest, { force: true })
      const { named, orphaned } = this.scan()
      for (const file of [...holding.paths, ...orphaned]) {
        if (!named.has(file) && pathState(file) === "empty-directory") tryRemoveDir(file)
      }
    })
  }

  /** Lets go of every sandbox of this registry (the layer's end): see `release`. */
  close(): void {
    for (const holding of [...this.own.values()]) this.release(holding, false)
  }

  /** The mounts with the placeholders this registry holds marked as such: what a kept sandbox is matched on. */
  seen(mounts: ReadonlyArray<Mount>): Array<Mount> {
    return mounts.map((mount) => mount.kind === "readonly" && this.held.has(mount.path) ? { path: mount.path, kind: "placeholder" } : mount)
  }

  /** Writes in place: the inode bubblewrap holds its lock on stays the same. */
  private write(file: string, manifest: Manifest) {
    fs.writeFileSync(file, JSON.stringify(manifest))
  }

  private locked(manifest: string): boolean {
    try {
      const key = inodeKey(fs.statSync(manifest, { bigint: true }))
      return lockedInodes()?.has(key) ?? true
    } catch {
      return false
    }
  }

  /** The live manifests' paths; stale manifests are removed and their paths returned. Under the lock. */
  private scan(): Scan {
    const named = new Set<string>()
    const orphaned: Array<string> = []
    let locks: Set<string> | undefined | null = null
    const isLocked = (stat: fs.BigIntStats) => {
      if (locks === null) locks = lockedInodes()
      return locks?.has(inodeKey(stat)) ?? true
    }
    let entries: Array<string>
    try {
      entries = fs.readdirSync(this.dir).filter((name) => name.endsWith(".json"))
    } catch {
      entries = []
    }
    for (const name of entries) {
      const file = path.join(this.dir, name)
      let stat: fs.BigIntStats
      let text: string
      try {
        stat = fs.statSync(file, { bigint: true })
        text = fs.readFileSync(file, "utf8")
      } catch {
        continue
      }
      const manifest = Option.getOrUndefined(decodeManifest(text))
      if (manifest === undefined) {
        if (Date.now() - Number(stat.mtimeMs) > UNREADABLE_MAX_AGE_MS && !isLocked(stat)) fs.rmSync(file, { force: true })
        continue
      }
      const live = this.own.has(file) ||
        (manifest.released !== true && Date.now() - manifest.created < GRACE_MS) ||
        (manifest.released !== true && running(manifest.pid, manifest.start)) ||
        isLocked(stat)
      if (live) manifest.paths.forEach((file) => named.add(file))
      else {
        fs.rmSync(file, { force: true })
        orphaned.push(...manifest.paths)
      }
    }
    return { named, orphaned }
  }
}
