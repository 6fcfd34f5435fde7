import { DeniedError, type ToolPart } from "@agent/domain"
import { ScriptedModel, TestInstance, TestRuntime, TestToolContext } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"

import { Instance } from "../../src/runtime/Instance.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import type * as Tool from "../../src/tool/Tool.js"
import { ToolRegistry } from "../../src/tool/ToolRegistry.js"
import * as FileSearch from "../../src/tool/FileSearch.js"
import * as Glob from "../../src/tools/Glob.js"
import * as List from "../../src/tools/List.js"
import { sandboxWithAndWithoutRipgrep } from "./engines.js"
import { withRipgrep } from "./ripgrep.js"

/** A tool context whose `ask` records requests and denies the listed permissions. */
const makeContext = (deny: ReadonlyArray<string> = []) => TestToolContext.make({ deny })

const write = (file: string, content = "x\n") => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, content)
}

/** Gives each file an mtime `index` minutes after a fixed point, so "newest first" is known. */
const stamp = (files: ReadonlyArray<string>) =>
  files.forEach((file, index) => {
    const time = new Date(Date.UTC(2024, 0, 1, 0, index))
    fs.utimesSync(file, time, time)
  })

/**
 * A tree exercising ripgrep's rules: nested and negated .gitignore entries, an .ignore file,
 * ignored directories, hidden files, a nested repository, names with spaces, a symlink.
 */
const generateTree = (root: string, size = 400) => {
  const exts = [".ts", ".js", ".md", ".log", ".txt", ".json"]
  const dirs = ["src", "src/lib", "src/lib/deep", "docs", "gen", "build", "packages/a/src", "packages/b/dist", ".config", "space dir"]
  for (let i = 0; i < size; i++) {
    const dir = dirs[i % dirs.length]!
    const ext = exts[(i * 7) % exts.length]!
    const body = i % 5 === 0 ? `export const value${i} = "hello ${i}"\nfoo${i}\n` : `line one\nplain ${i}\n`
    write(path.join(root, dir, `${["alpha", "beta", "cat", "delta"][i % 4]}${i}${ext}`), body)
  }
  write(path.join(root, ".gitignore"), "build/\n*.log\n!keep*.log\n/gen\n")
  write(path.join(root, "packages/.gitignore"), "dist\n")
  write(path.join(root, "src/lib/.gitignore"), "deep/*.md\n!important.log\n")
  write(path.join(root, "src/lib/important.log"), "hello important\n")
  write(path.join(root, "keep-me.log"), "hello kept\n")
  write(path.join(root, "src/.ignore"), "*.json\n")
  write(path.join(root, ".hidden.ts"), "export const hidden = 'hello'\n")
  write(path.join(root, "node_modules/pkg/index.js"), "module.exports = 'hello'\n")
  write(path.join(root, "nested/.git/HEAD"), "ref: refs/heads/main\n")
  write(path.join(root, "nested/.gitignore"), "secret.ts\n")
  write(path.join(root, "nested/secret.ts"), "hello secret\n")
  write(path.join(root, "nested/gen/visible.ts"), "hello nested gen\n")
  write(path.join(root, "binary.dat"), Buffer.from([104, 101, 108, 108, 111, 0, 1, 2]).toString("latin1"))
  fs.symlinkSync(path.join(root, "src"), path.join(root, "link-to-src"))
}

const sorted = (files: ReadonlyArray<string>) => [...files].sort()
const relative = (root: string, files: ReadonlyArray<string>) => sorted(files.map((file) => path.relative(root, file)))

describe("FileSearch", () => {
  it.scopedLive("the built-in walker follows ripgrep's ignore rules", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const root = box.path("project")
      generateTree(root, 40)
      const search = FileSearch.make(box.instance, { engine: "builtin" })
      const all = relative(root, (yield* search.files({ cwd: root })).files)

      expect(all).toContain(".gitignore")
      expect(all).toContain(".hidden.ts") // hidden files are listed
      expect(all).toContain("keep-me.log") // re-included by a negation
      expect(all).toContain("src/lib/important.log") // re-included by a nested .gitignore
      expect(all).toContain("nested/gen/visible.ts") // `/gen` is anchored to the root's .gitignore
      expect(all).toContain("node_modules/pkg/index.js") // not ignored by any file here
      for (const file of all) {
        expect(file).not.toMatch(/^build\//)
        expect(file).not.toMatch(/^gen\//)
        expect(file).not.toMatch(/^packages\/b\/dist\//)
        expect(file).not.toMatch(/(^|\/)\.git\//)
        expect(file).not.toMatch(/^link-to-src/) // symlinks are not followed
        expect(file).not.toMatch(/^src\/.*\.json$/) // .ignore
        expect(file).not.toMatch(/^src\/lib\/deep\/.*\.md$/)
        if (file !== "keep-me.log" && file !== "src/lib/important.log") expect(file).not.toMatch(/\.log$/)
      }
      expect(all).not.toContain("nested/secret.ts")
      expect(all.some((file) => file.startsWith("space dir/"))).toBe(true)
    }))

  it.scopedLive("globs: no slash matches names at any depth, a slash anchors, braces and classes work", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const root = box.path("project")
      for (const file of ["a.ts", "b.tsx", "c.js", "src/d.ts", "src/deep/e.ts", "src/deep/f.test.ts", "lib/g.ts", "x1.md", "x2.md", "y3.md"]) {
        write(path.join(root, file))
      }
      const search = FileSearch.make(box.instance, { engine: "builtin" })
      const find = (glob: string) => search.files({ cwd: root, globs: [glob] }).pipe(Effect.map((r) => relative(root, r.files)))
      expect(yield* find("*.ts")).toEqual(["a.ts", "lib/g.ts", "src/d.ts", "src/deep/e.ts", "src/deep/f.test.ts"])
      expect(yield* find("**/*.ts")).toEqual(yield* find("*.ts"))
      expect(yield* find("src/*.ts")).toEqual(["src/d.ts"])
      expect(yield* find("src/**/*.ts")).toEqual(["src/d.ts", "src/deep/e.ts", "src/deep/f.test.ts"])
      expect(yield* find("*.{ts,tsx}")).toContain("b.tsx")
      expect(yield* find("x[12].md")).toEqual(["x1.md", "x2.md"])
      expect(yield* find("[!x]?.md")).toEqual(["y3.md"])
      expect(yield* find("**/*.test.ts")).toEqual(["src/deep/f.test.ts"])
      expect(yield* find("?.js")).toEqual(["c.js"])
      // an explicit glob includes a file the .gitignore excludes, as `rg --glob` does
      write(path.join(root, ".gitignore"), "*.md\n")
      expect(yield* find("*.md")).toEqual(["x1.md", "x2.md", "y3.md"])
      expect(relative(root, (yield* search.files({ cwd: root })).files)).not.toContain("x1.md")
    }))

  it("globToRegExp handles ** segments, classes and alternatives", () => {
    expect(FileSearch.globToRegExp("**/*.ts").test("a/b/c.ts")).toBe(true)
    expect(FileSearch.globToRegExp("**/*.ts").test("c.ts")).toBe(true)
    expect(FileSearch.globToRegExp("*.ts").test("a/c.ts")).toBe(false)
    expect(FileSearch.globToRegExp("a/**").test("a/b/c")).toBe(true)
    expect(FileSearch.globToRegExp("a/**").test("a")).toBe(false)
    expect(FileSearch.globToRegExp("a/**/b").test("a/b")).toBe(true)
    expect(FileSearch.globToRegExp("a/**/b").test("a/x/y/b")).toBe(true)
    expect(FileSearch.globToRegExp("{src,lib}/**/*.{ts,js}").test("lib/x/y.js")).toBe(true)
    expect(FileSearch.globToRegExp("{src,lib}/**/*.{ts,js}").test("test/y.js")).toBe(false)
    expect(FileSearch.globToRegExp("[a-c]?.txt").test("b1.txt")).toBe(true)
    expect(FileSearch.globToRegExp("[!a-c]?.txt").test("b1.txt")).toBe(false)
    expect(FileSearch.globToRegExp("?").test("/")).toBe(false)
    expect(FileSearch.globToRegExp("a\\*b").test("a*b")).toBe(true)
    expect(FileSearch.globToRegExp("a\\*b").test("axb")).toBe(false)
    expect(FileSearch.globToRegExp("file(1).txt").test("file(1).txt")).toBe(true)
  })

  it.scopedLive("stops at the limit and says the list was cut", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const root = box.path("project")
      for (let i = 0; i < 300; i++) write(path.join(root, `d${i % 7}`, `f${i}.txt`))
      const search = FileSearch.make(box.instance, { engine: "builtin" })
      const limited = yield* search.files({ cwd: root, limit: 25 })
      expect(limited.files).toHaveLength(25)
      expect(limited.truncated).toBe(true)
      const all = yield* search.files({ cwd: root, limit: 300 })
      expect(all.files).toHaveLength(300)
      expect(all.truncated).toBe(false)
    }))

  it.scopedLive("walks asynchronously: timers keep firing during a large walk", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const root = box.path("project")
      for (let i = 0; i < 3000; i++) write(path.join(root, `d${i % 50}`, `e${i % 3}`, `f${i}.txt`))
      const search = FileSearch.make(box.instance, { engine: "builtin" })
      let ticks = 0
      const timer = setInterval(() => ticks++, 0)
      const result = yield* search.files({ cwd: root }).pipe(Effect.ensuring(Effect.sync(() => clearInterval(timer))))
      expect(result.files).toHaveLength(3000)
      expect(ticks).toBeGreaterThan(2)
    }))

  it.scopedLive("a missing directory fails with a clear message", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const search = FileSearch.make(box.instance, { engine: "builtin" })
      const error = yield* Effect.flip(search.files({ cwd: box.path("project/nope") }))
      expect(error.message).toMatch(/No such file or directory: .*nope/)
    }))

  it.scopedLive("ripgrep and the built-in walker list the same files", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({ env: { PATH: withRipgrep(process.env.PATH) } })
      const root = box.path("project")
      generateTree(root, 600)
      const rg = FileSearch.make(box.instance, { engine: "ripgrep" })
      expect(rg.engine).toBe("ripgrep")
      const builtin = FileSearch.make(box.instance, { engine: "builtin" })
      const globSets: ReadonlyArray<ReadonlyArray<string>> = [
        [],
        ["**/*.ts"],
        ["*.log"],
        ["*.{ts,js}"],
        ["src/**"],
        ["!*.md"],
        ["**/gen/*.ts"],
        ["[a-c]*.txt"],
        ["packages/*/src/*.md"],
        ["**/*.json"]
      ]
      for (const globs of globSets) {
        for (const cwd of [root, path.join(root, "src"), path.join(root, "nested")]) {
          const expected = sorted((yield* rg.files({ cwd, globs })).files)
          const actual = sorted((yield* builtin.files({ cwd, globs })).files)
          expect({ globs, cwd, files: actual }).toEqual({ globs, cwd, files: expected })
          // every glob finds something from the root, so the comparison is not vacuous
          if (cwd === root) expect(expected.length).toBeGreaterThan(0)
        }
      }
    }))
})

/** Runs `body` with the glob tool built on the sandbox's instance. */
const withGlob = <A, E>(body: (tool: Tool.AnyTool, box: TestInstance.Sandbox) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const box = yield* TestInstance.sandbox()
    const tool = yield* Effect.provideService(Glob.make, Instance, box.instance)
    return yield* body(tool, box)
  })

describe("glob tool", () => {
  it.scopedLive("lists matching files as absolute paths, newest first, after asking glob", () =>
    withGlob((tool, box) =>
      Effect.gen(function*() {
        const files = ["project/src/old.ts", "project/src/new.ts", "project/lib/mid.ts", "project/readme.md"].map(box.path)
        files.forEach((file) => write(file))
        stamp([files[0]!, files[2]!, files[1]!, files[3]!])
        const { context, asked } = makeContext()
        const result = yield* tool.execute({ pattern: "**/*.ts" }, context)
        expect(result.output.split("\n")).toEqual([files[1], files[2], files[0]])
        expect(asked).toEqual([
          { permission: "glob", patterns: ["**/*.ts"], always: ["*"], metadata: { pattern: "**/*.ts", path: box.path("project") } }
        ])
        expect(result.metadata).toEqual({ count: 3, truncated: false })
      })
    ))

  it.scopedLive("searches a relative path, and says when nothing matched", () =>
    withGlob((tool, box) =>
      Effect.gen(function*() {
        write(box.path("project/src/a.ts"))
        write(box.path("project/other/b.ts"))
        const { context } = makeContext()
        expect((yield* tool.execute({ pattern: "*.ts", path: "src" }, context)).output).toBe(box.path("project/src/a.ts"))
        expect((yield* tool.execute({ pattern: "*.py" }, context)).output).toBe("No files found")
      })
    ))

  it.scopedLive("cuts the list at 100 and says so", () =>
    withGlob((tool, box) =>
      Effect.gen(function*() {
        for (let i = 0; i < 130; i++) write(box.path(`project/many/f${i}.txt`))
        const { context } = makeContext()
        const result = yield* tool.execute({ pattern: "*.txt" }, context)
        const lines = result.output.split("\n")
        expect(lines.filter((line) => line.endsWith(".txt"))).toHaveLength(100)
        expect(lines.at(-1)).toMatch(/^\(Results are truncated: showing the first 100 results/)
        expect(result.metadata).toEqual({ count: 100, truncated: true })
      })
    ))

  it.scopedLive("a directory outside the project asks external_directory; a deny stops the search", () =>
    withGlob((tool, box) =>
      Effect.gen(function*() {
        write(box.path("outside/x.ts"))
        const allowed = makeContext()
        const result = yield* tool.execute({ pattern: "*.ts", path: box.path("outside") }, allowed.context)
        expect(result.output).toBe(box.path("outside/x.ts"))
        expect(allowed.asked.map((ask) => [ask.permission, ask.patterns])).toEqual([
          ["glob", ["*.ts"]],
          ["external_directory", [path.join(box.path("outside"), "*")]]
        ])

        const denied = makeContext(["external_directory"])
        const error = yield* Effect.flip(tool.execute({ pattern: "*.ts", path: box.path("outside") }, denied.context))
        expect(error).toBeInstanceOf(DeniedError)
      })
    ))

  it.scopedLive("a denied glob permission fails the call before searching", () =>
    withGlob((tool, _box) =>
      Effect.gen(function*() {
        const { context, asked } = makeContext(["glob"])
        const error = yield* Effect.flip(tool.execute({ pattern: "*" }, context))
        expect(error._tag).toBe("DeniedError")
        expect(asked).toHaveLength(1)
      })
    ))

  it.scopedLive("a missing directory is a tool error the model can read", () =>
    withGlob((tool, box) =>
      Effect.gen(function*() {
        const { context } = makeContext()
        const error = yield* Effect.flip(tool.execute({ pattern: "*", path: "missing" }, context))
        expect(error._tag).toBe("ToolExecutionError")
        expect(error.message).toContain(box.path("project/missing"))
      })
    ))

  it.scopedLive("runs through the real loop", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[ScriptedModel.toolCall("glob", { pattern: "src/**/*.ts" })], "Found it."])
      const runtime = yield* TestRuntime.make({ model })
      write(runtime.box.path("project/src/app/main.ts"))
      yield* Effect.gen(function*() {
        const registry = yield* ToolRegistry
        yield* registry.register([yield* Glob.make])
        const store = yield* SessionStore
        const session = yield* store.create({ title: "glob" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "find main" }] })
        expect(outcome.reason).toBe("completed")
        const part = (yield* store.messages(session.id)).flatMap((m) => m.parts).find((p): p is ToolPart => p.type === "tool")
        expect(part?.state).toMatchObject({ status: "completed", output: runtime.box.path("project/src/app/main.ts") })
        const results = model.calls[1]!.prompt.filter((entry) => entry.role === "tool").flatMap((entry) => entry.content)
        expect(JSON.stringify(results)).toContain("src/app/main.ts")
      }).pipe(Effect.provide(runtime.layer))
    }))
})

describe("glob and list tools with and without ripgrep", () => {
  it.scopedLive("ripgrep is used when it is on PATH, the built-in walker otherwise, and the output is the same", () =>
    Effect.gen(function*() {
      const { box, withRg, withoutRg } = yield* sandboxWithAndWithoutRipgrep
      const root = box.path("project")
      generateTree(root, 80)
      const tools = (instance: typeof withRg) =>
        Effect.all([Glob.make, List.make]).pipe(Effect.provideService(Instance, instance))
      const [globRg, listRg] = yield* tools(withRg)
      const [globBuiltin, listBuiltin] = yield* tools(withoutRg)

      const compare = (rg: Tool.AnyTool, builtin: Tool.AnyTool, params: Record<string, unknown>) =>
        Effect.gen(function*() {
          const expected = yield* rg.execute(params, makeContext().context)
          const actual = yield* builtin.execute(params, makeContext().context)
          expect({ params, output: actual.output }).toEqual({ params, output: expected.output })
          // below the limit, so both list everything and the comparison covers the whole answer
          expect(expected.metadata?.truncated, JSON.stringify(params)).toBe(false)
          expect(expected.metadata?.count, JSON.stringify(params)).toBeGreaterThan(0)
        })
      for (
        const params of [
          { pattern: "**/*.ts" },
          { pattern: "*.log" },
          { pattern: "*.{md,json}" },
          { pattern: "*", path: "src" },
          { pattern: "**/gen/*.ts" },
          { pattern: "*.ts", path: "nested" },
          { pattern: "*", path: "space dir" }
        ]
      ) yield* compare(globRg, globBuiltin, params)
      for (const params of [{ path: "src" }, { path: "src", ignore: ["*.md", "lib/"] }, { path: "nested" }, { path: "docs" }]) {
        yield* compare(listRg, listBuiltin, params)
      }
    }))
})
