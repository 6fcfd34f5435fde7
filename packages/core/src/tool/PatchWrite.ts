import { randomBytes } from "node:crypto"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import * as FileDisk from "./FileDisk.js"

/**
 * Writes the files of one patch all or nothing, as far as a disk allows. First every new content
 * is staged (temp files beside the targets, flushed): a full disk fails here, before any file
 * changed. Then the renames, which need no space: a deleted file is renamed aside (kept until the
 * end), a written one replaced. Should a rename fail midway, the files already changed are put
 * back, again atomically: a written file gets its original bytes (or is removed if it was new),
 * a deleted one is renamed back. Whatever happens, each file is either as it was or as the patch
 * wants it, never half written, and the outcome says which is which.
 */

export interface FileWrite {
  readonly file: string
  /** The new content; undefined to delete the file. */
  readonly bytes: Uint8Array | undefined
  /** The content before the patch; undefined when the file did not exist. */
  readonly original: Uint8Array | undefined
}

export type Outcome =
  | {
    readonly _tag: "Written"
    /** New modification times of the written files. */
    readonly mtimes: ReadonlyMap<string, number>
  }
  | {
    readonly _tag: "Failed"
    /** The file whose write failed, and why. */
    readonly file: string
    readonly error: unknown
    /** Files that were changed and then put back as they were. */
    readonly restored: ReadonlyArray<string>
    /** Files that were changed and could not be put back: they hold the patch's content. */
    readonly applied: ReadonlyArray<{ readonly file: string; readonly error: unknown }>
    /** Modification times of the files restored or applied (the tool records them as seen). */
    readonly mtimes: ReadonlyMap<string, number>
  }

type Done =
  | { readonly kind: "written"; readonly write: FileWrite }
  | { readonly kind: "deleted"; readonly write: FileWrite; readonly aside: string }

export const writeFiles = async (disk: FileDisk.FileDiskShape, writes: ReadonlyArray<FileWrite>): Promise<Outcome> => {
  const staged = new Map<FileWrite, FileDisk.Staged>()
  for (const write of writes) {
    if (write.bytes === undefined) continue
    try {
      staged.set(write, await FileDisk.stage(disk, write.file, write.bytes))
    } catch (error) {
      for (const pending of staged.values()) await FileDisk.discard(pending)
      return { _tag: "Failed", file: write.file, error, restored: [], applied: [], mtimes: new Map() }
    }
  }

  const done: Array<Done> = []
  const mtimes = new Map<string, number>()
  for (const write of writes) {
    try {
      const pending = staged.get(write)
      if (pending !== undefined) {
        staged.delete(write)
        mtimes.set(write.file, await FileDisk.commit(disk, pending))
        done.push({ kind: "written", write })
      } else if (write.original !== undefined) {
        const aside = path.join(path.dirname(write.file), `.${path.basename(write.file)}.${process.pid}.${randomBytes(4).toString("hex")}.deleted`)
        await disk.rename(write.file, aside)
        done.push({ kind: "deleted", write, aside })
      }
    } catch (error) {
      for (const pending of staged.values()) await FileDisk.discard(pending)
      return { _tag: "Failed", file: write.file, error, ...(await rollback(disk, done)) }
    }
  }
  for (const entry of done) if (entry.kind === "deleted") await fsp.rm(entry.aside, { force: true }).catch(() => undefined)
  return { _tag: "Written", mtimes }
}

/** Puts back what `done` changed, last first. */
const rollback = async (disk: FileDisk.FileDiskShape, done: ReadonlyArray<Done>) => {
  const restored: Array<string> = []
  const applied: Array<{ file: string; error: unknown }> = []
  const mtimes = new Map<string, number>()
  for (const entry of [...done].reverse()) {
    const { file, original } = entry.write
    try {
      if (entry.kind === "deleted") await disk.rename(entry.aside, file)
      else if (original === undefined) await fsp.rm(file, { force: true })
      else mtimes.set(file, await FileDisk.replace(disk, file, original))
      restored.push(file)
    } catch (error) {
      applied.push({ file, error })
      if (entry.kind === "written") mtimes.set(file, await fsp.stat(file).then((stat) => stat.mtimeMs, () => Date.now()))
    }
  }
  return { restored: restored.reverse(), applied: applied.reverse(), mtimes }
}
