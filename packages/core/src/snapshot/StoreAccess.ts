import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { loadIndex } from "./StatCache.js"
import type { SnapshotDeps } from "./SnapshotState.js"
import { SnapshotUnavailable, type SnapshotStatus } from "./SnapshotTypes.js"
import * as Store from "./Store.js"
import * as Tree from "./Tree.js"

// Opening the store: whether this project may be tracked at all, repairing a damaged store, setting
// it up and loading our stat cache; turning snapshots off with a reason.

/** A write of the store's own files, as a typed failure (a full disk is one). */
export const storeIO = (what: string, run: () => Promise<void>) =>
  Effect.tryPromise({
    try: run,
    catch: (error) => new SnapshotUnavailable({ detail: `${what}: ${error instanceof Error ? error.message : String(error)}` })
  })

/** Turns snapshots off for this layer (once), with a warning and a `snapshot.disabled` event. */
export const refuse = (deps: SnapshotDeps, reason: string) =>
  Effect.gen(function*() {
    const { state } = deps
    if (state.disabled) return
    state.disabled = reason
    state.watching = false
    state.watch?.close()
    state.watch = undefined
    yield* Effect.logWarning(`snapshots disabled for ${deps.root}: ${reason}`)
    yield* deps.bus.publish({ type: "snapshot.disabled", properties: { directory: deps.root, reason } })
  })

/** Why this directory must not be tracked at all, if it must not. */
const refusal = (deps: SnapshotDeps): string | undefined => {
  const { root } = deps
  const home = path.resolve(deps.home)
  if (root === path.parse(root).root) return `${root} is the file system root; snapshots are off`
  if (root === home) return `${root} is your home directory; snapshots are off (start the agent inside a project)`
  if (home.startsWith(root + path.sep)) return `${root} contains your home directory; snapshots are off`
  const data = path.resolve(deps.dataDir)
  if (data === root || data.startsWith(root + path.sep)) {
    return `the data directory ${data} is inside ${root}; snapshots are off so the store does not track itself`
  }
  return undefined
}

/**
 * A damaged store (an empty HEAD or config, or one git cannot open) is moved aside at open and
 * a new one is started, with one warning: otherwise every later run would fail on every step.
 */
const damage = (deps: SnapshotDeps) =>
  Effect.gen(function*() {
    const found = Store.inspect(deps.gitDir)
    if (found !== undefined || !fs.existsSync(path.join(deps.gitDir, "HEAD"))) return found
    return yield* deps.git(["rev-parse", "--git-dir"]).pipe(
      Effect.as(undefined),
      Effect.catchAll((error) => Effect.succeed(`git cannot open it: ${error.stderr.trim().split("\n").slice(-2).join(" ")}`))
    )
  })

const repairStore = (deps: SnapshotDeps) =>
  Effect.gen(function*() {
    const { gitDir } = deps
    if ((yield* damage(deps)) === undefined) return
    // One process moves the store; the others wait for it and then find a sound store.
    for (let waited = 0; !Store.tryLock(gitDir); waited += 50) {
      if (waited >= 10_000) return yield* new SnapshotUnavailable({ detail: `another process is repairing ${gitDir}` })
      yield* Effect.sleep("50 millis")
    }
    yield* Effect.gen(function*() {
      const reason = yield* damage(deps)
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

/**
 * Checks the store, creates what is missing and loads our stat cache as `current` (once). One
 * opening at a time: a read opening the store while a step opened, scanned and recorded would
 * otherwise load the stat cache over what that scan found, and those files would be missing
 * from every later snapshot.
 */
const load = (deps: SnapshotDeps) =>
  Effect.suspend(() => (deps.state.loaded ? Effect.void : deps.loadLock.withPermits(1)(loadOnce(deps))))

const loadOnce = (deps: SnapshotDeps) =>
  Effect.gen(function*() {
    const { state, gitDir, ownIndex } = deps
    if (state.loaded) return
    yield* repairStore(deps)
    yield* storeIO(`cannot set up ${gitDir}`, () => Store.create(deps.disk, { gitDir, ownIndex, worktree: deps.root }))
    // A lock left by a killed git of an earlier process with our pid would block every update.
    fs.rmSync(`${ownIndex}.lock`, { force: true })
    // The stat cache is only a cache: one git finds corrupt is dropped, and the first scan hashes again.
    state.current = yield* loadIndex(deps).pipe(
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
    state.recheck.clear()
    state.loaded = true
  })

/** Opens the store for tracking; false when snapshots are off here. */
export const open = (deps: SnapshotDeps) =>
  Effect.gen(function*() {
    const { state } = deps
    if (state.disabled) return false
    if (!state.checked) {
      const refused = refusal(deps)
      if (refused) {
        yield* refuse(deps, refused)
        return false
      }
      state.checked = true
    }
    yield* load(deps)
    return true
  }).pipe(
    Effect.catchAll((error) =>
      Effect.as(
        refuse(deps, `the snapshot store cannot be used: ${error._tag === "SnapshotUnavailable" ? error.detail : error.message}`),
        false
      )
    )
  )

/** Reading and restoring work wherever the store exists, even where tracking is refused. */
export const openForRead = (deps: SnapshotDeps) =>
  load(deps).pipe(Effect.mapError((error) => new SnapshotUnavailable({ detail: error.message })))

/** A store that exists but cannot be written (a read-only data directory). */
const readOnlyStore = (gitDir: string) => {
  if (!fs.existsSync(path.join(gitDir, "HEAD"))) return false
  try {
    fs.accessSync(gitDir, fs.constants.W_OK)
    return false
  } catch {
    return true
  }
}

/** Only looking at stored snapshots: a read-only store is read as it is, without setting it up. */
export const openToLook = (deps: SnapshotDeps) =>
  Effect.suspend(() => (!deps.state.loaded && readOnlyStore(deps.gitDir) ? Effect.void : openForRead(deps)))

export const status = Effect.fn("Snapshot.status")(function*(deps: SnapshotDeps) {
  const { state, root, gitDir } = deps
  if (!state.disabled && !state.checked) {
    const refused = refusal(deps)
    if (refused) return { enabled: false, reason: refused, directory: root, store: gitDir } satisfies SnapshotStatus
  }
  return state.disabled
    ? { enabled: false, reason: state.disabled, directory: root, store: gitDir } satisfies SnapshotStatus
    : { enabled: true, directory: root, store: gitDir } satisfies SnapshotStatus
})
