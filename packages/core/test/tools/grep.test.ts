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
import * as Grep from "../../src/tools/Grep.js"
import { sandboxWithAndWithoutRipgrep } from "./engines.js"
import { withRipgrep } from "./ripgrep.js"

const makeContext = (deny: ReadonlyArray<string> = []) => TestToolContext.make({ deny })

const write = (file: string, content: string | Buffer = "x\n") => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, content)
}

const setMtime = (file: string, minute: number) => {
  const time = new Date(Date.UTC(2024, 0, 1, 0, minute))
  fs.utimesSync(file, time, time)
}

/** Files with matches in varied places, ignored files, binaries and nested ignore files. */
const generateTree = (root: string, size = 300) => {
  const dirs = ["src", "src/util", "lib", "docs", "build", "gen", "pkg/dist", "pkg/src"]
  for (let i = 0; i < size; i++) {
    const dir = dirs[i % dirs.length]!
    const ext = [".ts", ".js", ".md", ".txt"][i % 4]!
    const lines = [`// file ${i}`, i % 3 === 0 ? `export function handler${i}() {}` : "const x = 1", `TODO: item ${i}`, ""]
    if (i % 11 === 0) lines.push("Error: something failed (code 42)")
    write(path.join(root, dir, `f${i}${ext}`), lines.join("\n"))
  }
  write(path.join(root, ".gitignore"), "build/\ngen\n*.txt\n!keep.txt\n")
  write(path.join(root, "pkg/.gitignore"), "dist/\n")
  write(path.join(root, "keep.txt"), "TODO: kept\n")
  write(path.join(root, ".hidden.md"), "TODO: hidden file\n")
  write(path.join(root, "image.bin"), Buffer.from([84, 79, 68, 79, 0, 1, 2, 3]))
  write(path.join(root, "crlf.ts"), "export function crlf() {}\r\nTODO: windows\r\n")
}

const key = (match: FileSearch.GrepMatch) => `${match.path}:${match.line}:${match.text}`

describe("FileSearch.grep", () => {
  it.scopedLive("the built-in search finds matching lines with numbers, skipping ignored and binary files", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const root = box.path("project")
      write(path.join(root, "a.ts"), "first\nneedle here\nthird\n\nneedle again")
      write(path.join(root, "ignored/b.ts"), "needle\n")
      write(path.join(root, ".gitignore"), "ignored/\n")
      write(path.join(root, "bin.dat"), Buffer.from([110, 101, 101, 100, 108, 101, 0, 1]))
      const search = FileSearch.make(box.instance, { engine: "builtin" })
      const result = yield* search.grep({ cwd: root, pattern: "needle" })
      expect(result.matches).toEqual([
        { path: path.join(root, "a.ts"), line: 2, text: "needle here" },
        { path: path.join(root, "a.ts"), line: 5, text: "needle again" }
      ])
      expect(result.truncated).toBe(false)
    }))

  it.scopedLive("understands a leading (?i) and stops at the limit", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const root = box.path("project")
      write(path.join(root, "a.txt"), Array.from({ length: 50 }, (_, i) => `Line ${i}`).join("\n"))
      const search = FileSearch.make(box.instance, { engine: "builtin" })
      expect((yield* search.grep({ cwd: root, pattern: "(?i)^line 4\\d$" })).matches).toHaveLength(10)
      const limited = yield* search.grep({ cwd: root, pattern: "Line", limit: 7 })
      expect(limited.matches).toHaveLength(7)
      expect(limited.truncated).toBe(true)
    }))

  it.scopedLive("an invalid regular expression fails with InvalidPattern", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const search = FileSearch.make(box.instance, { engine: "builtin" })
      const error = yield* Effect.flip(search.grep({ cwd: box.path("project"), pattern: "foo(" }))
      expect(error._tag).toBe("InvalidPattern")
    }))

  it.scopedLive("ripgrep and the built-in search find the same lines", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({ env: { PATH: withRipgrep(process.env.PATH) } })
      const root = box.path("project")
      generateTree(root)
      const rg = FileSearch.make(box.instance, { engine: "ripgrep" })
      expect(rg.engine).toBe("ripgrep")
      const builtin = FileSearch.make(box.instance, { engine: "builtin" })
      const cases: ReadonlyArray<{ pattern: string; globs?: ReadonlyArray<string> }> = [
        { pattern: "TODO" },
        { pattern: "^export function \\w+\\(" },
        { pattern: "handler\\d{2}\\b" },
        { pattern: "Error: .*\\(code \\d+\\)$" },
        { pattern: "TODO", globs: ["*.md"] },
        { pattern: "TODO", globs: ["*.{ts,js}"] },
        { pattern: "TODO", globs: ["src/**"] },
        { pattern: "TODO", globs: ["*.txt"] },
        { pattern: "\\}$" }
      ]
      for (const { pattern, globs } of cases) {
        const expected = (yield* rg.grep({ cwd: root, pattern, ...(globs ? { globs } : {}) })).matches.map(key).sort()
        const actual = (yield* builtin.grep({ cwd: root, pattern, ...(globs ? { globs } : {}) })).matches.map(key).sort()
        expect({ pattern, globs, actual }).toEqual({ pattern, globs, actual: expected })
        expect(expected.length).toBeGreaterThan(0)
      }
      const error = yield* Effect.flip(rg.grep({ cwd: root, pattern: "foo(" }))
      expect(error._tag).toBe("InvalidPattern")
    }))
})

const withGrep = <A, E>(body: (tool: Tool.AnyTool, box: TestInstance.Sandbox) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const box = yield* TestInstance.sandbox()
    const tool = yield* Effect.provideService(Grep.make, Instance, box.instance)
    return yield* body(tool, box)
  })

describe("grep tool", () => {
  it.scopedLive("groups matches by file, newest file first, in OpenCode's format", () =>
    withGrep((tool, box) =>
      Effect.gen(function*() {
        const older = box.path("project/src/older.ts")
        const newer = box.path("project/src/newer.ts")
        write(older, "const a = 1\n// TODO: first\n")
        write(newer, "// TODO: second\nx\n// TODO: third\n")
        write(box.path("project/notes.md"), "no match\n")
        setMtime(older, 1)
        setMtime(newer, 2)
        const { context, asked } = makeContext()
        const result = yield* tool.execute({ pattern: "TODO" }, context)
        expect(result.output).toBe(
          [
            "Found 3 matches",
            `${newer}:`,
            "  Line 1: // TODO: second",
            "  Line 3: // TODO: third",
            "",
            `${older}:`,
            "  Line 2: // TODO: first"
          ].join("\n")
        )
        expect(result.title).toBe("TODO")
        expect(result.metadata).toEqual({ matches: 3, truncated: false })
        expect(asked[0]).toEqual({
          permission: "grep",
          patterns: ["TODO"],
          always: ["*"],
          metadata: { pattern: "TODO", path: box.path("project") }
        })
        expect(asked).toHaveLength(1)
      })
    ))

  it.scopedLive("include filters files; path may name a single file", () =>
    withGrep((tool, box) =>
      Effect.gen(function*() {
        write(box.path("project/a.ts"), "needle\n")
        write(box.path("project/b.js"), "needle\n")
        const { context } = makeContext()
        const onlyTs = yield* tool.execute({ pattern: "needle", include: "*.ts" }, context)
        expect(onlyTs.output).toContain(box.path("project/a.ts"))
        expect(onlyTs.output).not.toContain("b.js")
        const single = yield* tool.execute({ pattern: "needle", path: "b.js" }, context)
        expect(single.output).toBe(`Found 1 matches\n${box.path("project/b.js")}:\n  Line 1: needle`)
      })
    ))

  it.scopedLive("no match says No files found", () =>
    withGrep((tool, box) =>
      Effect.gen(function*() {
        write(box.path("project/a.ts"), "hello\n")
        const { context } = makeContext()
        expect((yield* tool.execute({ pattern: "absent" }, context)).output).toBe("No files found")
      })
    ))

  it.scopedLive("shows at most 100 matches, cuts long lines at 2000 characters, and says so", () =>
    withGrep((tool, box) =>
      Effect.gen(function*() {
        write(box.path("project/many.txt"), Array.from({ length: 150 }, (_, i) => `hit ${i}`).join("\n"))
        write(box.path("project/long.txt"), `hit ${"y".repeat(5000)}\n`)
        setMtime(box.path("project/many.txt"), 1)
        setMtime(box.path("project/long.txt"), 2)
        const { context } = makeContext()
        const result = yield* tool.execute({ pattern: "^hit" }, context)
        const lines = result.output.split("\n")
        expect(lines[0]).toBe("Found 151 matches (showing first 100)")
        expect(lines.filter((line) => line.startsWith("  Line "))).toHaveLength(100)
        const long = lines.find((line) => line.includes("yyyy"))!
        expect(long).toBe(`  Line 1: ${`hit ${"y".repeat(5000)}`.slice(0, 2000)}...`)
        expect(lines.at(-1)).toMatch(/^\(Results truncated: showing 100 of 151 matches/)
        expect(result.metadata).toEqual({ matches: 151, truncated: true })
      })
    ))

  it.scopedLive("an invalid regular expression is a tool error that names the problem", () =>
    withGrep((tool, box) =>
      Effect.gen(function*() {
        write(box.path("project/a.ts"), "x\n")
        const { context } = makeContext()
        const error = yield* Effect.flip(tool.execute({ pattern: "foo(bar" }, context))
        expect(error._tag).toBe("ToolExecutionError")
        expect(error.message).toMatch(/Invalid regular expression "foo\(bar": .*(unterminated|unclosed)/i)
      })
    ))

  it.scopedLive("outside the project it asks external_directory for the directory (or the file's directory)", () =>
    withGrep((tool, box) =>
      Effect.gen(function*() {
        write(box.path("outside/dir/a.txt"), "needle\n")
        const { context, asked } = makeContext()
        yield* tool.execute({ pattern: "needle", path: box.path("outside/dir") }, context)
        yield* tool.execute({ pattern: "needle", path: box.path("outside/dir/a.txt") }, context)
        const external = asked.filter((ask) => ask.permission === "external_directory").map((ask) => ask.patterns)
        expect(external).toEqual([[path.join(box.path("outside/dir"), "*")], [path.join(box.path("outside/dir"), "*")]])

        const denied = makeContext(["external_directory"])
        const error = yield* Effect.flip(tool.execute({ pattern: "needle", path: box.path("outside/dir") }, denied.context))
        expect(error).toBeInstanceOf(DeniedError)
      })
    ))

  it.scopedLive("runs through the real loop", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[ScriptedModel.toolCall("grep", { pattern: "createServer", include: "*.ts" })], "It is in server.ts."])
      const runtime = yield* TestRuntime.make({ model })
      write(runtime.box.path("project/src/server.ts"), "import http from 'node:http'\nhttp.createServer()\n")
      yield* Effect.gen(function*() {
        yield* (yield* ToolRegistry).register([yield* Grep.make])
        const store = yield* SessionStore
        const session = yield* store.create({ title: "grep" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "where?" }] })
        expect(outcome.reason).toBe("completed")
        const part = (yield* store.messages(session.id)).flatMap((m) => m.parts).find((p): p is ToolPart => p.type === "tool")
        expect(part?.state).toMatchObject({
          status: "completed",
          output: `Found 1 matches\n${runtime.box.path("project/src/server.ts")}:\n  Line 2: http.createServer()`
        })
      }).pipe(Effect.provide(runtime.layer))
    }))
})

describe("grep tool with and without ripgrep", () => {
  it.scopedLive("ripgrep is used when it is on PATH, the built-in search otherwise, and the output is the same", () =>
    Effect.gen(function*() {
      const { box, withRg, withoutRg } = yield* sandboxWithAndWithoutRipgrep
      const root = box.path("project")
      generateTree(root, 120)
      const rg = yield* Effect.provideService(Grep.make, Instance, withRg)
      const builtin = yield* Effect.provideService(Grep.make, Instance, withoutRg)
      const queries: ReadonlyArray<Record<string, string>> = [
        { pattern: "^export function \\w+\\(" },
        { pattern: "Error: .*\\(code \\d+\\)$" },
        { pattern: "TODO", include: "*.md" },
        { pattern: "TODO", include: "*.{ts,js}", path: "src" },
        { pattern: "TODO", path: "keep.txt" },
        { pattern: "(?i)todo: (hidden|windows|kept)" }
      ]
      for (const params of queries) {
        const expected = yield* rg.execute(params, makeContext().context)
        const actual = yield* builtin.execute(params, makeContext().context)
        expect({ params, output: actual.output }).toEqual({ params, output: expected.output })
        // below the limit, so both show every match and the comparison covers the whole answer
        expect(expected.metadata?.truncated, JSON.stringify(params)).toBe(false)
        expect(expected.metadata?.matches, JSON.stringify(params)).toBeGreaterThan(0)
      }
    }))
})
