import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Store from "../../src/snapshot/Store.js"
import { liveDisk, type StoreDiskShape, writeAtomic } from "../../src/snapshot/StoreFile.js"

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "agent-store-test-"))

/** Writes half the data, then fails as a full disk does. */
const fullDisk: StoreDiskShape = {
  write: async (handle, data) => {
    await handle.write(data.subarray(0, data.length >> 1))
    throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" })
  }
}

describe("writeAtomic", () => {
  it("a full disk leaves the old file whole, or no file, and no temp file", async () => {
    const dir = tempDir()
    try {
      const file = path.join(dir, "HEAD")
      fs.writeFileSync(file, "ref: refs/heads/main\n")
      await expect(writeAtomic(fullDisk, file, "ref: refs/heads/other\n")).rejects.toThrow(/ENOSPC/)
      await expect(writeAtomic(fullDisk, path.join(dir, "config"), "[core]\n")).rejects.toThrow(/ENOSPC/)
      expect(fs.readdirSync(dir)).toEqual(["HEAD"])
      expect(fs.readFileSync(file, "utf8")).toBe("ref: refs/heads/main\n")

      await writeAtomic(liveDisk, file, "ref: refs/heads/other\n", { mode: 0o444, mtime: new Date(1_000_000) })
      expect(fs.readFileSync(file, "utf8")).toBe("ref: refs/heads/other\n")
      expect(fs.statSync(file).mode & 0o777).toBe(0o444)
      expect(fs.statSync(file).mtimeMs).toBe(1_000_000)
      expect(fs.readdirSync(dir)).toEqual(["HEAD"])
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("Store.inspect", () => {
  it.each([
    ["no store yet", undefined, undefined, undefined],
    ["a sound store", "ref: refs/heads/main\n", "[core]\n", undefined],
    ["a detached HEAD", `${"a".repeat(40)}\n`, "[core]\n", undefined],
    ["no config yet", "ref: refs/heads/main\n", undefined, undefined],
    ["an empty HEAD", "", "[core]\n", "HEAD is empty"],
    ["a HEAD of garbage", "\u0000\u0001xx", "[core]\n", "HEAD names no branch or commit"],
    ["an empty config", "ref: refs/heads/main\n", "", "config is empty"]
  ])("%s", (_name, head, config, expected) => {
    const dir = tempDir()
    try {
      if (head !== undefined) fs.writeFileSync(path.join(dir, "HEAD"), head)
      if (config !== undefined) fs.writeFileSync(path.join(dir, "config"), config)
      expect(Store.inspect(dir)).toBe(expected)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("Store repairs", () => {
  it("moveAside names the copy after the time, and never over an earlier one", () => {
    const parent = tempDir()
    try {
      const store = path.join(parent, "project")
      const now = new Date("2026-01-02T03:04:05.678Z")
      fs.mkdirSync(store)
      expect(Store.moveAside(store, now)).toBe(`${store}.damaged-2026-01-02T03-04-05-678Z`)
      fs.mkdirSync(store)
      expect(Store.moveAside(store, now)).toBe(`${store}.damaged-2026-01-02T03-04-05-678Z-2`)
      expect(fs.existsSync(store)).toBe(false)
    } finally {
      fs.rmSync(parent, { recursive: true, force: true })
    }
  })

  it("one process at a time repairs; the lock of a process that is gone is taken over", () => {
    const parent = tempDir()
    try {
      const store = path.join(parent, "project")
      expect(Store.tryLock(store)).toBe(true)
      expect(Store.tryLock(store)).toBe(false) // held by a live process (this one)
      Store.unlock(store)
      fs.mkdirSync(`${store}.repairing`)
      fs.writeFileSync(path.join(`${store}.repairing`, "pid"), "2147483646")
      expect(Store.tryLock(store)).toBe(true)
      expect(fs.readFileSync(path.join(`${store}.repairing`, "pid"), "utf8")).toBe(String(process.pid))
      Store.unlock(store)
      expect(fs.existsSync(`${store}.repairing`)).toBe(false)
    } finally {
      fs.rmSync(parent, { recursive: true, force: true })
    }
  })
})
