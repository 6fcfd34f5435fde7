import { readDeps } from "./deps.js"
import { DeniedError, type PermissionConfig, type ToolPart } from "@agent/domain"
import { ScriptedModel, TestInstance, TestRuntime, TestToolContext } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Instance } from "../../src/runtime/Instance.js"

import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import * as Tool from "../../src/tool/Tool.js"
import * as Edit from "../../src/tools/Edit.js"
import * as FileLock from "../../src/tool/FileLock.js"
import * as Read from "../../src/tools/Read.js"
import { asRoot, diskKind, fullDisk, onDisk, strayFiles } from "./disk.js"

/**
 * A ToolContext that records asks and answers them from `permission` rules (deny fails the call);
 * `onAsk` runs inside each ask, e.g. to look at the disk while the user is being asked.
 */
const makeContext = (
  options: { permission?: PermissionConfig; sessionID?: string; onAsk?: (request: TestToolContext.AskRequest) => Effect.Effect<void> } = {}
) =>
  TestToolContext.make({ ...options, sessionID: options.sessionID ?? `ses_edit_${Math.random()}` })

const setup = Effect.gen(function*() {
  const box = yield* TestInstance.sandbox()
  const edit = yield* Effect.provideService(Edit.make, Instance, box.instance)
  const read = yield* Effect.provide(Read.make, readDeps(box.instance))
  return { box, edit, read }
})

const run = (tool: Tool.AnyTool, input: Record<string, unknown>, context: Tool.ToolContext) =>
  Tool.decodeInput(tool, input).pipe(Effect.flatMap((params) => tool.execute(params, context)))

const failureOf = <A>(exit: Exit.Exit<A, Tool.ToolFailure>): Tool.ToolFailure => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  if (exit.cause._tag !== "Fail") throw new Error(`expected a typed failure, got ${exit.cause._tag}`)
  return exit.cause.error
}

describe("edit", () => {
  it.scopedLive("replaces a unique passage, asking edit with the diff first", () =>
    Effect.gen(function*() {
      const { box, edit } = yield* setup
      box.write("project/src/app.ts", "const a = 1\nconst b = 2\nconst c = 3\n")
      const file = box.path("project/src/app.ts")
      let onDiskAtAsk = ""
      const { context, asks } = makeContext({ onAsk: () => Effect.sync(() => void (onDiskAtAsk = fs.readFileSync(file, "utf8"))) })
      const result = yield* run(edit, { filePath: "src/app.ts", oldString: "const b = 2", newString: "const b = 20\nconst d = 4" }, context)
      expect(fs.readFileSync(file, "utf8")).toBe("const a = 1\nconst b = 20\nconst d = 4\nconst c = 3\n")
      expect(onDiskAtAsk).toBe("const a = 1\nconst b = 2\nconst c = 3\n")
      expect(result.output).toBe("Edit applied successfully.")
      expect(result.title).toBe("src/app.ts")
      expect(result.metadata).toMatchObject({ filepath: file, additions: 2, deletions: 1 })
      expect(result.metadata?.diff).toContain("-const b = 2\n+const b = 20\n+const d = 4")
      expect(asks).toHaveLength(1)
      expect(asks[0]).toMatchObject({ permission: "edit", patterns: ["src/app.ts"], always: ["*"], metadata: { filepath: file } })
      expect(asks[0]!.metadata?.diff).toBe(result.metadata?.diff)
    }))

  it.scopedLive("identical strings fail before anything is asked", () =>
    Effect.gen(function*() {
      const { box, edit } = yield* setup
      box.write("project/a.txt", "x\n")
      const { context, asks } = makeContext()
      const exit = yield* Effect.exit(run(edit, { filePath: "a.txt", oldString: "x", newString: "x" }, context))
      expect(failureOf(exit).message).toBe("No changes to apply: oldString and newString are identical.")
      expect(asks).toEqual([])
    }))

  it.scopedLive("several matches fail and change nothing; replaceAll replaces them all", () =>
    Effect.gen(function*() {
      const { box, edit } = yield* setup
      box.write("project/a.txt", "let x = 1\nprint(x)\nlet x = 1\n")
      const exit = yield* Effect.exit(run(edit, { filePath: "a.txt", oldString: "let x = 1", newString: "let y = 1" }, makeContext().context))
      expect(failureOf(exit)).toBeInstanceOf(Tool.ToolExecutionError)
      expect(failureOf(exit).message).toMatch(/^Found multiple matches for oldString/)
      expect(failureOf(exit).message).toContain("replaceAll")
      expect(fs.readFileSync(box.path("project/a.txt"), "utf8")).toBe("let x = 1\nprint(x)\nlet x = 1\n")

      const result = yield* run(
        edit,
        { filePath: "a.txt", oldString: "let x = 1", newString: "let y = 1", replaceAll: true },
        makeContext().context
      )
      expect(fs.readFileSync(box.path("project/a.txt"), "utf8")).toBe("let y = 1\nprint(x)\nlet y = 1\n")
      expect(result.metadata).toMatchObject({ additions: 2, deletions: 2 })
    }))

  it.scopedLive("a passage that is not there fails with a hint; a missing file fails", () =>
    Effect.gen(function*() {
      const { box, edit } = yield* setup
      box.write("project/a.txt", "alpha\n")
      const exit = yield* Effect.exit(run(edit, { filePath: "a.txt", oldString: "omega", newString: "x" }, makeContext().context))
      expect(failureOf(exit).message).toMatch(/^Could not find oldString in .*a\.txt\. It must match the file's content exactly/)
      const missing = yield* Effect.exit(run(edit, { filePath: "nope.txt", oldString: "a", newString: "b" }, makeContext().context))
      expect(failureOf(missing).message).toBe(`File not found: ${box.path("project/nope.txt")}`)
    }))

  it.scopedLive("tolerates indentation differences through the cascade", () =>
    Effect.gen(function*() {
      const { box, edit } = yield* setup
      box.write("project/a.py", "def f():\n    if x:\n        return 1\n")
      yield* run(edit, { filePath: "a.py", oldString: "if x:\n    return 1", newString: "    if x:\n        return 2" }, makeContext().context)
      expect(fs.readFileSync(box.path("project/a.py"), "utf8")).toBe("def f():\n    if x:\n        return 2\n")
    }))

  it.scopedLive("keeps CRLF line endings and the BOM", () =>
    Effect.gen(function*() {
      const { box, edit } = yield* setup
      const file = box.path("project/win.txt")
      fs.writeFileSync(file, "\uFEFFfirst\r\nsecond\r\nthird\r\n")
      const result = yield* run(edit, { filePath: "win.txt", oldString: "second\nthird", newString: "2nd\nthird\nfourth" }, makeContext().context)
      expect(fs.readFileSync(file, "utf8")).toBe("\uFEFFfirst\r\n2nd\r\nthird\r\nfourth\r\n")
      // The diff is over plain lines: only the changed ones show.
      expect(result.metadata).toMatchObject({ additions: 2, deletions: 1 })
      expect(String(result.metadata?.diff)).not.toContain("\r")
      // oldString with CRLF matches too.
      yield* run(edit, { filePath: "win.txt", oldString: "2nd\r\nthird", newString: "two\r\nthree" }, makeContext().context)
      expect(fs.readFileSync(file, "utf8")).toBe("\uFEFFfirst\r\ntwo\r\nthree\r\nfourth\r\n")
    }))

  it.scopedLive("an empty oldString creates the file (with its directories) or overwrites it", () =>
    Effect.gen(function*() {
      const { box, edit } = yield* setup
      const created = yield* run(edit, { filePath: "new/dir/file.txt", oldString: "", newString: "hello\n" }, makeContext().context)
      expect(fs.readFileSync(box.path("project/new/dir/file.txt"), "utf8")).toBe("hello\n")
      expect(created.metadata).toMatchObject({ additions: 1, deletions: 0 })
      box.write("project/old.txt", "\uFEFFa\r\nb\r\n")
      yield* run(edit, { filePath: "old.txt", oldString: "", newString: "c\nd\n" }, makeContext().context)
      expect(fs.readFileSync(box.path("project/old.txt"), "utf8")).toBe("\uFEFFc\r\nd\r\n")
    }))

  it.scopedLive("a deny leaves the file alone", () =>
    Effect.gen(function*() {
      const { box, edit } = yield* setup
      box.write("project/a.txt", "keep\n")
      const { context } = makeContext({ permission: { "*": "allow", edit: "deny" } })
      const exit = yield* Effect.exit(run(edit, { filePath: "a.txt", oldString: "keep", newString: "lose" }, context))
      expect(failureOf(exit)).toBeInstanceOf(DeniedError)
      expect(fs.readFileSync(box.path("project/a.txt"), "utf8")).toBe("keep\n")
    }))

  it.scopedLive("a file outside the project asks external_directory before edit", () =>
    Effect.gen(function*() {
      const { box, edit } = yield* setup
      box.write("elsewhere/notes.txt", "one\n")
      const { context, asks } = makeContext()
      yield* run(edit, { filePath: box.path("elsewhere/notes.txt"), oldString: "one", newString: "two" }, context)
      expect(asks.map((ask) => [ask.permission, ask.patterns])).toEqual([
        ["external_directory", [path.join(box.path("elsewhere"), "*")]],
        ["edit", [box.path("elsewhere/notes.txt")]]
      ])
      expect(fs.readFileSync(box.path("elsewhere/notes.txt"), "utf8")).toBe("two\n")
    }))

  it.scopedLive("two parallel edits of one file both land (the file lock serialises them)", () =>
    Effect.gen(function*() {
      const { box, edit } = yield* setup
      const file = box.path("project/shared.txt")
      box.write("project/shared.txt", "alpha\nbeta\n")
      // A slow user: without the lock both edits would read the original before either writes.
      const { context } = makeContext({ onAsk: () => Effect.sleep("50 millis") })
      yield* Effect.all(
        [
          run(edit, { filePath: "shared.txt", oldString: "alpha", newString: "ALPHA" }, context),
          run(edit, { filePath: file, oldString: "beta", newString: "BETA" }, context)
        ],
        { concurrency: "unbounded" }
      )
      expect(fs.readFileSync(file, "utf8")).toBe("ALPHA\nBETA\n")
      expect(FileLock.active()).toBe(0)
    }))

  it.scopedLive("refuses to edit a file that changed on disk after this session read it", () =>
    Effect.gen(function*() {
      const { box, edit, read } = yield* setup
      const file = box.path("project/a.txt")
      box.write("project/a.txt", "one\ntwo\n")
      const { context } = makeContext({ sessionID: "ses_stale" })
      yield* run(read, { filePath: "a.txt" }, context)
      // Someone else changes the file afterwards.
      fs.writeFileSync(file, "one\ntwo\nthree\n")
      const later = new Date(Date.now() + 5_000)
      fs.utimesSync(file, later, later)
      const exit = yield* Effect.exit(run(edit, { filePath: "a.txt", oldString: "two", newString: "2" }, context))
      expect(failureOf(exit).message).toMatch(/modified on disk since you last read it.*Read the file again/)
      expect(fs.readFileSync(file, "utf8")).toBe("one\ntwo\nthree\n")
      // Another session never read it: allowed. And after reading again, this one may edit too, twice in a row.
      yield* run(edit, { filePath: "a.txt", oldString: "three", newString: "3" }, makeContext({ sessionID: "ses_other" }).context)
      fs.utimesSync(file, new Date(Date.now() + 10_000), new Date(Date.now() + 10_000))
      yield* run(read, { filePath: "a.txt" }, context)
      yield* run(edit, { filePath: "a.txt", oldString: "two", newString: "2" }, context)
      yield* run(edit, { filePath: "a.txt", oldString: "one", newString: "1" }, context)
      expect(fs.readFileSync(file, "utf8")).toBe("1\n2\n3\n")
    }))
})

describe("edit: in the loop", () => {
  it.scopedLive("the model edits a file: the file changes and the tool part carries the diff", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      box.write("project/greet.js", "console.log('hello')\n")
      const tool = yield* Effect.provideService(Edit.make, Instance, box.instance)
      const model = ScriptedModel.make([
        [
          ScriptedModel.toolCall("edit", {
            filePath: box.path("project/greet.js"),
            oldString: "console.log('hello')",
            newString: "console.log('hello, world')"
          })
        ],
        "Done."
      ])
      const runtime = yield* TestRuntime.make({ model, tools: [tool] })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const session = yield* store.create({ title: "edit" })
        const outcome = yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "greet the world" }] })
        expect(outcome.reason).toBe("completed")
        expect(fs.readFileSync(box.path("project/greet.js"), "utf8")).toBe("console.log('hello, world')\n")
        const messages = yield* store.messages(session.id)
        const part = messages.flatMap((message) => message.parts).find((candidate): candidate is ToolPart => candidate.type === "tool")
        expect(part?.state.status).toBe("completed")
        if (part?.state.status !== "completed") return
        expect(part.state.output).toBe("Edit applied successfully.")
        expect(part.state.metadata).toMatchObject({ additions: 1, deletions: 1, filepath: box.path("project/greet.js") })
        expect(part.state.metadata?.diff).toContain("-console.log('hello')\n+console.log('hello, world')")
      }).pipe(Effect.provide(runtime.layer))
    }))
})

describe("edit: a file is never half written", () => {
  /** A file of `lines` lines, each with one "computeOldName". */
  const bigText = (lines: number) =>
    Array.from({ length: lines }, (_, index) => `const value${index} = computeOldName(input${index}) // x`).join("\n") + "\n"

  it.scopedLive(`on a full disk (${diskKind}) the edit fails naming the error, the file is as it was and no temp file is left`, () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const dir = box.path("project/disk")
      const original = bigText(20_000) // 1 MB, on a 4 MB disk
      const { disk, filler } = yield* fullDisk(dir, { "big.ts": original }, 64 * 1024)
      const edit = yield* Effect.provideService(Edit.make, Instance, box.instance).pipe(onDisk(disk))
      const file = path.join(dir, "big.ts")
      // 160 KB more than the file had: the disk has 64 KB.
      const added = Array.from({ length: 4_000 }, (_, index) => `export const added${index} = ${index} // more`).join("\n")
      const exit = yield* Effect.exit(
        run(edit, { filePath: file, oldString: "const value19999 =", newString: `${added}\nconst value19999 =` }, makeContext().context)
      )
      expect(fs.statSync(file).size).toBe(original.length)
      expect(fs.readFileSync(file).equals(Buffer.from(original))).toBe(true)
      expect(failureOf(exit).message).toBe(`Cannot write ${file}: no space left on device. The original file is unchanged.`)
      expect(strayFiles(dir, ["big.ts", ...(filler ? [filler] : [])])).toEqual([])
    }), 60_000)

  it.scopedLive("keeps the file's mode (and owner, as root)", () =>
    Effect.gen(function*() {
      const { box, edit } = yield* setup
      const file = box.path("project/run.sh")
      fs.writeFileSync(file, "#!/bin/sh\necho one\n")
      fs.chmodSync(file, 0o755)
      if (asRoot) fs.chownSync(file, 1234, 2345)
      yield* run(edit, { filePath: "run.sh", oldString: "one", newString: "two" }, makeContext().context)
      expect(fs.readFileSync(file, "utf8")).toBe("#!/bin/sh\necho two\n")
      const stat = fs.statSync(file)
      expect(stat.mode & 0o7777).toBe(0o755)
      if (asRoot) expect([stat.uid, stat.gid]).toEqual([1234, 2345])
    }))

  it.scopedLive("edits through a symlink: the link stays a link and its target changes", () =>
    Effect.gen(function*() {
      const { box, edit } = yield* setup
      box.write("project/real/config.txt", "mode = old\n")
      fs.symlinkSync("real/config.txt", box.path("project/config.txt"))
      yield* run(edit, { filePath: "config.txt", oldString: "old", newString: "new" }, makeContext().context)
      expect(fs.lstatSync(box.path("project/config.txt")).isSymbolicLink()).toBe(true)
      expect(fs.readlinkSync(box.path("project/config.txt"))).toBe("real/config.txt")
      expect(fs.readFileSync(box.path("project/real/config.txt"), "utf8")).toBe("mode = new\n")
      expect(fs.readdirSync(box.path("project/real"))).toEqual(["config.txt"])
    }))

  it.scopedLive("a Latin-1 file is edited byte for byte: only the replaced bytes change", () =>
    Effect.gen(function*() {
      const { box, edit } = yield* setup
      const file = box.path("project/legacy.txt")
      const latin1 = (text: string) => Buffer.from(text, "latin1")
      fs.writeFileSync(file, Buffer.concat([latin1("Caf\xe9 cr\xe8me\r\n"), latin1("one word here\r\n"), latin1("na\xefve \xa9 2024\r\n")]))
      yield* run(edit, { filePath: "legacy.txt", oldString: "word", newString: "term" }, makeContext().context)
      expect(fs.readFileSync(file).equals(latin1("Caf\xe9 cr\xe8me\r\none term here\r\nna\xefve \xa9 2024\r\n"))).toBe(true)
      // What the model typed (UTF-8 in the call) matches the Latin-1 text, and is written as Latin-1.
      yield* run(edit, { filePath: "legacy.txt", oldString: "Café crème", newString: "Café au lait, très bon" }, makeContext().context)
      expect(fs.readFileSync(file).equals(latin1("Caf\xe9 au lait, tr\xe8s bon\r\none term here\r\nna\xefve \xa9 2024\r\n"))).toBe(true)
      // A character Latin-1 cannot hold is refused, not converted.
      const exit = yield* Effect.exit(run(edit, { filePath: "legacy.txt", oldString: "2024", newString: "2024 €" }, makeContext().context))
      expect(failureOf(exit).message).toMatch(/legacy\.txt is not valid UTF-8, so it is edited as Latin-1 .* U\+20AC "€", which Latin-1 cannot hold/)
      expect(fs.readFileSync(file).equals(latin1("Caf\xe9 au lait, tr\xe8s bon\r\none term here\r\nna\xefve \xa9 2024\r\n"))).toBe(true)
    }))

  it.scopedLive("replaceAll of 34 000 matches in a 1.6 MB file is right and quick, and the event loop keeps ticking", () =>
    Effect.gen(function*() {
      const { box, edit } = yield* setup
      const original = bigText(34_000)
      expect(original.length).toBeGreaterThan(1_600_000)
      box.write("project/big.ts", original)
      // A timer as a signal handler would see it: the longest wait between ticks while the edit runs.
      let last = performance.now()
      let longest = 0
      const timer = setInterval(() => {
        const now = performance.now()
        longest = Math.max(longest, now - last)
        last = now
      }, 10)
      const result = yield* run(
        edit,
        { filePath: "big.ts", oldString: "computeOldName", newString: "computeNewName", replaceAll: true },
        makeContext().context
      ).pipe(Effect.ensuring(Effect.sync(() => clearInterval(timer))))
      expect(fs.readFileSync(box.path("project/big.ts"), "utf8")).toBe(original.replaceAll("computeOldName", "computeNewName"))
      expect(result.metadata).toMatchObject({ additions: 34_000, deletions: 34_000 })
      expect(String(result.metadata?.diff)).toMatch(/the whole change adds 34000 lines and removes 34000\)\n$/)
      expect(longest).toBeLessThan(1_000)
    }), 60_000)

  it.scopedLive("a timeout is honoured during a big edit: the call ends at once, the file whole (as it was, or edited)", () =>
    Effect.gen(function*() {
      const { box, edit } = yield* setup
      const original = bigText(34_000)
      box.write("project/big.ts", original)
      const started = performance.now()
      // 100 ms: past the file's load, in the middle of the matching and diffing (a fast machine may finish first).
      const outcome = yield* run(
        edit,
        { filePath: "big.ts", oldString: "computeOldName", newString: "computeNewName", replaceAll: true },
        makeContext().context
      ).pipe(Effect.timeoutOption("100 millis"))
      expect(performance.now() - started).toBeLessThan(2_000)
      expect(fs.readFileSync(box.path("project/big.ts"), "utf8")).toBe(
        outcome._tag === "None" ? original : original.replaceAll("computeOldName", "computeNewName")
      )
      expect(fs.readdirSync(box.path("project")).sort()).toEqual([".git", "big.ts"])
    }), 60_000)
})
