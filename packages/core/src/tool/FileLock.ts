import { Effect } from "effect"
import { realPath } from "./ExternalDirectory.js"

/**
 * One writer per file: write, edit and apply_patch read, diff, ask and write under the file's
 * lock, so two parallel calls on the same file run one after the other and neither loses the
 * other's change. Locks are created on first use and dropped when nobody holds or waits for them.
 */

interface Entry {
  readonly semaphore: Effect.Semaphore
  users: number
}

// One table per process, not per runtime: two runtimes writing the same file must take turns too.
const locks = new Map<string, Entry>()

const acquire = (key: string) =>
  Effect.sync(() => {
    let entry = locks.get(key)
    if (entry === undefined) {
      entry = { semaphore: Effect.unsafeMakeSemaphore(1), users: 0 }
      locks.set(key, entry)
    }
    entry.users++
    return entry
  })

const release = (key: string, entry: Entry) =>
  Effect.sync(() => {
    entry.users--
    if (entry.users === 0 && locks.get(key) === entry) locks.delete(key)
  })

/** Runs `effect` holding the lock of `file` (symlinks resolved, so two names of one file share it). */
export const withLock = (file: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const key = realPath(file)
    return Effect.acquireUseRelease(acquire(key), (entry) => entry.semaphore.withPermits(1)(effect), (entry) => release(key, entry))
  })

/** Runs `effect` holding the locks of all `files`, taken in a fixed order so two callers cannot deadlock. */
export const withLocks = (files: ReadonlyArray<string>) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const keys = [...new Set(files.map(realPath))].sort()
    return keys.reduceRight<Effect.Effect<A, E, R>>((inner, key) => withLock(key)(inner), effect)
  })

/** How many files currently have a lock (held or awaited); for tests. */
export const active = (): number => locks.size
