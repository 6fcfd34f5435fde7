import { realPath } from "./ExternalDirectory.js"

/**
 * When each session last saw each file: `read` records the file's modification time, and edits
 * record the time of their own write. An edit compares it with the file on disk to notice that
 * something else changed the file since the model looked at it.
 */

const sessions = new Map<string, Map<string, number>>()

/**
 * Sessions remembered at most; past that, the one that recorded least recently is dropped (every
 * session a server ran used to stay here for the life of the process). A dropped session counts
 * as one that never read its files (not stale), as after a restart, when all of this is gone anyway.
 */
export const MAX_SESSIONS = 1000

/** Records that `sessionID` has seen `file` as of modification time `mtimeMs`. */
export const record = (sessionID: string, file: string, mtimeMs: number): void => {
  let files = sessions.get(sessionID)
  if (files === undefined) files = new Map()
  else sessions.delete(sessionID) // re-inserted below: the Map's order is the order of last use
  sessions.set(sessionID, files)
  files.set(realPath(file), mtimeMs)
  if (sessions.size > MAX_SESSIONS) sessions.delete(sessions.keys().next().value!)
}

/** The modification time `sessionID` last saw for `file`, if it read or wrote it. */
export const lastRead = (sessionID: string, file: string): number | undefined => sessions.get(sessionID)?.get(realPath(file))

/** Whether `file`, now at `mtimeMs`, changed since `sessionID` last saw it (never seen: not stale). */
export const isStale = (sessionID: string, file: string, mtimeMs: number): boolean => {
  const seen = lastRead(sessionID, file)
  return seen !== undefined && mtimeMs > seen
}

/** Forgets a session (when it is deleted). */
export const forget = (sessionID: string): void => {
  sessions.delete(sessionID)
}
