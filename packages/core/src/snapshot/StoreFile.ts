import { Context } from "effect"
import { randomBytes } from "node:crypto"
import * as fsp from "node:fs/promises"
import * as path from "node:path"

/**
 * How bytes reach the files the store's own code writes. The live one writes them; a test
 * without root (no small tmpfs to fill) replaces it with one that fails as a full disk does:
 * part of the data written, then ENOSPC.
 */
export interface StoreDiskShape {
  readonly write: (handle: fsp.FileHandle, data: Uint8Array) => Promise<void>
}

/** The disk as it is. */
export const liveDisk: StoreDiskShape = { write: (handle, data) => handle.writeFile(data) }

export class StoreDisk extends Context.Reference<StoreDisk>()("@agent/core/snapshot/StoreDisk", {
  defaultValue: (): StoreDiskShape => liveDisk
}) {}

export interface WriteOptions {
  readonly mode?: number
  /** Sets the file's times (an index keeps its mtime, for git's racy-clean check). */
  readonly mtime?: Date
  /** Syncs the directory after the rename too, so the new name survives a crash (metadata files). */
  readonly syncDir?: boolean
  /** How the temp file's name starts (default `tmp_`). */
  readonly tempPrefix?: string
}

/**
 * Replaces `file` with `data` in one step: a temp file in the same directory, fsync, rename.
 * A failure (a full disk) leaves the old file as it was, or no file, and removes the temp file:
 * never a truncated file.
 */
export const writeAtomic = async (
  disk: StoreDiskShape,
  file: string,
  data: string | Uint8Array,
  options: WriteOptions = {}
): Promise<void> => {
  const name = `${options.tempPrefix ?? "tmp_"}${path.basename(file)}_${process.pid}_${randomBytes(4).toString("hex")}`
  const temp = path.join(path.dirname(file), name)
  let handle: fsp.FileHandle | undefined
  try {
    handle = await fsp.open(temp, "wx", options.mode ?? 0o644)
    await disk.write(handle, typeof data === "string" ? Buffer.from(data) : data)
    await handle.sync()
    await handle.close()
    handle = undefined
    if (options.mtime) await fsp.utimes(temp, options.mtime, options.mtime)
    await fsp.rename(temp, file)
  } catch (error) {
    await handle?.close().catch(() => undefined)
    await fsp.rm(temp, { force: true }).catch(() => undefined)
    throw error
  }
  if (options.syncDir) await syncDirectory(path.dirname(file))
}

/** Writes `file` unless it already holds exactly `content`. */
export const writeIfChanged = async (disk: StoreDiskShape, file: string, content: string): Promise<void> => {
  try {
    if ((await fsp.readFile(file, "utf8")) === content) return
  } catch {
    // absent
  }
  await writeAtomic(disk, file, content, { syncDir: true })
}

/** Makes a rename in `dir` durable; where directories cannot be synced (Windows), it is skipped. */
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
