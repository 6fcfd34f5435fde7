import { DeniedError, type PermissionConfig, type ToolPart } from "@agent/domain"
import { ScriptedModel, TestInstance, TestRuntime, TestToolContext } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Exit } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Instance } from "../../src/runtime/Instance.js"

import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import * as Tool from "../../src/tool/Tool.js"
import * as ApplyPatch from "../../src/tools/ApplyPatch.js"
import { type FileDiskShape, liveDisk } from "../../src/tool/FileDisk.js"
import { diskKind, fullDisk, onDisk, strayFiles } from "./disk.js"

/** A ToolContext that records asks and answers them from `permission` rules (deny fails the call). */
const makeContext = (options: { permission?: PermissionConfig } = {}) =>
  TestToolContext.make({ ...options, sessionID: "ses_patch" })

const setup = Effect.gen(function*() {
  const box = yield* TestInstance.sandbox()
  const tool = yield* Effect.provideService(ApplyPatch.make, Instance, box.instance)
  const read = (relative: string) => fs.readFileSync(box.path(`project/${relative}`), "utf8")
  const exists = (relative: string) => fs.existsSync(box.path(`project/${relative}`))
  return { box, tool, read, exists }
})

const run = (tool: Tool.AnyTool, patchText: string, context: Tool.ToolContext) =>
  Tool.decodeInput(tool, { patchText }).pipe(Effect.flatMap((params) => tool.execute(params, context)))

const failureOf = <A>(exit: Exit.Exit<A, Tool.ToolFailure>): Tool.ToolFailure => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  if (exit.cause._tag !== "Fail") throw new Error(`expected a typed failure, got ${exit.cause._tag}`)
  return exit.cause.error
}

const patch = (...lines: Array<string>) => ["*** Begin Patch", ...lines, "*** End Patch"].join("\n")

describe("apply_patch: parsing", () => {
  it("parses every kind of section", () => {
    const parsed = ApplyPatch.parse(
      patch(
        "*** Add File: a.txt",
        "+one",
        "+two",
        "*** Delete File: b.txt",
        "*** Update File: c.txt",
        "*** Move to: d.txt",
        "@@ class C",
        " keep",
        "-old",
        "+new",
        "*** End of File"
      )
    )
    expect(parsed).toEqual(
      Either.right([
        { type: "add", path: "a.txt", content: "one\ntwo\n", line: 2 },
        { type: "delete", path: "b.txt", line: 5 },
        {
          type: "update",
          path: "c.txt",
          moveTo: "d.txt",
          line: 6,
          hunks: [{
            context: "class C",
            lines: [{ kind: "context", text: "keep" }, { kind: "remove", text: "old" }, { kind: "add", text: "new" }],
            endOfFile: true,
            line: 8
          }]
        }
      ])
    )
  })

  it("names the offending line", () => {
    expect(ApplyPatch.parse("*** Add File: a\n+x\n*** End Patch")).toEqual(Either.left('line 1: the patch must start with "*** Begin Patch"'))
    expect(ApplyPatch.parse("*** Begin Patch\n*** Add File: a\n+x")).toEqual(Either.left('line 3: the patch must end with "*** End Patch"'))
    expect(ApplyPatch.parse(patch("*** Add File: a", "x"))).toEqual(
      Either.left('line 3: every line of an added file must start with "+" (in a)')
    )
    expect(ApplyPatch.parse(patch("*** Update File: a", " ctx", "?weird"))).toMatchObject(
      Either.left(expect.stringMatching(/^line 4: unexpected line in the hunk for a: "\?weird"/))
    )
    expect(ApplyPatch.parse(patch("*** Update File: a"))).toEqual(Either.left("line 2: Update File a has no hunks"))
    expect(ApplyPatch.parse(patch("*** Rename: a"))).toMatchObject(Either.left(expect.stringMatching(/^line 2: expected "\*\*\* Add File:"/)))
    expect(ApplyPatch.parse(patch())).toEqual(Either.left("line 1: the patch contains no file operations"))
  })

  it("tolerates a heredoc wrapper and CRLF", () => {
    const parsed = ApplyPatch.parse(`apply_patch <<'EOF'\r\n${patch("*** Delete File: x")}\r\nEOF\r\n`)
    expect(parsed).toEqual(Either.right([{ type: "delete", path: "x", line: 3 }]))
  })
})

describe("apply_patch", () => {
  it.scopedLive("adds, updates, deletes and moves files in one call, with one edit ask for all paths", () =>
    Effect.gen(function*() {
      const { box, tool, read, exists } = yield* setup
      box.write("project/src/app.ts", "import x from 'x'\n\nfunction main() {\n  start(3000)\n  log('up')\n}\n")
      box.write("project/old.md", "bye\n")
      box.write("project/lib/util.ts", "export const a = 1\nexport const b = 2\n")
      const { context, asks } = makeContext()
      const result = yield* run(
        tool,
        patch(
          "*** Add File: docs/new.md",
          "+# New",
          "+text",
          "*** Update File: src/app.ts",
          "@@ function main() {",
          "-  start(3000)",
          "+  start(8080)",
          "   log('up')",
          "*** Delete File: old.md",
          "*** Update File: lib/util.ts",
          "*** Move to: lib/helpers.ts",
          "@@",
          " export const a = 1",
          "-export const b = 2",
          "+export const b = 3"
        ),
        context
      )
      expect(read("docs/new.md")).toBe("# New\ntext\n")
      expect(read("src/app.ts")).toBe("import x from 'x'\n\nfunction main() {\n  start(8080)\n  log('up')\n}\n")
      expect(exists("old.md")).toBe(false)
      expect(exists("lib/util.ts")).toBe(false)
      expect(read("lib/helpers.ts")).toBe("export const a = 1\nexport const b = 3\n")
      expect(result.output).toBe(
        "Success. Updated the following files:\nA docs/new.md\nM src/app.ts\nD old.md\nM lib/helpers.ts"
      )
      expect(asks).toHaveLength(1)
      expect(asks[0]).toMatchObject({
        permission: "edit",
        patterns: ["docs/new.md", "src/app.ts", "old.md", "lib/util.ts", "lib/helpers.ts"],
        always: ["*"]
      })
      const diff = String(asks[0]!.metadata?.diff)
      expect(diff).toContain("+# New")
      expect(diff).toContain("-  start(3000)\n+  start(8080)")
      expect(diff).toContain("-bye")
      expect(diff).toContain("-export const b = 2\n+export const b = 3")
      expect(result.metadata?.diff).toBe(diff)
      const files = result.metadata?.files as Array<{ relativePath: string; type: string }>
      expect(files.map((file) => [file.relativePath, file.type])).toEqual([
        ["docs/new.md", "add"],
        ["src/app.ts", "update"],
        ["old.md", "delete"],
        ["lib/helpers.ts", "move"]
      ])
    }))

  it.scopedLive("a hunk that does not apply changes nothing, not even the sections before it", () =>
    Effect.gen(function*() {
      const { box, tool, read, exists } = yield* setup
      box.write("project/a.txt", "one\ntwo\n")
      box.write("project/b.txt", "three\nfour\n")
      const { context, asks } = makeContext()
      const exit = yield* Effect.exit(
        run(
          tool,
          patch(
            "*** Add File: created.txt",
            "+new",
            "*** Update File: a.txt",
            "-one",
            "+ONE",
            "*** Delete File: b.txt",
            "*** Update File: b.txt",
            "-nowhere",
            "+x"
          ),
          context
        )
      )
      const message = failureOf(exit).message
      expect(message).toContain("Patch not applied")
      // The delete came first, so the update finds no file; the message names the patch line.
      expect(message).toMatch(/line 8: cannot update .*b\.txt: file not found/)
      expect(asks).toEqual([])
      expect(exists("created.txt")).toBe(false)
      expect(read("a.txt")).toBe("one\ntwo\n")
      expect(read("b.txt")).toBe("three\nfour\n")

      const stale = yield* Effect.exit(run(tool, patch("*** Update File: a.txt", "@@", " one", "-missing", "+x"), context))
      expect(failureOf(stale).message).toMatch(/line 3: could not find the lines of this hunk in .*a\.txt:\n  one\n  missing/)
      expect(read("a.txt")).toBe("one\ntwo\n")
    }))

  it.scopedLive("a deny writes nothing", () =>
    Effect.gen(function*() {
      const { box, tool, read, exists } = yield* setup
      box.write("project/a.txt", "one\n")
      const { context } = makeContext({ permission: { "*": "allow", edit: { "*": "allow", "a.txt": "deny" } } })
      const exit = yield* Effect.exit(run(tool, patch("*** Add File: b.txt", "+b", "*** Update File: a.txt", "-one", "+1"), context))
      expect(failureOf(exit)).toBeInstanceOf(DeniedError)
      expect(exists("b.txt")).toBe(false)
      expect(read("a.txt")).toBe("one\n")
    }))

  it.scopedLive("finds hunks despite indentation differences and uses @@ context to pick among repeats", () =>
    Effect.gen(function*() {
      const { box, tool, read } = yield* setup
      box.write("project/a.py", "def first():\n    return 1\n\ndef second():\n    return 1\n")
      yield* run(tool, patch("*** Update File: a.py", "@@ def second():", "-return 1", "+    return 2"), makeContext().context)
      expect(read("a.py")).toBe("def first():\n    return 1\n\ndef second():\n    return 2\n")
    }))

  it.scopedLive("applies several hunks in order, pure additions, and keeps CRLF and BOM", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup
      const file = box.path("project/win.txt")
      fs.writeFileSync(file, "\uFEFFa\r\nb\r\nc\r\nd\r\ne\r\n")
      yield* run(
        tool,
        patch("*** Update File: win.txt", "@@", " a", "-b", "+B", "@@", " d", "-e", "+E", "*** End of File", "@@", "+f"),
        makeContext().context
      )
      expect(fs.readFileSync(file, "utf8")).toBe("\uFEFFa\r\nB\r\nc\r\nd\r\nE\r\nf\r\n")
    }))

  it.scopedLive("paths outside the project ask external_directory, then edit with all paths", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup
      const outside = box.path("elsewhere/x.txt")
      const { context, asks } = makeContext()
      yield* run(tool, patch(`*** Add File: ${outside}`, "+x", "*** Add File: inside.txt", "+y"), context)
      expect(asks.map((ask) => [ask.permission, ask.patterns])).toEqual([
        ["external_directory", [path.join(box.path("elsewhere"), "*")]],
        ["edit", [outside, "inside.txt"]]
      ])
      expect(fs.readFileSync(outside, "utf8")).toBe("x\n")
    }))

  it.scopedLive("deleting a missing file fails", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup
      const exit = yield* Effect.exit(run(tool, patch("*** Delete File: ghost.txt"), makeContext().context))
      expect(failureOf(exit).message).toMatch(/line 2: cannot delete .*ghost\.txt: file not found/)
    }))
})

describe("apply_patch: in the loop", () => {
  it.scopedLive("the model patches a file", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      box.write("project/main.go", "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n")
      const tool = yield* Effect.provideService(ApplyPatch.make, Instance, box.instance)
      const patchText = patch("*** Update File: main.go", "@@ func main() {", "-\tprintln(\"hi\")", "+\tprintln(\"hello\")")
      const model = ScriptedModel.make([[ScriptedModel.toolCall("apply_patch", { patchText })], "Patched."])
      // apply_patch is offered to GPT models only.
      const runtime = yield* TestRuntime.make({ model, tools: [tool], modelInfo: { modelID: "gpt-5" } })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const session = yield* store.create({ title: "patch" })
        expect((yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "say hello" }] })).reason).toBe("completed")
        expect(fs.readFileSync(box.path("project/main.go"), "utf8")).toContain("println(\"hello\")")
        const part = (yield* store.messages(session.id))
          .flatMap((message) => message.parts)
          .find((candidate): candidate is ToolPart => candidate.type === "tool")
        expect(part?.state.status === "completed" && part.state.output).toBe("Success. Updated the following files:\nM main.go")
        expect(part?.state.status === "completed" && part.state.metadata?.diff).toContain("+\tprintln(\"hello\")")
      }).pipe(Effect.provide(runtime.layer))
    }))
})

describe("apply_patch: no file is half written", () => {
  it.scopedLive(`on a full disk (${diskKind}) no file changes; the result names the file, the error and the files left as they were`, () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const dir = box.path("project/disk")
      const big = "a line of the big file\n".repeat(30_000) // 690 KB on a 4 MB disk
      const { disk, filler } = yield* fullDisk(dir, { "a.txt": "one\ntwo\n", "b.txt": big }, 64 * 1024)
      const tool = yield* Effect.provideService(ApplyPatch.make, Instance, box.instance).pipe(onDisk(disk))
      const exit = yield* Effect.exit(
        run(
          tool,
          patch(
            "*** Update File: disk/a.txt",
            "-one",
            "+ONE",
            "*** Update File: disk/b.txt",
            "@@",
            ...Array.from({ length: 10_000 }, (_, index) => `+an added line number ${index}`),
            "*** Add File: disk/c.txt",
            "+new"
          ),
          makeContext().context
        )
      )
      expect(fs.readFileSync(path.join(dir, "a.txt"), "utf8")).toBe("one\ntwo\n")
      expect(fs.statSync(path.join(dir, "b.txt")).size).toBe(big.length)
      expect(fs.readFileSync(path.join(dir, "b.txt")).equals(Buffer.from(big))).toBe(true)
      expect(fs.existsSync(path.join(dir, "c.txt"))).toBe(false)
      expect(failureOf(exit).message).toBe(
        "Patch not applied: cannot write disk/b.txt: no space left on device. " +
          "No file was changed: disk/a.txt, disk/b.txt, disk/c.txt are as they were."
      )
      expect(strayFiles(dir, ["a.txt", "b.txt", ...(filler ? [filler] : [])])).toEqual([])
    }), 60_000)

  /** A disk whose renames onto `failing` fail (an I/O error), after `allow` successful ones. */
  const failingRenames = (failing: ReadonlyArray<string>, allow = 0): FileDiskShape => {
    let allowed = allow
    return {
      ...liveDisk,
      rename: async (from, to) => {
        if (failing.includes(to) && allowed-- <= 0) {
          throw Object.assign(new Error(`EIO: i/o error, rename '${from}' -> '${to}'`), { code: "EIO" })
        }
        return liveDisk.rename(from, to)
      }
    }
  }

  it.scopedLive("a rename that fails midway puts back the files already changed, atomically, and says so", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      box.write("project/a.txt", "one\n")
      box.write("project/b.txt", "two\n")
      box.write("project/d.txt", "gone\n")
      const tool = yield* Effect.provideService(ApplyPatch.make, Instance, box.instance).pipe(
        onDisk(failingRenames([box.path("project/b.txt")]))
      )
      const text = patch("*** Update File: a.txt", "-one", "+ONE", "*** Delete File: d.txt", "*** Update File: b.txt", "-two", "+TWO")
      const exit = yield* Effect.exit(run(tool, text, makeContext().context))
      expect(failureOf(exit).message).toBe(
        "Patch not applied: cannot write b.txt: i/o error. a.txt, d.txt had been changed and were put back. " +
          "No file was changed: a.txt, d.txt, b.txt are as they were."
      )
      expect(["a.txt", "b.txt", "d.txt"].map((name) => fs.readFileSync(box.path(`project/${name}`), "utf8"))).toEqual(["one\n", "two\n", "gone\n"])
      expect(fs.readdirSync(box.path("project")).sort()).toEqual([".git", "a.txt", "b.txt", "d.txt"])
    }))

  it.scopedLive("when a file cannot be put back either, the result says which files were applied and which not", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      box.write("project/a.txt", "one\n")
      box.write("project/b.txt", "two\n")
      // The patch's rename onto a.txt works; putting a.txt back fails, as does the one onto b.txt.
      const tool = yield* Effect.provideService(ApplyPatch.make, Instance, box.instance).pipe(
        onDisk(failingRenames([box.path("project/a.txt"), box.path("project/b.txt")], 1))
      )
      const exit = yield* Effect.exit(run(tool, patch("*** Update File: a.txt", "-one", "+ONE", "*** Update File: b.txt", "-two", "+TWO"), makeContext().context))
      expect(failureOf(exit).message).toBe(
        "Patch partly applied: cannot write b.txt: i/o error. Applied: a.txt (could not be put back: i/o error). " +
          "Not applied (as they were): b.txt."
      )
      expect(fs.readFileSync(box.path("project/a.txt"), "utf8")).toBe("ONE\n")
      expect(fs.readFileSync(box.path("project/b.txt"), "utf8")).toBe("two\n")
      expect(fs.readdirSync(box.path("project")).sort()).toEqual([".git", "a.txt", "b.txt"])
    }))

  it.scopedLive("500 hunks on a 1.6 MB file apply in about one pass, and the event loop keeps ticking", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup
      const lines = Array.from({ length: 34_000 }, (_, index) => `const value${index} = compute(input${index}) // x`)
      box.write("project/big.ts", lines.join("\n") + "\n")
      const patched = Array.from({ length: 500 }, (_, index) => index * 68 + 7)
      const text = patch(
        "*** Update File: big.ts",
        ...patched.flatMap((line) => ["@@", ` ${lines[line - 1]}`, `-${lines[line]}`, `+const value${line} = patched(input${line})`])
      )
      let last = performance.now()
      let longest = 0
      const timer = setInterval(() => {
        const now = performance.now()
        longest = Math.max(longest, now - last)
        last = now
      }, 10)
      yield* run(tool, text, makeContext().context).pipe(Effect.ensuring(Effect.sync(() => clearInterval(timer))))
      const expected = lines.map((line, index) => (patched.includes(index) ? `const value${index} = patched(input${index})` : line))
      expect(fs.readFileSync(box.path("project/big.ts"), "utf8")).toBe(expected.join("\n") + "\n")
      expect(longest).toBeLessThan(1_000)
    }), 60_000)

  it.scopedLive("a Latin-1 file is patched byte for byte", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup
      const file = box.path("project/legacy.txt")
      fs.writeFileSync(file, Buffer.from("caf\xe9\nold line\n\xa9 2024\n", "latin1"))
      yield* run(tool, patch("*** Update File: legacy.txt", "@@ café", "-old line", "+new line, très bien"), makeContext().context)
      expect(fs.readFileSync(file).equals(Buffer.from("caf\xe9\nnew line, tr\xe8s bien\n\xa9 2024\n", "latin1"))).toBe(true)
      const exit = yield* Effect.exit(run(tool, patch("*** Update File: legacy.txt", "-© 2024", "+© 2024 ✓"), makeContext().context))
      expect(failureOf(exit).message).toMatch(/^Patch not applied, no file was changed\. .*legacy\.txt is not valid UTF-8/)
    }))
})
