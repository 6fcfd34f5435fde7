import { Duration, Effect, Option, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { warnBackgroundFailure } from "../runtime/BackgroundFailure.js"
import { isAlive } from "../runtime/Pid.js"
import { jsonField } from "../store/Dialect.js"
import type { SnapshotDeps } from "./SnapshotState.js"
import type { GcOptions, GcReport } from "./SnapshotTypes.js"
import { flushIndex, flushObjects, parseStage } from "./StatCache.js"
import { openForRead, storeIO } from "./StoreAccess.js"
import { writeAtomic } from "./StoreFile.js"
import * as Tree from "./Tree.js"

// Garbage collection: snapshots of deleted sessions, and of sessions idle for `retention_days`,
// are dropped from the store; after deletions (batched) and once a day.

/** Objects younger than this survive a collection: another process may be about to refer to them. */
const DEFAULT_GC_GRACE = Duration.minutes(15)
const GC_INTERVAL_MS = 24 * 60 * 60 * 1000
/** Wait this long after a session is deleted before collecting, so deletions batch up. */
const GC_AFTER_DELETE = Duration.seconds(30)

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

/** Snapshots named by the parts and reverts of this project's sessions still within retention. */
const liveSnapshots = (deps: SnapshotDeps) =>
  Effect.gen(function*() {
    const { sql, dbWrite, projectID } = deps
    const since = Date.now() - deps.retentionMs
    const parts = yield* dbWrite(sql<{ id: string | null }>`
      SELECT DISTINCT COALESCE(${jsonField(sql, "p.data", "snapshot")}, ${jsonField(sql, "p.data", "hash")}) AS id
      FROM part p JOIN session s ON s.id = p.session_id
      WHERE s.project_id = ${projectID} AND s.time_updated >= ${since}
        AND p.type IN ('step-start', 'step-finish', 'snapshot', 'patch')`)
    const reverts = yield* dbWrite(sql<{ snapshot: string | null; applied: string | null }>`
      SELECT ${jsonField(sql, "revert", "snapshot")} AS snapshot, ${jsonField(sql, "revert", "applied")} AS applied
      FROM session WHERE project_id = ${projectID} AND revert IS NOT NULL AND time_updated >= ${since}`)
    const ids = new Set<string>()
    for (const row of parts) if (row.id) ids.add(row.id)
    for (const row of reverts) {
      if (row.snapshot) ids.add(row.snapshot)
      if (row.applied) ids.add(row.applied)
    }
    return ids
  })

/** Other processes' stat caches (the entries of each); those of processes that are gone are removed. */
const otherIndexes = (deps: SnapshotDeps) =>
  Effect.gen(function*() {
    const { gitDir } = deps
    const others: Array<Array<readonly [string, Tree.FileEntry]>> = []
    for (const name of fs.readdirSync(gitDir)) {
      // The barrier directory of a process that is gone (see snapshot/Watch.ts).
      const watchDir = /^watch-(\d+)$/.exec(name)
      if (watchDir && !isAlive(Number(watchDir[1]))) fs.rmSync(path.join(gitDir, name), { recursive: true, force: true })
      const match = /^index(?:-(\d+))?$/.exec(name)
      if (!match || path.join(gitDir, name) === deps.ownIndex) continue
      const pid = match[1] ? Number(match[1]) : undefined
      if (pid !== undefined && !isAlive(pid)) {
        fs.rmSync(path.join(gitDir, name), { force: true })
        continue
      }
      others.push(
        yield* deps.git(["ls-files", "-s", "-z"], { indexFile: path.join(gitDir, name) }).pipe(
          Effect.map(parseStage),
          Effect.orElseSucceed(() => [])
        )
      )
    }
    return others
  })

const collect = (deps: SnapshotDeps, options: GcOptions) =>
  Effect.gen(function*() {
    const { gitDir, git, state, writer } = deps
    if (!fs.existsSync(path.join(gitDir, "HEAD"))) return { kept: 0, bytesBefore: 0, bytesAfter: 0 }
    yield* openForRead(deps)
    yield* flushObjects(deps)
    yield* flushIndex(deps)
    const bytesBefore = dirSize(gitDir)
    const live = yield* liveSnapshots(deps)
    // What this process holds, and every other process's stat cache (their files now).
    live.add(state.current.id(writer))
    for (const id of state.inFlight.keys()) live.add(id)
    const others = yield* otherIndexes(deps)
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
    yield* flushObjects(deps) // the trees just built for other processes' stat caches
    const refs = [...new Set(keep)].sort().map((id) => `${id} refs/snapshots/${id}`)
    yield* storeIO(`cannot write ${gitDir}/packed-refs`, () =>
      writeAtomic(
        deps.disk,
        path.join(gitDir, "packed-refs"),
        `# pack-refs with: peeled fully-peeled sorted \n${refs.join("\n")}${refs.length ? "\n" : ""}`,
        { syncDir: true }
      ))
    const graceSeconds = Math.floor(Duration.toMillis(Duration.decode(options.grace ?? DEFAULT_GC_GRACE)) / 1000)
    yield* deps.packLock.withPermits(1)(
      Effect.zipRight(
        git(["repack", "-A", "-d", "-q"]),
        git(["prune", `--expire=${graceSeconds <= 0 ? "now" : `${graceSeconds}.seconds.ago`}`])
      )
    )
    // Cached trees and the record of written objects may name what was just removed.
    writer.reset()
    state.roots.clear()
    state.hashed.clear()
    yield* storeIO(`cannot write ${gitDir}/gc-stamp`, () => writeAtomic(deps.disk, path.join(gitDir, "gc-stamp"), String(Date.now())))
    return { kept: keep.length, bytesBefore, bytesAfter: dirSize(gitDir) }
  })

export const gc = Effect.fn("Snapshot.gc")(function*(deps: SnapshotDeps, options: GcOptions = {}) {
  return yield* deps.lock.withPermits(1)(collect(deps, options).pipe(
    Effect.catchAll((error) =>
      Effect.as(Effect.logWarning(`snapshot garbage collection failed: ${error.message}`), { kept: 0, bytesBefore: 0, bytesAfter: 0 } satisfies GcReport)
    )
  ))
})

const backgroundGc = (deps: SnapshotDeps) =>
  gc(deps).pipe(
    Effect.asVoid,
    Effect.catchAllCause(warnBackgroundFailure("snapshot garbage collection failed"))
  )

/** Collects after sessions are deleted (batched), and at start when the last collection is a day old. */
export const scheduleGc = (deps: SnapshotDeps) =>
  Effect.gen(function*() {
    const { gitDir, state } = deps
    const deletions = yield* deps.bus.subscribe({ types: ["session.deleted"] })
    yield* deletions.pipe(
      Stream.runForEach(() =>
        Effect.suspend(() => {
          if (state.gcTimer || !fs.existsSync(path.join(gitDir, "HEAD"))) return Effect.void
          return Effect.sleep(GC_AFTER_DELETE).pipe(
            Effect.zipRight(backgroundGc(deps)),
            Effect.ensuring(Effect.sync(() => (state.gcTimer = undefined))),
            Effect.forkIn(deps.scope),
            Effect.tap((fiber) => Effect.sync(() => (state.gcTimer = fiber))),
            Effect.asVoid
          )
        })
      ),
      Effect.catchAllCause((cause) => Effect.logError("snapshot deletion watcher stopped", cause)),
      Effect.forkScoped
    )
    const stampFile = path.join(gitDir, "gc-stamp")
    const stamp = Option.liftThrowable(() => Number(fs.readFileSync(stampFile, "utf8")))()
    if (Option.isSome(stamp) && Date.now() - stamp.value > GC_INTERVAL_MS) yield* Effect.forkIn(backgroundGc(deps), deps.scope)
  })
