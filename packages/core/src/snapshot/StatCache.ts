import { Duration, Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Git from "./Git.js"
import { isGitPath, type SnapshotDeps } from "./SnapshotState.js"
import { SnapshotUnavailable } from "./SnapshotTypes.js"
import * as Tree from "./Tree.js"

// Hashing the project's files and keeping our index (the stat cache) and the object store up to
// date in the background.

/** The stat cache is updated at most this often, or at once when this many paths wait. */
const FLUSH_DELAY = Duration.seconds(1)
const FLUSH_BATCH = 200
const FLUSH_BYTES = 32 * 1024 * 1024
/** Git's timestamps here have one-second resolution: wait past it before refreshing the stat cache. */
const RACY_SETTLE = Duration.millis(1500)
/** Loose objects written before they are packed. */
const PACK_EVERY = 4000

type Hashed =
  | { readonly kind: "file"; readonly entry: Tree.FileEntry }
  | { readonly kind: "gone" }
  | { readonly kind: "skip" }

const signatureOf = (stat: fs.Stats) => `${stat.mtimeMs}:${stat.ctimeMs}:${stat.size}:${stat.ino}:${stat.mode}`
/** A change in the same clock tick keeps the signature; files without sub-second times get a wider margin. */
const settled = (stat: fs.Stats, at: number) => {
  const margin = stat.mtimeMs % 1000 === 0 && stat.ctimeMs % 1000 === 0 ? 2000 : 50
  return Math.max(stat.mtimeMs, stat.ctimeMs) < at - margin
}

const hashPath = (deps: SnapshotDeps, file: string): Hashed => {
  const { state, writer } = deps
  const absolute = path.join(deps.root, file)
  let stat: fs.Stats
  try {
    stat = fs.lstatSync(absolute)
  } catch {
    return { kind: "gone" }
  }
  try {
    if (stat.isSymbolicLink() || stat.isFile()) {
      if (stat.isFile() && stat.size > deps.maxFileSize) return { kind: "skip" }
      const signature = signatureOf(stat)
      const known = state.hashed.get(file)
      if (known && known.signature === signature && settled(stat, known.at)) return { kind: "file", entry: known.entry }
      const at = Date.now()
      const entry: Tree.FileEntry = stat.isSymbolicLink()
        ? { type: "file", mode: "120000", id: writer.write("blob", fs.readlinkSync(absolute, { encoding: "buffer" })) }
        : {
          type: "file",
          mode: (stat.mode & 0o100) !== 0 ? "100755" : "100644",
          id: writer.write("blob", fs.readFileSync(absolute))
        }
      state.hashed.set(file, { signature, entry, at })
      return { kind: "file", entry }
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === "ENOENT") return { kind: "gone" }
    return { kind: "skip" } // unreadable: leave it out
  }
  // A directory (a nested repository), socket or fifo: not a file of ours.
  return Tree.lookup(state.current, file) ? { kind: "gone" } : { kind: "skip" }
}

/** What changed at these paths relative to `current` (hashing them). */
export const refresh = (deps: SnapshotDeps, files: Iterable<string>): Map<string, Tree.FileEntry | undefined> => {
  const delta = new Map<string, Tree.FileEntry | undefined>()
  for (const file of files) {
    if (delta.has(file) || isGitPath(file)) continue
    const hashed = hashPath(deps, file)
    if (hashed.kind === "skip") continue
    const now = hashed.kind === "file" ? hashed.entry : undefined
    if (!Tree.sameFile(Tree.lookup(deps.state.current, file), now)) delta.set(file, now)
  }
  return delta
}

export const parseStage = (output: Buffer) => {
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
export const loadIndex = (deps: SnapshotDeps) =>
  Effect.gen(function*() {
    if (!fs.existsSync(deps.ownIndex)) return Tree.EMPTY
    return Tree.build(parseStage(yield* deps.git(["ls-files", "-s", "-z"])))
  })

const writeObjects = (deps: SnapshotDeps) =>
  Effect.tryPromise({
    try: () => deps.writer.flush(),
    catch: (error) => new SnapshotUnavailable({ detail: `cannot write to the store: ${error instanceof Error ? error.message : String(error)}` })
  })

/** Every few thousand loose objects (a few hundred steps), pack them in the background. */
const packLoose = (deps: SnapshotDeps) =>
  Effect.suspend(() => {
    const { state } = deps
    if (state.closing || deps.writer.files - state.packedAt < PACK_EVERY) return Effect.void
    state.packedAt = deps.writer.files
    return deps.packLock.withPermits(1)(deps.git(["repack", "-d", "-q"]).pipe(Effect.uninterruptible, Effect.ignore)).pipe(
      Effect.forkIn(deps.scope),
      Effect.asVoid
    )
  })

/** Puts queued objects on disk (before git reads the store, and in the background); never while git packs. */
export const flushObjects = (deps: SnapshotDeps) =>
  deps.packLock.withPermits(1)(writeObjects(deps)).pipe(Effect.tap(() => packLoose(deps)))

/** `--replace`: a file may take the place of a directory (or the other way round). */
export const updateIndex = (deps: SnapshotDeps, files: ReadonlyArray<string>) =>
  deps.git(["update-index", "--add", "--remove", "--replace", "-z", "--stdin"], { input: files.join("\0") + "\0" })

/** Writes the changed paths into our index (the stat cache), one batch at a time. */
export const flushIndex = (deps: SnapshotDeps) =>
  deps.indexLock.withPermits(1)(
    Effect.suspend(() => {
      const { state } = deps
      const batch = [...state.pendingIndex]
      state.pendingIndex.clear()
      if (batch.length === 0) return Effect.void
      for (const file of batch) state.indexing.add(file)
      // Uninterruptible: a git killed mid-write would leave a lock that blocks every later update.
      return updateIndex(deps, batch).pipe(
        Effect.uninterruptible,
        Effect.tap(() =>
          Effect.sync(() => {
            for (const file of batch) {
              state.recheck.add(file)
              state.hashed.delete(file)
              state.stuck.delete(file)
            }
          })
        ),
        Effect.ensuring(Effect.sync(() => batch.forEach((file) => state.indexing.delete(file)))),
        // Correct either way: paths git did not take stay scan candidates of our own.
        Effect.catchAll((error) =>
          Effect.zipRight(
            Effect.sync(() => batch.forEach((file) => state.stuck.add(file))),
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
export const scheduleFlush = (deps: SnapshotDeps) =>
  Effect.suspend(() => {
    const { state, writer } = deps
    const waiting = () => state.pendingIndex.size > 0 || writer.pending.count > 0
    if (state.flushing || state.closing || !waiting()) return Effect.void
    state.flushing = true
    const loop: Effect.Effect<void, SnapshotUnavailable> = Effect.suspend(() =>
      waiting() ? Effect.zipRight(Effect.zipRight(flushObjects(deps), flushIndex(deps)), loop) : Effect.void
    )
    const urgent = state.pendingIndex.size >= FLUSH_BATCH || writer.pending.bytes >= FLUSH_BYTES
    const wait = urgent ? Effect.void : Effect.sleep(FLUSH_DELAY)
    return Effect.zipRight(wait, loop).pipe(
      Effect.ensuring(Effect.sync(() => (state.flushing = false))),
      Effect.catchAllCause((cause) => Effect.logError("snapshot stat cache update failed", cause)),
      Effect.forkIn(deps.scope),
      Effect.asVoid
    )
  })

/** Moves `current` by these changes and queues them for the stat cache. */
export const commit = (deps: SnapshotDeps, delta: ReadonlyMap<string, Tree.FileEntry | undefined>) =>
  Effect.gen(function*() {
    if (delta.size === 0) return
    const { state } = deps
    state.current = Tree.apply(state.current, delta)
    for (const file of delta.keys()) state.pendingIndex.add(file)
    yield* scheduleFlush(deps)
  })

/**
 * Files changed in the same second as the index was written are "racily clean" to git: every
 * later `ls-files` and index write re-reads them. After a bulk update (a project just cloned or
 * generated, a big install) the whole index can be racy, so it is refreshed once things settle.
 */
export const refreshLater = (deps: SnapshotDeps) =>
  Effect.suspend(() => {
    const { state } = deps
    if (state.refreshing || state.closing) return Effect.void
    state.refreshing = true
    return Effect.sleep(RACY_SETTLE).pipe(
      Effect.zipRight(deps.indexLock.withPermits(1)(deps.git(["update-index", "-q", "--refresh"]).pipe(Effect.uninterruptible, Effect.ignore))),
      // Git wrote one loose object per file: pack them (a fraction of the space, one file).
      Effect.zipRight(deps.packLock.withPermits(1)(deps.git(["repack", "-d", "-q"]).pipe(Effect.uninterruptible, Effect.ignore))),
      Effect.ensuring(Effect.sync(() => (state.refreshing = false))),
      Effect.forkIn(deps.scope),
      Effect.asVoid
    )
  })
