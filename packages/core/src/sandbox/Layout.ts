/**
 * What a sandboxed command sees of the filesystem: everything read-only, then the writable
 * paths, then the protected paths inside them read-only again. Computed from the settings and
 * what exists on disk (through `FileView`, so the rules have a table test).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type { SandboxSettings } from "./Settings.js"

/** Protected when present: the project's git directory (or `.git` file and the directory it points to). */
export const PROTECTED_GIT = [".git"] as const
/**
 * Config that decides what the agent may do (permissions, agents, custom tools, skills):
 * read-only when present, and held by an empty read-only directory while a sandboxed command
 * runs when absent, so a command cannot create it either.
 */
export const PROTECTED_CONFIG = [
  ".agent",
  ".opencode",
  ".claude",
  ".agents",
  "agent.json",
  "agent.jsonc",
  "opencode.json",
  "opencode.jsonc"
] as const
/** Instructions: read-only when present. */
export const PROTECTED_INSTRUCTIONS = ["AGENTS.md", "CLAUDE.md", "CONTEXT.md"] as const

export type MountKind = "writable" | "readonly" | "placeholder"

export interface Mount {
  readonly path: string
  readonly kind: MountKind
}

export interface Layout {
  /** In mount order: shallower paths first, so a deeper path's rule wins. */
  readonly mounts: ReadonlyArray<Mount>
  /** Writable paths that do not exist, so they are left out. */
  readonly missing: ReadonlyArray<string>
}

export interface FileView {
  readonly kind: (file: string) => "directory" | "file" | "missing"
  /** The real path (symlinks resolved), or the path itself when it does not exist. */
  readonly real: (file: string) => string
  /** The `gitdir:` a `.git` file points to, absolute. */
  readonly gitdir: (dotGit: string) => string | undefined
}

export const realFiles: FileView = {
  kind: (file) => {
    try {
      return fs.statSync(file).isDirectory() ? "directory" : "file"
    } catch {
      return "missing"
    }
  },
  real: (file) => {
    try {
      return fs.realpathSync.native(file)
    } catch {
      return file
    }
  },
  gitdir: (dotGit) => {
    try {
      const pointer = /^gitdir:\s*(.+)$/m.exec(fs.readFileSync(dotGit, "utf8"))?.[1]?.trim()
      return pointer === undefined ? undefined : path.resolve(path.dirname(dotGit), pointer)
    } catch {
      return undefined
    }
  }
}

export interface LayoutInput {
  readonly settings: SandboxSettings
  /** The project: the working directory and the git work tree. */
  readonly directory: string
  readonly worktree: string
  /** Directories from the work-tree root down to the working directory, where config is looked up. */
  readonly configDirs: ReadonlyArray<string>
  /** The system temp dirs. */
  readonly temporary: ReadonlyArray<string>
  /** The runtime's own scratch dirs a command may write: the session temp dir, the tool-output dir. */
  readonly scratch: ReadonlyArray<string>
  /** The runtime's own files a command must not change even under a writable path (the sandbox's state). */
  readonly internal: ReadonlyArray<string>
}

export const isWithin = (child: string, parent: string): boolean => {
  const relative = path.relative(parent, child)
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative))
}

const depth = (file: string) => file.split(path.sep).filter((part) => part !== "").length

/** The paths `settings` protects inside the project, present or not, with whether a placeholder may hold an absent one. */
export const protectedPaths = (configDirs: ReadonlyArray<string>, view: FileView): Array<{ readonly path: string; readonly hold: boolean }> => {
  const found: Array<{ path: string; hold: boolean }> = []
  for (const dir of configDirs) {
    for (const name of PROTECTED_GIT) {
      const dotGit = path.join(dir, name)
      const kind = view.kind(dotGit)
      if (kind === "missing") continue
      found.push({ path: dotGit, hold: false })
      const gitdir = kind === "file" ? view.gitdir(dotGit) : undefined
      if (gitdir !== undefined) found.push({ path: gitdir, hold: false })
    }
    for (const name of PROTECTED_CONFIG) found.push({ path: path.join(dir, name), hold: true })
    for (const name of PROTECTED_INSTRUCTIONS) found.push({ path: path.join(dir, name), hold: false })
  }
  return found
}

export const layout = (input: LayoutInput, view: FileView = realFiles): Layout => {
  const { settings } = input
  const candidates = settings.mode === "workspace-write"
    ? [input.directory, input.worktree, ...input.temporary, ...input.scratch, ...settings.writable]
    : settings.mode === "read-only"
    ? [...settings.writable]
    : []
  const missing: Array<string> = []
  const writable: Array<string> = []
  for (const candidate of candidates) {
    if (view.kind(candidate) === "missing") {
      missing.push(candidate)
      continue
    }
    const real = view.real(candidate)
    if (!writable.includes(real)) writable.push(real)
  }
  const insideWritable = (file: string) => writable.some((root) => isWithin(file, root))
  // A path the user made writable on purpose is not protected ("unless configured otherwise").
  const released = new Set(settings.writable.map((entry) => view.real(entry)))

  const readonly: Array<string> = []
  const placeholders: Array<string> = []
  const protect = (file: string, hold: boolean) => {
    const exists = view.kind(file) !== "missing"
    const real = exists ? view.real(file) : path.join(view.real(path.dirname(file)), path.basename(file))
    if (released.has(real) || !insideWritable(real)) return
    if (exists) readonly.push(real)
    else if (hold) placeholders.push(real)
  }
  for (const entry of protectedPaths(input.configDirs, view)) protect(entry.path, entry.hold)
  for (const entry of [...settings.readonly, ...input.internal]) {
    if (view.kind(entry) !== "missing") protect(entry, false)
  }

  const byPath = new Map<string, MountKind>()
  const strictness: Record<MountKind, number> = { writable: 0, readonly: 1, placeholder: 2 }
  const add = (file: string, kind: MountKind) => {
    const before = byPath.get(file)
    if (before === undefined || strictness[kind] > strictness[before]) byPath.set(file, kind)
  }
  for (const file of writable) add(file, "writable")
  for (const file of readonly) add(file, "readonly")
  for (const file of placeholders) add(file, "placeholder")
  const mounts = [...byPath].map(([file, kind]) => ({ path: file, kind }))
    // Stable: equal depths keep their order.
    .map((mount, index) => ({ mount, index }))
    .sort((a, b) => depth(a.mount.path) - depth(b.mount.path) || a.index - b.index)
    .map(({ mount }) => mount)
  return { mounts, missing }
}
