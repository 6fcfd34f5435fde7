import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Git from "./Git.js"
import { isGitPath, remember, type SnapshotDeps } from "./SnapshotState.js"
import { type RestoreFile, SnapshotMissing } from "./SnapshotTypes.js"
import { commit, flushObjects, refresh } from "./StatCache.js"
import { openForRead, openToLook } from "./StoreAccess.js"
import * as Tree from "./Tree.js"

// Reading stored snapshots back (their trees, changes and objects) and putting files back.

const treeOf = (deps: SnapshotDeps, id: string) =>
  Effect.gen(function*() {
    const cached = deps.state.roots.get(id)
    if (cached) return cached
    yield* openToLook(deps)
    yield* flushObjects(deps)
    const output = yield* deps.git(["ls-tree", "-r", "-z", "--full-tree", id]).pipe(
      Effect.mapError(() => new SnapshotMissing({ id }))
    )
    const entries: Array<readonly [string, Tree.FileEntry]> = []
    for (const line of Git.splitZ(output)) {
      // "<mode> <type> <id>\t<path>"
      const tab = line.indexOf("\t")
      const [mode, , object] = line.slice(0, tab).split(" ")
      entries.push([line.slice(tab + 1), { type: "file", mode: mode as Tree.FileMode, id: object! }])
    }
    const dir = Tree.build(entries).withId(id)
    deps.state.cacheRoot(id, dir)
    return dir
  })

export const changes = Effect.fn("Snapshot.changes")(function*(deps: SnapshotDeps, from: string, to: string) {
  const [a, b] = [yield* treeOf(deps, from), yield* treeOf(deps, to)]
  return Tree.diff(a, b, deps.writer)
})

export const entries = Effect.fn("Snapshot.entries")(function*(deps: SnapshotDeps, snapshot: string, files: ReadonlyArray<string>) {
  const tree = yield* treeOf(deps, snapshot)
  return new Map(files.map((file) => [file, Tree.lookup(tree, file)] as const))
})

export const read = Effect.fn("Snapshot.read")(function*(deps: SnapshotDeps, ids: ReadonlyArray<string>) {
  yield* openToLook(deps)
  yield* flushObjects(deps)
  const objects = yield* Git.readObjects(deps.git, ids).pipe(Effect.orElseSucceed(() => new Map<string, Buffer>()))
  for (const id of ids) if (!objects.has(id)) return yield* new SnapshotMissing({ id })
  return objects
})

// --- restoring ---------------------------------------------------------------------------

/** Removes directories left empty by a removal, up to the project root. */
const pruneEmptyDirs = (root: string, file: string) => {
  let dir = path.dirname(path.join(root, file))
  while (dir !== root && dir.startsWith(root + path.sep)) {
    try {
      fs.rmdirSync(dir)
    } catch {
      return
    }
    dir = path.dirname(dir)
  }
}

const writeFile = (root: string, file: string, entry: Tree.FileEntry, content: Buffer) => {
  const absolute = path.join(root, file)
  fs.mkdirSync(path.dirname(absolute), { recursive: true })
  if (entry.mode === "120000") {
    fs.rmSync(absolute, { force: true })
    fs.symlinkSync(content.toString("utf8"), absolute)
    return
  }
  const temp = path.join(path.dirname(absolute), `.${path.basename(absolute)}.agent-restore-${process.pid}`)
  fs.writeFileSync(temp, content, { mode: entry.mode === "100755" ? 0o755 : 0o644 })
  fs.chmodSync(temp, entry.mode === "100755" ? 0o755 : 0o644)
  fs.renameSync(temp, absolute)
}

/** A path where a file cannot be put: a directory sits there or on the way. */
const blocked = (root: string, file: string): boolean => {
  const segments = file.split("/")
  for (let index = 1; index <= segments.length; index++) {
    const partial = path.join(root, ...segments.slice(0, index))
    try {
      const stat = fs.lstatSync(partial)
      if (index < segments.length && !stat.isDirectory()) return true
      if (index === segments.length && stat.isDirectory()) return true
    } catch {
      return false
    }
  }
  return false
}

export const restore = Effect.fn("Snapshot.restore")(function*(deps: SnapshotDeps, files: ReadonlyArray<RestoreFile>) {
  const { root, state } = deps
  return yield* deps.lock.withPermits(1)(Effect.gen(function*() {
    yield* openForRead(deps)
    const list = files.filter((file) => !isGitPath(file.file))
    // The files as they are now: the "before" snapshot, and what conflicts are checked against.
    yield* commit(deps, refresh(deps, list.map((file) => file.file)))
    const before = remember(deps, state.current)
    const conflicts: Array<string> = []
    const todo: Array<RestoreFile> = []
    for (const file of list) {
      const now = Tree.lookup(state.current, file.file)
      if (!Tree.sameFile(now, file.expected)) conflicts.push(file.file)
      else if (!Tree.sameFile(now, file.target)) todo.push(file)
    }
    const ids = todo.flatMap((file) => (file.target && file.target.mode !== "160000" ? [file.target.id] : []))
    const contents = yield* read(deps, ids)
    const restored: Array<string> = []
    for (const file of todo) {
      if (file.target?.mode === "160000") continue // a nested repository: not ours to change
      if (file.target && blocked(root, file.file)) {
        conflicts.push(file.file)
        continue
      }
      if (file.target) writeFile(root, file.file, file.target, contents.get(file.target.id)!)
      else {
        fs.rmSync(path.join(root, file.file), { force: true })
        pruneEmptyDirs(root, file.file)
      }
      restored.push(file.file)
    }
    yield* commit(deps, refresh(deps, restored))
    const after = remember(deps, state.current)
    return { before, after, restored: list.filter((file) => !conflicts.includes(file.file)).map((file) => file.file), conflicts }
  }))
})
