import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Tree from "../../src/snapshot/Tree.js"

const git = (env: Record<string, string>, cwd: string, ...args: Array<string>) =>
  execFileSync("git", args, { cwd, encoding: "utf8", env: { PATH: process.env.PATH, HOME: "/nonexistent", GIT_CONFIG_NOSYSTEM: "1", ...env } }).trim()

const temp = () => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agent-tree-")))

const file = (id: string, mode: Tree.FileMode = "100644"): Tree.FileEntry => ({ type: "file", mode, id })

describe("snapshot trees", () => {
  it("builds the same tree ids as git, and objects git accepts", async () => {
    const work = temp()
    const store = temp()
    try {
      // Names that test git's ordering: "a" (a directory sorts as "a/"), "a.b", "a-b", "a0", unicode, nesting.
      const files: Record<string, string> = {
        "a/inner.txt": "inner\n",
        "a.b": "dot\n",
        "a-b": "dash\n",
        "a0": "zero\n",
        "é.txt": "accent\n",
        "😀.txt": "emoji (a surrogate pair in JS strings)\n",
        "\ue000.txt": "private use, sorts before the emoji in UTF-16 but after it in UTF-8\n",
        "deep/er/est/file": "deep\n",
        "empty.txt": "",
        "run.sh": "#!/bin/sh\n"
      }
      for (const [name, content] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(path.join(work, name)), { recursive: true })
        fs.writeFileSync(path.join(work, name), content)
      }
      fs.chmodSync(path.join(work, "run.sh"), 0o755)
      fs.symlinkSync("a.b", path.join(work, "link"))

      git({}, store, "init", "-q", "--bare")
      const writer = new Tree.ObjectWriter(path.join(store, "objects"))
      const entries: Array<readonly [string, Tree.FileEntry]> = Object.entries(files).map(([name, content]) => [
        name,
        file(writer.write("blob", Buffer.from(content)), name === "run.sh" ? "100755" : "100644")
      ])
      entries.push(["link", file(writer.write("blob", Buffer.from("a.b")), "120000")])
      const ours = Tree.build(entries).id(writer)
      expect(writer.pending.count).toBe(entries.length + 5) // files and trees (root, a, deep, deep/er, deep/er/est)
      await writer.flush()
      expect(writer.pending.count).toBe(0)

      const env = { GIT_DIR: path.join(work, ".check"), GIT_WORK_TREE: work }
      git(env, work, "init", "-q")
      fs.writeFileSync(path.join(work, ".check", "info", "exclude"), ".check\n")
      git(env, work, "add", "-A")
      expect(ours).toBe(git(env, work, "write-tree"))
      // git reads our objects and finds nothing wrong with them
      expect(git({ GIT_DIR: store }, store, "ls-tree", "-r", "-z", "--name-only", ours).split("\0").filter(Boolean).sort()).toEqual(
        [...Object.keys(files), "link"].sort()
      )
      git({ GIT_DIR: store }, store, "fsck", "--strict", "--no-dangling")
    } finally {
      fs.rmSync(work, { recursive: true, force: true })
      fs.rmSync(store, { recursive: true, force: true })
    }
  })

  it("applies changes by copying only the changed path, and diffs by walking what differs", () => {
    const base = Tree.build([
      ["src/a.ts", file("1".repeat(40))],
      ["src/b.ts", file("2".repeat(40))],
      ["lib/x", file("3".repeat(40))],
      ["top", file("4".repeat(40))]
    ])
    const next = Tree.apply(
      base,
      new Map<string, Tree.FileEntry | undefined>([
        ["src/a.ts", file("5".repeat(40))],
        ["lib/x", undefined], // lib/ becomes empty and disappears
        ["top", undefined],
        ["top/now-a-dir", file("6".repeat(40))], // a file replaced by a directory
        ["src/b.ts", file("2".repeat(40))] // unchanged
      ])
    )
    expect(next.children.get("lib")).toBeUndefined()
    expect(Tree.lookup(next, "top/now-a-dir")?.id).toBe("6".repeat(40))
    expect(next.children.get("src")).not.toBe(base.children.get("src"))
    expect((next.children.get("src") as Tree.Dir).children.get("b.ts")).toBe((base.children.get("src") as Tree.Dir).children.get("b.ts"))
    expect(next.count).toBe(3)
    expect(Tree.diff(base, next).map((change) => [change.file, change.before?.id[0], change.after?.id[0]])).toEqual([
      ["lib/x", "3", undefined],
      ["src/a.ts", "1", "5"],
      ["top", "4", undefined],
      ["top/now-a-dir", undefined, "6"]
    ])
    expect(Tree.apply(base, new Map([["src/a.ts", file("1".repeat(40))]]))).toBe(base)
    expect(Tree.diff(base, base)).toEqual([])
  })

  it("a write that fails keeps its objects queued, and a removed object directory is made again", async () => {
    const store = temp()
    try {
      const objects = path.join(store, "objects")
      fs.writeFileSync(objects, "not a directory") // every write fails
      const writer = new Tree.ObjectWriter(objects)
      const ids = ["one", "two", "three"].map((text) => writer.write("blob", Buffer.from(text)))
      await expect(writer.flush()).rejects.toThrow()
      expect(writer.pending.count).toBe(3)
      fs.rmSync(objects)
      await writer.flush()
      expect(writer.pending.count).toBe(0)
      for (const id of ids) expect(fs.existsSync(path.join(objects, id.slice(0, 2), id.slice(2)))).toBe(true)
      // git removes empty object directories when it packs; a later write makes them again
      fs.rmSync(objects, { recursive: true })
      const four = writer.write("blob", Buffer.from("four"))
      await writer.flush()
      expect(fs.existsSync(path.join(objects, four.slice(0, 2), four.slice(2)))).toBe(true)
    } finally {
      fs.rmSync(store, { recursive: true, force: true })
    }
  })
})
