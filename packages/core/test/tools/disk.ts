import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { FileDisk, type FileDiskShape, liveDisk } from "../../src/tool/FileDisk.js"

export const asRoot = process.getuid?.() === 0

/** How the full disk is made, for test names. */
export const diskKind = asRoot ? "a full tmpfs" : "simulated: not root, no tmpfs"

/** The names in `dir` other than `keep`: what a failed write left behind (temp files start with a dot). */
export const strayFiles = (dir: string, keep: ReadonlyArray<string>) =>
  fs.readdirSync(dir).filter((name) => !keep.includes(name))

/**
 * A directory whose disk has about `free` bytes left. As root (CI runs as root) it is a small
 * tmpfs mounted there, `files` written to it and the rest filled up: a mount that fails fails
 * the test. Otherwise `disk` is a FileDisk (provide it to the tool) that writes until `free`
 * bytes were written, then fails as a full disk does: part of the data written, then ENOSPC.
 * (In that case, the real disk is not full: the test shows the new code's behaviour, not that
 * the old in-place write truncated the file.)
 */
export const fullDisk = (dir: string, files: Readonly<Record<string, string | Uint8Array>>, free: number) => {
  const writeFiles = () => {
    fs.mkdirSync(dir, { recursive: true })
    for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), content)
  }
  if (!asRoot) {
    return Effect.sync(() => {
      writeFiles()
      let left = free
      const disk: FileDiskShape = {
        ...liveDisk,
        write: async (handle, data) => {
          if (data.length <= left) {
            left -= data.length
            return liveDisk.write(handle, data)
          }
          await handle.write(data.subarray(0, left))
          left = 0
          throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" })
        }
      }
      return { disk, filler: undefined as string | undefined }
    })
  }
  return Effect.acquireRelease(
    Effect.sync(() => {
      fs.mkdirSync(dir, { recursive: true })
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", dir])
      writeFiles()
      const filler = path.join(dir, ".filler")
      try {
        fs.writeFileSync(filler, Buffer.alloc(8 * 1024 * 1024, 1))
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error
      }
      expect(fs.statfsSync(dir).bavail).toBe(0)
      fs.truncateSync(filler, Math.max(0, fs.statSync(filler).size - free))
      return { disk: liveDisk, filler: ".filler" as string | undefined }
    }),
    () => Effect.sync(() => execFileSync("umount", ["-l", dir]))
  )
}

/** Provides the (possibly simulated) full disk to a tool's construction. */
export const onDisk = (disk: FileDiskShape) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provideService(effect, FileDisk, disk)
