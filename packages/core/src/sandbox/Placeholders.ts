/**
 * Placeholders: an empty directory made where an absent config file would be (agent.json, .agent/,
 * ...), bound read-only in the sandbox so a command cannot create it. Made before the first sandbox
 * that needs one and removed after the last, counted by path; owned by the sandbox layer.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { type Mount, PROTECTED_CONFIG, realFiles } from "./Layout.js"

const tryRemoveDir = (dir: string) => {
  try {
    fs.rmdirSync(dir)
  } catch {
    // In use, not empty, or gone: leave it.
  }
}

export class Placeholders {
  private readonly held = new Map<string, number>()

  /**
   * A runtime that died while a command ran may have left a placeholder: an empty directory where a
   * config file would be. Nothing but the sandbox makes those.
   */
  static removeStale(configDirs: ReadonlyArray<string>): void {
    for (const dir of configDirs) {
      for (const name of PROTECTED_CONFIG) {
        if (name.startsWith(".")) continue
        const file = path.join(dir, name)
        if (realFiles.kind(file) === "directory") tryRemoveDir(file)
      }
    }
  }

  /**
   * The mounts of one sandbox with its placeholders held; one created meanwhile is protected as it is
   * instead. A path that looks present because another sandbox holds it as a placeholder is held too:
   * it would vanish under this one when that sandbox ends (bwrap: "Can't get type of source").
   */
  holdFor(mounts: ReadonlyArray<Mount>): Array<Mount> {
    return mounts.flatMap((mount): Array<Mount> => {
      if (mount.kind === "writable" || (mount.kind === "readonly" && !this.held.has(mount.path))) return [mount]
      if (this.hold(mount.path)) return [{ path: mount.path, kind: "placeholder" }]
      return realFiles.kind(mount.path) === "missing" ? [] : [{ path: mount.path, kind: "readonly" }]
    })
  }

  /** The mounts as `holdFor` would give them now, holding nothing: what a kept sandbox is matched on. */
  seen(mounts: ReadonlyArray<Mount>): Array<Mount> {
    return mounts.map((mount) => mount.kind === "readonly" && this.held.has(mount.path) ? { path: mount.path, kind: "placeholder" } : mount)
  }

  letGo(file: string): void {
    const count = (this.held.get(file) ?? 1) - 1
    if (count > 0) return void this.held.set(file, count)
    this.held.delete(file)
    tryRemoveDir(file)
  }

  removeAll(): void {
    for (const file of this.held.keys()) tryRemoveDir(file)
    this.held.clear()
  }

  private hold(file: string): boolean {
    const count = this.held.get(file) ?? 0
    if (count === 0) {
      try {
        fs.mkdirSync(file)
      } catch {
        return false // created meanwhile: it is protected as a present path instead
      }
    }
    this.held.set(file, count + 1)
    return true
  }
}
