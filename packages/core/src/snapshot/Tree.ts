import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as zlib from "node:zlib"

/**
 * Snapshots as git trees, built in memory. A tree is immutable: a change copies the directories on
 * its path and shares everything else, so a snapshot costs the changed files plus one tree object
 * per changed directory, and two snapshots of one process compare by walking only what differs.
 * Object ids and encodings are git's, so the store stays readable (and packable) by git itself.
 */

export type FileMode = "100644" | "100755" | "120000" | "160000"

export interface FileEntry {
  readonly type: "file"
  readonly mode: FileMode
  /** Object id (hex) of the content: a blob, or a commit for a nested repository. */
  readonly id: string
}

export class Dir {
  readonly type = "dir" as const
  /** Number of files below. */
  readonly count: number
  private cachedId: string | undefined
  constructor(readonly children: ReadonlyMap<string, Entry>) {
    let count = 0
    for (const child of children.values()) count += child.type === "file" ? 1 : child.count
    this.count = count
  }
  /** The tree's object id, computed once and written through `writer` when it is new. */
  id(writer: ObjectWriter): string {
    if (this.cachedId !== undefined) return this.cachedId
    const names = [...this.children.keys()].sort((a, b) => compareNames(a, this.children.get(a)!, b, this.children.get(b)!))
    const chunks: Array<Buffer> = []
    for (const name of names) {
      const child = this.children.get(name)!
      const mode = child.type === "file" ? child.mode : "40000"
      const childId = child.type === "file" ? child.id : child.id(writer)
      chunks.push(Buffer.from(`${mode} ${name}\0`, "utf8"), Buffer.from(childId, "hex"))
    }
    this.cachedId = writer.write("tree", Buffer.concat(chunks))
    return this.cachedId
  }
  /** Records an id already known to be stored (a tree read back from git). */
  withId(id: string): this {
    this.cachedId = id
    return this
  }
}

export type Entry = FileEntry | Dir

export const EMPTY = new Dir(new Map())

/** Git orders tree entries by name bytes, with directory names compared as if they ended in "/". */
const compareNames = (a: string, entryA: Entry, b: string, entryB: Entry): number =>
  Buffer.compare(
    Buffer.from(entryA.type === "dir" ? `${a}/` : a, "utf8"),
    Buffer.from(entryB.type === "dir" ? `${b}/` : b, "utf8")
  )

export const sameFile = (a: FileEntry | undefined, b: FileEntry | undefined): boolean =>
  a === b || (a !== undefined && b !== undefined && a.id === b.id && a.mode === b.mode)

/** Writes git loose objects (zlib-deflated `<type> <size>\0<body>`, named by SHA-1) once each. */
export class ObjectWriter {
  private readonly known = new Set<string>()
  /** Bytes written (compressed) since this writer was made. */
  written = 0
  constructor(private readonly objectsDir: string) {}

  static hash(type: string, body: Buffer): string {
    return createHash("sha1").update(`${type} ${body.length}\0`).update(body).digest("hex")
  }

  write(type: "blob" | "tree", body: Buffer): string {
    const id = ObjectWriter.hash(type, body)
    if (this.known.has(id)) return id
    const dir = path.join(this.objectsDir, id.slice(0, 2))
    const file = path.join(dir, id.slice(2))
    if (!fs.existsSync(file)) {
      fs.mkdirSync(dir, { recursive: true })
      const data = zlib.deflateSync(Buffer.concat([Buffer.from(`${type} ${body.length}\0`), body]), { level: 1 })
      const temp = path.join(dir, `tmp_${process.pid}_${Math.random().toString(36).slice(2)}`)
      fs.writeFileSync(temp, data, { mode: 0o444 })
      fs.renameSync(temp, file)
      this.written += data.length
    }
    this.known.add(id)
    return id
  }

  /** Forget what was written (after a garbage collection may have removed objects). */
  reset() {
    this.known.clear()
  }
}

/** The entry at `file` (a `/`-separated relative path), if it is a file. */
export const lookup = (root: Dir, file: string): FileEntry | undefined => {
  let node: Entry | undefined = root
  for (const segment of file.split("/")) {
    if (node?.type !== "dir") return undefined
    node = node.children.get(segment)
  }
  return node?.type === "file" ? node : undefined
}

/** Applies changes (undefined = removed); directories left empty disappear, as in git. */
export const apply = (root: Dir, changes: ReadonlyMap<string, FileEntry | undefined>): Dir => {
  if (changes.size === 0) return root
  const split = [...changes].map(([file, entry]) => ({ segments: file.split("/"), entry }))
  return applyAt(root, split, 0) ?? EMPTY
}

const applyAt = (
  dir: Dir | undefined,
  changes: ReadonlyArray<{ readonly segments: ReadonlyArray<string>; readonly entry: FileEntry | undefined }>,
  depth: number
): Dir | undefined => {
  const groups = new Map<string, Array<(typeof changes)[number]>>()
  for (const change of changes) {
    const name = change.segments[depth]!
    let group = groups.get(name)
    if (!group) groups.set(name, (group = []))
    group.push(change)
  }
  let children: Map<string, Entry> | undefined
  const current = () => (children ??= new Map(dir?.children))
  for (const [name, group] of groups) {
    const existing = (children ?? dir?.children)?.get(name)
    // A leaf change first (a file replaced by a directory arrives as a removal plus deeper adds).
    let next: Entry | undefined = existing
    for (const change of group) {
      if (change.segments.length === depth + 1) {
        if (change.entry) next = change.entry
        else if (next?.type === "file") next = undefined
      }
    }
    const deeper = group.filter((change) => change.segments.length > depth + 1)
    if (deeper.length > 0) {
      const sub = applyAt(next?.type === "dir" ? next : undefined, deeper, depth + 1)
      next = sub
    }
    if (next === existing || (next?.type === "file" && existing?.type === "file" && sameFile(next, existing))) continue
    if (next === undefined || (next.type === "dir" && next.children.size === 0)) current().delete(name)
    else current().set(name, next)
  }
  if (!children) return dir
  return children.size === 0 ? undefined : new Dir(children)
}

export interface Change {
  readonly file: string
  readonly before: FileEntry | undefined
  readonly after: FileEntry | undefined
}

/** Files that differ between two trees, sorted, walking only subtrees that differ. */
export const diff = (before: Dir, after: Dir, writer?: ObjectWriter): Array<Change> => {
  const out: Array<Change> = []
  const walk = (a: Entry | undefined, b: Entry | undefined, file: string) => {
    if (a === b) return
    const dirA = a?.type === "dir" ? a : undefined
    const dirB = b?.type === "dir" ? b : undefined
    if (dirA || dirB) {
      if (dirA && dirB && writer && dirA.id(writer) === dirB.id(writer)) return
      const names = new Set([...(dirA?.children.keys() ?? []), ...(dirB?.children.keys() ?? [])])
      for (const name of names) walk(dirA?.children.get(name), dirB?.children.get(name), file ? `${file}/${name}` : name)
    }
    const fileA = a?.type === "file" ? a : undefined
    const fileB = b?.type === "file" ? b : undefined
    if ((fileA || fileB) && !sameFile(fileA, fileB)) out.push({ file, before: fileA, after: fileB })
  }
  walk(before, after, "")
  return out.sort((x, y) => (x.file < y.file ? -1 : x.file > y.file ? 1 : 0))
}

/** Builds a tree from flat entries (as `git ls-files -s` or `git ls-tree -r` list them). */
export const build = (entries: Iterable<readonly [string, FileEntry]>): Dir => {
  interface Mutable {
    readonly children: Map<string, Mutable | FileEntry>
  }
  const root: Mutable = { children: new Map() }
  for (const [file, entry] of entries) {
    const segments = file.split("/")
    let node = root
    for (let index = 0; index < segments.length - 1; index++) {
      const segment = segments[index]!
      let next = node.children.get(segment)
      if (!next || "type" in next) node.children.set(segment, (next = { children: new Map() }))
      node = next as Mutable
    }
    node.children.set(segments.at(-1)!, entry)
  }
  const freeze = (node: Mutable): Dir => {
    const children = new Map<string, Entry>()
    for (const [name, child] of node.children) children.set(name, "type" in child ? child : freeze(child as Mutable))
    return new Dir(children)
  }
  return freeze(root)
}

/** Every file of a tree, `[path, entry]`. */
export const files = function*(root: Dir, prefix = ""): Generator<readonly [string, FileEntry]> {
  for (const [name, child] of root.children) {
    const file = prefix ? `${prefix}/${name}` : name
    if (child.type === "file") yield [file, child]
    else yield* files(child, file)
  }
}
