import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { warnBackgroundFailure } from "../runtime/BackgroundFailure.js"
import * as Git from "./Git.js"
import { commit, flushIndex, loadIndex, refresh, refreshLater, updateIndex } from "./StatCache.js"
import { isGitPath, type SnapshotDeps } from "./SnapshotState.js"
import { refuse } from "./StoreAccess.js"
import * as Tree from "./Tree.js"
import * as Watch from "./Watch.js"

// Bringing `current` up to date with the project: a full scan (every file stated with
// `git ls-files` over the stat cache) or, with the project's directories watched, a look at the
// paths that changed.

/** More changed files than this are hashed by git in one batch rather than one by one here. */
const BULK_THRESHOLD = 256
/** How long a step waits for the project's watches to catch up before it scans everything instead. */
const BARRIER_TIMEOUT_MS = 2000

/** Lists changed and new files (relative to our index); "over" when there are too many to track. */
const listChanged = (deps: SnapshotDeps) =>
  Effect.gen(function*() {
    let count = 0
    let over = false
    const output = yield* deps.git(["ls-files", "-z", "-m", "-o", "--exclude-standard"], {
      onStdout: (chunk) => {
        for (let index = chunk.indexOf(0); index >= 0; index = chunk.indexOf(0, index + 1)) count++
        if (count > deps.maxFiles) over = true
        return !over
      }
    })
    if (over) return "over" as const
    return Git.splitZ(output).filter((file) => !file.endsWith("/"))
  })

const tooMany = (deps: SnapshotDeps, count: number) =>
  `the project has more than ${deps.maxFiles} files that are not ignored (${count} or more; limit snapshot_store.max_files). ` +
  `Undo and session diffs are off for it: ignore large directories in .gitignore or raise the limit.`

/** Hashes many files with git in one go, then reads the whole index back. */
const bulkRefresh = (deps: SnapshotDeps, files: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const { state } = deps
    yield* flushIndex(deps)
    const batch = files.filter((file) => {
      if (isGitPath(file)) return false
      try {
        const stat = fs.lstatSync(path.join(deps.root, file))
        if (stat.isSymbolicLink()) return true
        if (stat.isFile()) return stat.size <= deps.maxFileSize
        return Tree.lookup(state.current, file) !== undefined // was a file: --remove drops it
      } catch {
        return Tree.lookup(state.current, file) !== undefined
      }
    })
    if (batch.length > 0) {
      yield* deps.indexLock.withPermits(1)(updateIndex(deps, batch).pipe(Effect.uninterruptible))
      yield* refreshLater(deps)
    }
    const next = yield* loadIndex(deps)
    state.recheck.clear()
    const delta = new Map<string, Tree.FileEntry | undefined>()
    for (const change of Tree.diff(state.current, next, deps.writer)) delta.set(change.file, change.after)
    state.current = next
    return delta
  })

/** Stops tracking when the project grew past `max_files`; false then. */
const withinLimit = (deps: SnapshotDeps) =>
  Effect.gen(function*() {
    if (deps.state.current.count > deps.maxFiles) {
      yield* refuse(deps, tooMany(deps, deps.state.current.count))
      return false
    }
    return true
  })

/** Brings `current` up to date with the whole project (every file stated). False when tracking had to stop. */
const fullScan = (deps: SnapshotDeps) =>
  Effect.gen(function*() {
    const { state } = deps
    const listed = yield* listChanged(deps)
    if (listed === "over") {
      yield* refuse(deps, tooMany(deps, deps.maxFiles + 1))
      return false
    }
    const candidates = new Set([...listed, ...state.recheck, ...state.pendingIndex, ...state.indexing, ...state.stuck])
    state.recheck.clear()
    // Files we already hashed and git has not recorded yet cost a stat: only new ones count here.
    const unknown = listed.reduce(
      (count, file) => (state.pendingIndex.has(file) || state.indexing.has(file) || state.hashed.has(file) ? count : count + 1),
      0
    )
    if (unknown > BULK_THRESHOLD) {
      yield* bulkRefresh(deps, [...candidates])
    } else {
      yield* commit(deps, refresh(deps, candidates))
    }
    return yield* withinLimit(deps)
  })

// --- watched scans -----------------------------------------------------------------------

const stopWatching = (deps: SnapshotDeps, reason: string) =>
  Effect.suspend(() => {
    const { state } = deps
    state.watching = false
    state.watch?.close()
    state.watch = undefined
    return Effect.logDebug(`snapshots of ${deps.root} scan the whole project after each step: ${reason}`)
  })

/** Which of these paths git ignores (the project's ignore files and our defaults). */
const ignoredAmong = (deps: SnapshotDeps, files: ReadonlyArray<string>) =>
  files.length === 0
    ? Effect.succeed(new Set<string>())
    : deps.git(["check-ignore", "-z", "--stdin", "--no-index"], { input: files.join("\0") + "\0" }).pipe(
      Effect.map((output) => new Set(Git.splitZ(output))),
      // exit code 1: none of them is ignored
      Effect.catchIf((error) => error.code === 1, () => Effect.succeed(new Set<string>()))
    )

/**
 * Watches `dirs` and the directories below them that git does not ignore (not nested
 * repositories), level by level; the files found there go to `found`. False when a watch
 * could not be added.
 */
const watchTrees = (deps: SnapshotDeps, active: Watch.ProjectWatch, dirs: ReadonlyArray<string>, found?: Set<string>) =>
  Effect.gen(function*() {
    let level = dirs.filter((dir) => !isGitPath(dir))
    while (level.length > 0) {
      const ignored = yield* ignoredAmong(deps, level.filter((dir) => dir !== ""))
      const next: Array<string> = []
      for (const dir of level) {
        if (ignored.has(dir)) continue
        // Watched before it is read: whatever changes after the listing is reported.
        if (!active.add(dir)) return false
        let entries: Array<fs.Dirent>
        try {
          entries = fs.readdirSync(dir === "" ? deps.root : path.join(deps.root, dir), { withFileTypes: true })
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
const syncWatches = (deps: SnapshotDeps) =>
  Effect.gen(function*() {
    const { state } = deps
    if (!state.watching) return
    state.watch ??= new Watch.ProjectWatch(deps.root, path.join(deps.gitDir, `watch-${process.pid}`), Watch.defaultLimits())
    const watch = state.watch
    watch.reset()
    const ok = yield* watchTrees(deps, watch, [""]).pipe(Effect.orElseSucceed(() => false))
    if (!ok) yield* stopWatching(deps, `more than ${watch.size} directories to watch, or the system refused a watch`)
  })

/** Waits until the watches have seen every change made so far; what they saw, or undefined. */
const settleWatches = (deps: SnapshotDeps) =>
  Effect.suspend(() => {
    const active = deps.state.watch
    if (!deps.state.watching || !active) return Effect.succeed(undefined)
    return Effect.promise(() => active.barrier(BARRIER_TIMEOUT_MS)).pipe(
      Effect.map((delivered) => {
        const taken = active.take()
        return delivered ? taken : { ...taken, full: "the watches did not answer in time" }
      })
    )
  })

/** Brings `current` up to date from what the watches saw. Undefined when a full scan is needed. */
const watchedScan = (deps: SnapshotDeps, active: Watch.ProjectWatch, taken: Watch.Taken) =>
  Effect.gen(function*() {
    const { state } = deps
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
        stat = fs.lstatSync(path.join(deps.root, dir))
      } catch {
        stat = undefined
      }
      const isDir = stat?.isDirectory() === true
      if (!isDir && !active.has(dir)) continue
      if (isDir && active.same(dir, stat!)) continue
      active.removeUnder(dir)
      const before = Tree.find(state.current, dir)
      if (before?.type === "dir") for (const [file] of Tree.files(before, dir)) candidates.add(file)
      if (isDir && !fresh.some((parent) => dir.startsWith(`${parent}/`))) fresh.push(dir)
    }
    if (fresh.length > 0 && !(yield* watchTrees(deps, active, fresh, candidates))) return undefined
    // Files new to us count only when git does not ignore them.
    const newFiles = [...candidates].filter((file) => {
      if (Tree.lookup(state.current, file)) return false
      try {
        const stat = fs.lstatSync(path.join(deps.root, file))
        return stat.isFile() || stat.isSymbolicLink()
      } catch {
        return false
      }
    })
    for (const file of yield* ignoredAmong(deps, newFiles)) candidates.delete(file)
    yield* commit(deps, refresh(deps, candidates))
    return yield* withinLimit(deps)
  })

/**
 * Sets the watches up (again) and then states every file, in the background, so the step that
 * asked for a full scan does not wait for it; the next scan waits for the lock and then looks
 * only at what the watches saw.
 */
const armWatches = (deps: SnapshotDeps) =>
  Effect.suspend(() => {
    const { state } = deps
    if (!state.watching || state.arming || state.closing) return Effect.void
    state.arming = true
    return deps.lock.withPermits(1)(
      Effect.suspend(() => (state.disabled ? Effect.void : syncWatches(deps))).pipe(
        Effect.zipRight(Effect.suspend(() => (state.watching && !state.disabled ? fullScan(deps) : Effect.void)))
      )
    ).pipe(
      Effect.tapErrorCause(() => Effect.sync(() => state.watch?.invalidate("setting up the watches failed"))),
      Effect.ensuring(Effect.sync(() => (state.arming = false))),
      Effect.catchAllCause(warnBackgroundFailure("setting up the snapshot watches failed")),
      Effect.forkIn(deps.scope),
      Effect.asVoid
    )
  })

/** Brings `current` up to date with the project. False when tracking had to stop. */
export const scan = (deps: SnapshotDeps) =>
  Effect.gen(function*() {
    const active = deps.state.watch
    if (active && !deps.state.arming) {
      const taken = yield* settleWatches(deps)
      if (taken) {
        const done = yield* watchedScan(deps, active, taken).pipe(
          Effect.catchAll((error) => Effect.as(Effect.logDebug(`watched snapshot scan failed, scanning everything: ${error.message}`), undefined))
        )
        if (done !== undefined) return done
      }
    }
    const done = yield* fullScan(deps)
    if (done) yield* armWatches(deps)
    return done
  })
