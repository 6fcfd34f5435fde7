import { Context } from "effect"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { realPath } from "./ExternalDirectory.js"

/**
 * How write, edit and apply_patch put a file's new bytes on disk: never in place. The bytes go to
 * a temp file in the target's directory, are flushed (fsync) and renamed over the target, which
 * is the real file when the path is a symlink (the link stays a link). The temp file takes the
 * target's mode, and its owner where the process may set it. A failure (a full disk) removes
 * the temp file and leaves the target as it was: never a truncated file.
 *
 * Trade-offs of the rename: a file with other hard links is replaced under this name only (the
 * other names keep the old content), and a file in a directory the process may not write to
 * cannot be changed even when the file itself is writable.
 */

export interface FileDiskShape {
  /** Writes all of `data` to the temp file. */
  readonly write: (handle: fsp.FileHandle, data: Uint8Array) => Promise<void>
  /** Renames a file (a temp file into place, a deleted file aside and back). */
  readonly rename: (from: string, to: string) => Promise<void>
}

/** The disk as it is. */
export const liveDisk: FileDiskShape = { write: (handle, data) => handle.writeFile(data), rename: fsp.rename }

/**
 * The seam a test without root (no small tmpfs to fill) replaces with a disk that fails as a full
 * one does: part of the data written, then ENOSPC; and where a test needs a rename to fail.
 */
export class FileDisk extends Context.Reference<FileDisk>()("@agent/core/tools/FileDisk", {
  defaultValue: (): FileDiskShape => liveDisk
}) {}

/** New bytes for a file, written to a temp file beside it and not yet in place. */
export interface Staged {
  /** The path the tool was given. */
  readonly file: string
  /** The real file the rename replaces (the link's target for a symlink). */
  readonly target: string
  readonly temp: string
  /** The directory made for a new file (the topmost), removed again if the write does not happen. */
  readonly createdDir: string | undefined
}

/** What went wrong, in words: "no space left on device" for ENOSPC. */
export const reason = (error: unknown): string => {
  const message = error instanceof Error ? error.message : String(error)
  // Node's file system errors read "ENOSPC: no space left on device, write '…'".
  const match = /^E[A-Z]+: ([^,]+)/.exec(message)
  return match?.[1] ?? message
}

/** Writes `data` to a temp file beside `file`'s real file, flushed, with the target's mode and owner. */
export const stage = async (disk: FileDiskShape, file: string, data: Uint8Array): Promise<Staged> => {
  const target = realPath(file)
  const dir = path.dirname(target)
  const existing = await fsp.stat(target).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined
    throw error
  })
  // A file the process may not write stays refused, as an in-place write would be (the rename would not ask).
  if (existing !== undefined) await fsp.access(target, fs.constants.W_OK)
  const createdDir = existing === undefined ? await fsp.mkdir(dir, { recursive: true }) : undefined
  const temp = path.join(dir, `.${path.basename(target)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`)
  let handle: fsp.FileHandle | undefined
  try {
    handle = await fsp.open(temp, "wx", existing === undefined ? 0o666 : existing.mode & 0o777)
    await disk.write(handle, data)
    if (existing !== undefined) {
      // The owner first: changing it clears setuid and setgid bits, which the mode then restores.
      if (existing.uid !== process.getuid?.() || existing.gid !== process.getgid?.()) {
        await handle.chown(existing.uid, existing.gid).catch(() => undefined)
      }
      await handle.chmod(existing.mode & 0o7777)
    }
    await handle.sync()
    await handle.close()
    handle = undefined
    return { file, target, temp, createdDir }
  } catch (error) {
    await handle?.close().catch(() => undefined)
    await fsp.rm(temp, { force: true }).catch(() => undefined)
    await removeCreated(createdDir, dir)
    throw error
  }
}

/** Renames the temp file over the target; returns the target's new modification time. */
export const commit = async (disk: FileDiskShape, staged: Staged): Promise<number> => {
  try {
    await disk.rename(staged.temp, staged.target)
  } catch (error) {
    await discard(staged)
    throw error
  }
  await syncDirectory(path.dirname(staged.target))
  // The file is in place: a failing stat must not report the write as failed.
  return fsp.stat(staged.target).then((stat) => stat.mtimeMs, () => Date.now())
}

/** Drops staged bytes that will not be committed. */
export const discard = async (staged: Staged): Promise<void> => {
  await fsp.rm(staged.temp, { force: true }).catch(() => undefined)
  await removeCreated(staged.createdDir, path.dirname(staged.target))
}

/** Replaces `file` with `data` in one step; returns the new modification time. */
export const replace = async (disk: FileDiskShape, file: string, data: Uint8Array): Promise<number> =>
  commit(disk, await stage(disk, file, data))

/** Removes `dir` and its parents up to `top` (what `mkdir -p` made), as far as they are empty. */
const removeCreated = async (top: string | undefined, dir: string) => {
  if (top === undefined) return
  for (let current = dir; current.startsWith(top); current = path.dirname(current)) {
    const removed = await fsp.rmdir(current).then(() => true, () => false)
    if (!removed || current === top) return
  }
}

/** Makes the rename durable; where a directory cannot be synced, skipped. */
const syncDirectory = async (dir: string) => {
  let handle: fsp.FileHandle | undefined
  try {
    handle = await fsp.open(dir, "r")
    await handle.sync()
  } catch {
    // not supported here
  } finally {
    await handle?.close().catch(() => undefined)
  }
}
