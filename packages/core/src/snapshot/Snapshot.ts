import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { ConfigService } from "../config/ConfigService.js"
import { Bus } from "../runtime/Bus.js"
import { Instance } from "../runtime/Instance.js"
import { storageName, withBusyRetry } from "../store/Database.js"
import { gc, scheduleGc } from "./Gc.js"
import * as Git from "./Git.js"
import { changes, entries, read, restore } from "./Restore.js"
import { type SnapshotDeps, SnapshotState } from "./SnapshotState.js"
import type { SnapshotShape } from "./SnapshotTypes.js"
import { flushIndex, flushObjects } from "./StatCache.js"
import { steps, track } from "./Steps.js"
import { status } from "./StoreAccess.js"
import { StoreDisk } from "./StoreFile.js"
import * as Tree from "./Tree.js"
import * as Watch from "./Watch.js"

export * from "./SnapshotTypes.js"

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
 *
 * This file holds the service and its layer; the work is in StoreAccess.ts (opening the store),
 * StatCache.ts (hashing, the stat cache), Scan.ts (full and watched scans), Steps.ts (tracking
 * steps), Restore.ts (reading back, restoring) and Gc.ts (collection), which share one
 * SnapshotDeps value (SnapshotState.ts) that this layer creates.
 */

const DEFAULT_MAX_FILES = 25_000
const DEFAULT_MAX_FILE_SIZE = 2 * 1024 * 1024
const DEFAULT_RETENTION_DAYS = 7

export class Snapshot extends Context.Tag("@agent/core/Snapshot")<Snapshot, SnapshotShape>() {
  static readonly layer: Layer.Layer<Snapshot, never, Instance | ConfigService | SqlClient.SqlClient | Bus> = Layer
    .scoped(Snapshot, make())
}

/** The layer's dependencies, settings and (fresh) state. */
const makeDeps = Effect.gen(function*() {
  const instance = yield* Instance
  const config = yield* (yield* ConfigService).get()
  const root = instance.worktree
  const gitDir = path.join(instance.paths.data, "snapshot", instance.projectID)
  const ownIndex = path.join(gitDir, `index-${process.pid}`)
  const context: Git.GitContext = {
    gitDir,
    workTree: root,
    indexFile: ownIndex,
    home: instance.env.HOME ?? instance.home,
    xdgConfigHome: instance.env.XDG_CONFIG_HOME
  }
  const disk = yield* StoreDisk
  const deps: SnapshotDeps = {
    root,
    gitDir,
    ownIndex,
    home: instance.home,
    dataDir: instance.paths.data,
    projectID: instance.projectID,
    maxFiles: config.snapshot_store?.max_files ?? DEFAULT_MAX_FILES,
    maxFileSize: config.snapshot_store?.max_file_size ?? DEFAULT_MAX_FILE_SIZE,
    retentionMs: (config.snapshot_store?.retention_days ?? DEFAULT_RETENTION_DAYS) * 24 * 60 * 60 * 1000,
    disk,
    writer: new Tree.ObjectWriter(path.join(gitDir, "objects"), disk),
    git: yield* Git.shellRunner(context, gitDir),
    bus: yield* Bus,
    sql: yield* SqlClient.SqlClient,
    dbWrite: withBusyRetry(yield* storageName),
    scope: yield* Effect.scope,
    lock: yield* Effect.makeSemaphore(1),
    loadLock: yield* Effect.makeSemaphore(1),
    indexLock: yield* Effect.makeSemaphore(1),
    packLock: yield* Effect.makeSemaphore(1),
    state: new SnapshotState(
      config.snapshot === false ? "snapshots are turned off in the config (snapshot: false)" : undefined,
      config.snapshot_store?.watch !== false && Watch.supported()
    )
  }
  return deps
})

function make() {
  return Effect.gen(function*() {
    const deps = yield* makeDeps
    const { state, gitDir, ownIndex } = deps
    yield* scheduleGc(deps)

    // Leave our stat cache as the seed for the next process.
    // A failed write keeps its objects queued: try a few times, then give up with a warning.
    const flushAllObjects = flushObjects(deps).pipe(
      Effect.retry({ times: 3 }),
      Effect.catchAll((error) => Effect.logWarning(`snapshot objects not written: ${error.message}`))
    )
    yield* Effect.addFinalizer(() =>
      Effect.zipRight(Effect.sync(() => {
        state.closing = true
        state.watch?.close()
      }), Effect.zipRight(flushAllObjects, flushIndex(deps))).pipe(
        Effect.zipRight(Effect.sync(() => {
          if (fs.existsSync(ownIndex)) fs.renameSync(ownIndex, path.join(gitDir, "index"))
        })),
        Effect.catchAllCause(() => Effect.void)
      )
    )

    return {
      status: () => status(deps),
      track: () => track(deps),
      steps: () => steps(deps),
      changes: (from, to) => changes(deps, from, to),
      entries: (snapshot, files) => entries(deps, snapshot, files),
      read: (ids) => read(deps, ids),
      restore: (files) => restore(deps, files),
      gc: (options) => gc(deps, options),
      root: deps.root
    } satisfies SnapshotShape
  })
}
