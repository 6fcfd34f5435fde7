import { Effect } from "effect"
import * as path from "node:path"
import type * as Git from "./Git.js"
import { scan } from "./Scan.js"
import { relative, remember, type SnapshotDeps } from "./SnapshotState.js"
import type { SnapshotUnavailable, StepRecorder, StepStart, StepTouch } from "./SnapshotTypes.js"
import { commit, flushObjects, refresh, scheduleFlush } from "./StatCache.js"
import { open } from "./StoreAccess.js"
import * as Tree from "./Tree.js"

// Tracking: a snapshot of the project now, and the snapshots before and after each step of a run.

const guarded = <A>(label: string, effect: Effect.Effect<A | undefined, Git.GitFailure | SnapshotUnavailable>) =>
  effect.pipe(
    Effect.catchAllCause((cause) =>
      Effect.as(Effect.logWarning(`snapshot ${label} failed; this step has no snapshot`, cause), undefined)
    )
  )

export const track = Effect.fn("Snapshot.track")(function*(deps: SnapshotDeps) {
  return yield* guarded(
    "track",
    deps.lock.withPermits(1)(Effect.gen(function*() {
      if (!(yield* open(deps))) return undefined
      if (!(yield* scan(deps))) return undefined
      const id = remember(deps, deps.state.current)
      yield* flushObjects(deps)
      return id
    }))
  )
})

/** The state of one run's recorder. */
interface RunState {
  scanned: boolean
  /** A failed attempt is retried: the next finish scans. */
  forceScan: boolean
  /**
   * `current` moved during a step that only refreshed its own files (a background scan, another
   * session): it may hold a file as it was for a moment (a write's temp file), so the next step scans.
   */
  rescan: boolean
}

const begin = (deps: SnapshotDeps, run: RunState) =>
  guarded(
    "step start",
    deps.lock.withPermits(1)(Effect.gen(function*() {
      const { state } = deps
      if (state.disabled || !(yield* open(deps))) return undefined
      // The first step of a run scans (the user may have edited files since the last run).
      if (!run.scanned || run.rescan) {
        if (!(yield* scan(deps))) return undefined
        run.scanned = true
        run.rescan = false
      }
      const start = state.current
      const id = remember(deps, start)
      yield* scheduleFlush(deps)
      state.hold(id)
      return { id, root: start } satisfies StepStart
    }))
  )

/** The step's files as they are now, on top of the snapshot it started from. */
const ownEnd = (deps: SnapshotDeps, run: RunState, start: StepStart, paths: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const { state } = deps
    const files = paths.flatMap((file) => {
      const rel = relative(deps, file)
      return rel ? [rel] : []
    })
    const delta = refresh(deps, files)
    const unchangedSince = state.current === start.root
    if (!unchangedSince) run.rescan = true
    yield* commit(deps, delta)
    // Only this step's own files, as they are now: changes other sessions made meanwhile
    // stay theirs, and a background scan that already recorded one of these files (so it
    // is not in `delta`) must not hide it from this step's patch.
    const own = new Map(files.map((file) => [file, Tree.lookup(state.current, file)] as const))
    return unchangedSince ? state.current : Tree.apply(start.root, own)
  })

const finish = (deps: SnapshotDeps, run: RunState, start: StepStart | undefined, touch: StepTouch) =>
  Effect.ensuring(
    guarded(
      "step finish",
      deps.lock.withPermits(1)(Effect.gen(function*() {
        if (!start || deps.state.disabled) return undefined
        const effective: StepTouch = run.forceScan ? { kind: "unknown" } : touch
        run.forceScan = false
        let end: Tree.Dir
        if (effective.kind === "none") {
          end = start.root
        } else if (effective.kind === "paths") {
          end = yield* ownEnd(deps, run, start, effective.paths)
        } else {
          if (!(yield* scan(deps))) return undefined
          end = deps.state.current
        }
        const snapshot = remember(deps, end)
        yield* scheduleFlush(deps)
        const changed = Tree.diff(start.root, end, deps.writer)
        if (changed.length === 0) return { snapshot }
        return { snapshot, patch: { hash: start.id, files: changed.map((change) => path.join(deps.root, change.file)) } }
      }))
    ),
    Effect.sync(() => deps.state.release(start))
  )

/** A recorder for one run of the session loop. */
export const steps = (deps: SnapshotDeps): StepRecorder => {
  const run: RunState = { scanned: false, forceScan: false, rescan: false }
  return {
    begin: () => begin(deps, run),
    finish: (start, touch) => finish(deps, run, start, touch),
    failed: (start) => {
      run.forceScan = true
      deps.state.release(start)
    }
  }
}
