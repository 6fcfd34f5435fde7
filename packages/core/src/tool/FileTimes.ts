import { Context, Layer } from "effect"
import { realPath } from "./ExternalDirectory.js"

/**
 * When each session last saw each file: `read` records the file's modification time, and edits
 * record the time of their own write. An edit compares it with the file on disk to notice that
 * something else changed the file since the model looked at it.
 */

/**
 * Sessions remembered at most; past that, the one that recorded least recently is dropped (every
 * session a server ran used to stay here for the life of the process). A dropped session counts
 * as one that never read its files (not stale), as after a restart, when all of this is gone anyway.
 */
export const MAX_SESSIONS = 1000

/** The times of one runtime's sessions. */
export class FileTimesStore {
  private readonly sessions = new Map<string, Map<string, number>>()

  /** Records that `sessionID` has seen `file` as of modification time `mtimeMs`. */
  record(sessionID: string, file: string, mtimeMs: number): void {
    let files = this.sessions.get(sessionID)
    if (files === undefined) files = new Map()
    else this.sessions.delete(sessionID) // re-inserted below: the Map's order is the order of last use
    this.sessions.set(sessionID, files)
    files.set(realPath(file), mtimeMs)
    if (this.sessions.size > MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!)
  }

  /** The modification time `sessionID` last saw for `file`, if it read or wrote it. */
  lastRead(sessionID: string, file: string): number | undefined {
    return this.sessions.get(sessionID)?.get(realPath(file))
  }

  /** Whether `file`, now at `mtimeMs`, changed since `sessionID` last saw it (never seen: not stale). */
  isStale(sessionID: string, file: string, mtimeMs: number): boolean {
    const seen = this.lastRead(sessionID, file)
    return seen !== undefined && mtimeMs > seen
  }

  /** Forgets a session (when it is deleted). */
  forget(sessionID: string): void {
    this.sessions.delete(sessionID)
  }
}

/**
 * The store the file tools use, taken when they are built: `makeAppLayer` gives each runtime its
 * own (`FileTimes.layer`); tools built outside a runtime (in tests) share the default one.
 */
export class FileTimes extends Context.Reference<FileTimes>()("@agent/core/tools/FileTimes", {
  defaultValue: (): FileTimesStore => new FileTimesStore()
}) {
  static readonly layer: Layer.Layer<FileTimes> = Layer.sync(FileTimes, () => new FileTimesStore())
}
