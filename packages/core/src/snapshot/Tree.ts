import { createHash } from "node:crypto"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import * as zlib from "node:zlib"
import { liveDisk, type StoreDiskShape, writeAtomic } from "./StoreFile.js"

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
    const entries: Array<{ readonly name: string; readonly key: string; readonly mode: string; readonly id: string }> = []
    let size = 0
    let wide = false
    for (const [name, child] of this.children) {
      const mode = child.type === "file" ? child.mode : "40000"
      entries.push({ name, key: child.type === "dir" ? `${name}/` : name, mode, id: child.type === "file" ? child.id : child.id(writer) })
      const bytes = Buffer.byteLength(name, "utf8")
      if (bytes !== name.length || WIDE.test(name)) wide = true
      size += mode.length + 1 + bytes + 1 + 20
    }
    entries.sort(wide ? compareBytes : compareAscii)
    const body = Buffer.allocUnsafe(size)
    let offset = 0
    for (const entry of entries) {
      offset += body.write(`${entry.mode} ${entry.name}\0`, offset, "utf8")
      offset += body.write(entry.id, offset, "hex")
    }
    this.cachedId = writer.write("tree", body)
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

/**
 * Git orders tree entries by the bytes of their names, with directory names compared as if they
 * ended in "/". For names without characters above U+D7FF, JavaScript's string order is that order.
 */
const WIDE = /[\ud800-\uffff]/
const compareAscii = (a: { readonly key: string }, b: { readonly key: string }) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
const compareBytes = (a: { readonly key: string }, b: { readonly key: string }) =>
  Buffer.compare(Buffer.from(a.key, "utf8"), Buffer.from(b.key, "utf8"))

export const sameFile = (a: FileEntry | undefined, b: FileEntry | undefined): boolean =>
  a === b || (a !== undefined && b !== undefined && a.id === b.id && a.mode === b.mode)

/** Objects this small fill one disk block whether compressed or not: stored, they cost no zlib call. */
const STORE_BELOW = 4096

/** A zlib stream (RFC 1950): deflate for larger objects, stored blocks for small ones (git reads both). */
const zlibEncode = (data: Buffer): Buffer => {
  if (data.length >= STORE_BELOW) return zlib.deflateSync(data, { level: 1 })
  const out = Buffer.allocUnsafe(2 + 5 + data.length + 4)
  out[0] = 0x78
  out[1] = 0x01
  out[2] = 0x01 // final block, stored
  out.writeUInt16LE(data.length, 3)
  out.writeUInt16LE(~data.length & 0xffff, 5)
  data.copy(out, 7)
  let a = 1
  let b = 0
  for (let index = 0; index < data.length; index++) {
    a = (a + data[index]!) % 65521
    b = (b + a) % 65521
  }
  out.writeUInt32BE(((b << 16) | a) >>> 0, 7 + data.length)
  return out
}

/**
 * Stores git loose objects (zlib-compressed `<type> <size>\0<body>`, named by SHA-1), each once.
 * `write` only hashes and queues: files are created by `flush` (in the background, or before git
 * reads the store), so a step's critical path creates no files.
 */
/** Object files written (and synced) at the same time. */
const WRITES_AT_ONCE = 8

export class ObjectWriter {
  private readonly known = new Set<string>()
  private readonly waiting = new Map<string, Buffer>()
  private waitingBytes = 0
  private chain: Promise<void> = Promise.resolve()
  /** Bytes written (compressed) since this writer was made. */
  written = 0
  /** Loose object files created since this writer was made. */
  files = 0
  constructor(private readonly objectsDir: string, private readonly disk: StoreDiskShape = liveDisk) {}

  static hash(type: string, body: Buffer): string {
    return createHash("sha1").update(`${type} ${body.length}\0`).update(body).digest("hex")
  }

  write(type: "blob" | "tree", body: Buffer): string {
    const header = Buffer.from(`${type} ${body.length}\0`)
    const id = createHash("sha1").update(header).update(body).digest("hex")
    if (this.known.has(id) || this.waiting.has(id)) return id
    this.waiting.set(id, Buffer.concat([header, body]))
    this.waitingBytes += body.length
    return id
  }

  /** Objects queued and not yet on disk, and their size. */
  get pending(): { readonly count: number; readonly bytes: number } {
    return { count: this.waiting.size, bytes: this.waitingBytes }
  }

  /**
   * Puts every queued object on disk; calls run one after another. Each object is synced before
   * it gets its name, a few at a time (the syncs overlap: about 1 ms an object instead of 5-9).
   */
  flush(): Promise<void> {
    const batch = [...this.waiting]
    this.waiting.clear()
    this.waitingBytes = 0
    const run = this.chain.catch(() => undefined).then(async () => {
      for (let index = 0; index < batch.length; index += WRITES_AT_ONCE) {
        const group = batch.slice(index, index + WRITES_AT_ONCE)
        const results = await Promise.allSettled(group.map(([id, raw]) => this.store(id, raw)))
        const failed = results.find((result): result is PromiseRejectedResult => result.status === "rejected")
        if (failed) {
          // Keep what is not written yet for the next flush: snapshots name these objects.
          const left = [...group.filter((_, at) => results[at]!.status === "rejected"), ...batch.slice(index + WRITES_AT_ONCE)]
          for (const [rest, data] of left) {
            if (!this.waiting.has(rest)) {
              this.waiting.set(rest, data)
              this.waitingBytes += data.length
            }
          }
          throw failed.reason
        }
      }
    })
    this.chain = run
    return run
  }

  private async store(id: string, raw: Buffer): Promise<void> {
    const dir = path.join(this.objectsDir, id.slice(0, 2))
    const file = path.join(dir, id.slice(2))
    for (let attempt = 0; ; attempt++) {
      try {
        await fsp.access(file)
        break
      } catch {
        // absent: write it
      }
      try {
        await fsp.mkdir(dir, { recursive: true })
        const data = zlibEncode(raw)
        // Named tmp_obj_* as git's own, so `git prune` clears one a crash leaves behind.
        await writeAtomic(this.disk, file, data, { mode: 0o444, tempPrefix: "tmp_obj_" })
        this.written += data.length
        this.files++
        break
      } catch (error) {
        // git removes empty object directories when it packs: make the directory again.
        if ((error as NodeJS.ErrnoException).code !== "ENOENT" || attempt >= 3) throw error
      }
    }
    this.known.add(id)
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

/** The entry at `file`, a file or a directory ("" is the root). */
export const find = (root: Dir, file: string): Entry | undefined => {
  if (file === "") return root
  let node: Entry | undefined = root
  for (const segment of file.split("/")) {
    if (node?.type !== "dir") return undefined
    node = node.children.get(segment)
  }
  return node
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
    // The path itself as a file, and as a directory; the worktree has at most one of them, so a
    // file named by a change wins over a directory (whose files then arrive as removals).
    let file = existing?.type === "file" ? existing : undefined
    let sub = existing?.type === "dir" ? existing : undefined
    for (const change of group) if (change.segments.length === depth + 1) file = change.entry
    const deeper = group.filter((change) => change.segments.length > depth + 1)
    if (deeper.length > 0) sub = applyAt(sub, deeper, depth + 1)
    const next: Entry | undefined = file ?? (sub && sub.children.size > 0 ? sub : undefined)
    if (next === existing || (next?.type === "file" && existing?.type === "file" && sameFile(next, existing))) continue
    if (next === undefined) current().delete(name)
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
