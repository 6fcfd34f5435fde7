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
import { FileTimes } from "../../src/tool/FileTimes.js"
import * as Write from "../../src/tools/Write.js"
import { asRoot, diskKind, fullDisk, onDisk, strayFiles } from "./disk.js"

/**
 * A ToolContext that records asks and answers them from `permission` rules (deny fails the call);
 * `onAsk` runs inside each ask, e.g. to look at the disk while the user is being asked.
 */
const makeContext = (
  options: { permission?: PermissionConfig; sessionID?: string; onAsk?: (request: TestToolContext.AskRequest) => Effect.Effect<void> } = {}
) =>
  TestToolContext.make({ ...options, sessionID: options.sessionID ?? `ses_write_${Math.random()}` })

const setup = Effect.gen(function*() {
  const box = yield* TestInstance.sandbox()
  const write = yield* Effect.provideService(Write.make, Instance, box.instance)
  return { box, write }
})

const run = (tool: Tool.AnyTool, input: Record<string, unknown>, context: Tool.ToolContext) =>
  Tool.decodeInput(tool, input).pipe(Effect.flatMap((params) => tool.execute(params, context)))

const failureOf = <A>(exit: Exit.Exit<A, Tool.ToolFailure>): Tool.ToolFailure => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  if (exit.cause._tag !== "Fail") throw new Error(`expected a typed failure, got ${exit.cause._tag}`)
  return exit.cause.error
}

describe("write", () => {
  it.scopedLive("creates the file and its directories, showing the diff in the ask before writing", () =>
    Effect.gen(function*() {
      const { box, write } = yield* setup
      const file = box.path("project/deep/nested/new.txt")
      let existedAtAsk: boolean | undefined
      const { context, asks } = makeContext({ onAsk: () => Effect.sync(() => void (existedAtAsk = fs.existsSync(file))) })
      const result = yield* run(write, { content: "hello\nworld\n", filePath: "deep/nested/new.txt" }, context)
      expect(fs.readFileSync(file, "utf8")).toBe("hello\nworld\n")
      expect(existedAtAsk).toBe(false)
      expect(result.output).toBe("Wrote file successfully.")
      expect(result.title).toBe("deep/nested/new.txt")
      expect(result.metadata).toMatchObject({ filepath: file, exists: false })
      expect(asks).toHaveLength(1)
      expect(asks[0]).toMatchObject({ permission: "edit", patterns: ["deep/nested/new.txt"], always: ["*"], metadata: { filepath: file } })
      expect(asks[0]!.metadata?.diff).toContain("+hello\n+world")
      expect(result.metadata?.diff).toBe(asks[0]!.metadata?.diff)
    }))

  it.scopedLive("overwrites an existing file, keeping its BOM and CRLF line endings", () =>
    Effect.gen(function*() {
      const { box, write } = yield* setup
      const file = box.path("project/win.txt")
      fs.writeFileSync(file, "\uFEFFold\r\nlines\r\n")
      const result = yield* run(write, { filePath: "win.txt", content: "new\nlines\nhere\n" }, makeContext().context)
      expect(fs.readFileSync(file, "utf8")).toBe("\uFEFFnew\r\nlines\r\nhere\r\n")
      expect(result.metadata).toMatchObject({ exists: true })
      expect(result.metadata?.diff).toContain("-old\n+new\n lines\n+here")
    }))

  it.scopedLive("a deny stops the write and leaves the file unchanged", () =>
    Effect.gen(function*() {
      const { box, write } = yield* setup
      box.write("project/keep.txt", "original\n")
      const { context, asks } = makeContext({ permission: { "*": "allow", edit: { "*": "allow", "keep.txt": "deny" } } })
      const exit = yield* Effect.exit(run(write, { filePath: "keep.txt", content: "replaced\n" }, context))
      expect(failureOf(exit)).toBeInstanceOf(DeniedError)
      expect(asks.map((ask) => ask.patterns)).toEqual([["keep.txt"]])
      expect(fs.readFileSync(box.path("project/keep.txt"), "utf8")).toBe("original\n")
      const fresh = yield* Effect.exit(run(write, { filePath: "fresh/keep-not.txt", content: "x" }, context))
      expect(Exit.isSuccess(fresh)).toBe(true)
    }))

  it.scopedLive("a path outside the project asks external_directory first", () =>
    Effect.gen(function*() {
      const { box, write } = yield* setup
      const target = box.path("outside/dir/out.txt")
      const { context, asks } = makeContext({ permission: { "*": "allow", external_directory: "deny" } })
      const exit = yield* Effect.exit(run(write, { filePath: target, content: "x" }, context))
      expect(failureOf(exit)).toBeInstanceOf(DeniedError)
      expect(asks).toEqual([
        {
          permission: "external_directory",
          patterns: [path.join(box.path("outside/dir"), "*")],
          always: [path.join(box.path("outside/dir"), "*")],
          metadata: { filepath: target, parentDir: box.path("outside/dir") }
        }
      ])
      expect(fs.existsSync(target)).toBe(false)
    }))

  it.scopedLive("refuses to overwrite a file that changed after this session read it", () =>
    Effect.gen(function*() {
      const { box, write } = yield* setup
      const file = box.path("project/a.txt")
      box.write("project/a.txt", "v1\n")
      const fileTimes = yield* FileTimes
      fileTimes.record("ses_write_stale", file, fs.statSync(file).mtimeMs)
      const later = new Date(Date.now() + 5_000)
      fs.utimesSync(file, later, later)
      const exit = yield* Effect.exit(run(write, { filePath: "a.txt", content: "v2\n" }, makeContext({ sessionID: "ses_write_stale" }).context))
      expect(failureOf(exit).message).toMatch(/modified on disk since you last read it/)
      expect(fs.readFileSync(file, "utf8")).toBe("v1\n")
    }))

  it.scopedLive("writing onto a directory is an error", () =>
    Effect.gen(function*() {
      const { box, write } = yield* setup
      fs.mkdirSync(box.path("project/folder"))
      const exit = yield* Effect.exit(run(write, { filePath: "folder", content: "x" }, makeContext().context))
      expect(failureOf(exit).message).toMatch(/is a directory/)
    }))
})

describe("write: in the loop", () => {
  it.scopedLive("the model writes a new file", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const tool = yield* Effect.provideService(Write.make, Instance, box.instance)
      const model = ScriptedModel.make([
        [ScriptedModel.toolCall("write", { content: "# Title\n", filePath: box.path("project/docs/README.md") })],
        "Written."
      ])
      const runtime = yield* TestRuntime.make({ model, tools: [tool] })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const session = yield* store.create({ title: "write" })
        expect((yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "add docs" }] })).reason).toBe("completed")
        expect(fs.readFileSync(box.path("project/docs/README.md"), "utf8")).toBe("# Title\n")
        const part = (yield* store.messages(session.id))
          .flatMap((message) => message.parts)
          .find((candidate): candidate is ToolPart => candidate.type === "tool")
        expect(part?.state.status === "completed" && part.state.output).toBe("Wrote file successfully.")
        expect(part?.state.status === "completed" && part.state.metadata?.diff).toContain("+# Title")
      }).pipe(Effect.provide(runtime.layer))
    }))
})

describe("write: a file is never half written", () => {
  it.scopedLive(`on a full disk (${diskKind}) the write fails naming the error; the file is as it was, no temp file is left`, () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const dir = box.path("project/disk")
      const original = "original line\n".repeat(50_000) // 700 KB on a 4 MB disk
      const { disk, filler } = yield* fullDisk(dir, { "data.txt": original, "keep.txt": "x" }, 64 * 1024)
      const write = yield* Effect.provideService(Write.make, Instance, box.instance).pipe(onDisk(disk))
      const file = path.join(dir, "data.txt")
      const exit = yield* Effect.exit(run(write, { filePath: file, content: original + "one more line\n".repeat(10_000) }, makeContext().context))
      expect(fs.statSync(file).size).toBe(original.length)
      expect(fs.readFileSync(file).equals(Buffer.from(original))).toBe(true)
      expect(failureOf(exit).message).toBe(`Cannot write ${file}: no space left on device. The original file is unchanged.`)
      // A new file that does not fit is not created, and its new directory goes too.
      const fresh = path.join(dir, "new/dir/fresh.txt")
      const created = yield* Effect.exit(run(write, { filePath: fresh, content: "x".repeat(1_000_000) }, makeContext().context))
      expect(failureOf(created).message).toBe(`Cannot write ${fresh}: no space left on device. The file was not created.`)
      expect(strayFiles(dir, ["data.txt", "keep.txt", ...(filler ? [filler] : [])])).toEqual([])
    }), 60_000)

  it.scopedLive("keeps the mode (and owner, as root); writes through a symlink to its target", () =>
    Effect.gen(function*() {
      const { box, write } = yield* setup
      box.write("project/bin/tool", "#!/bin/sh\n")
      fs.chmodSync(box.path("project/bin/tool"), 0o755)
      if (asRoot) fs.chownSync(box.path("project/bin/tool"), 1234, 2345)
      fs.symlinkSync("bin/tool", box.path("project/tool"))
      yield* run(write, { filePath: "tool", content: "#!/bin/sh\necho hi\n" }, makeContext().context)
      expect(fs.lstatSync(box.path("project/tool")).isSymbolicLink()).toBe(true)
      expect(fs.readFileSync(box.path("project/bin/tool"), "utf8")).toBe("#!/bin/sh\necho hi\n")
      const stat = fs.statSync(box.path("project/bin/tool"))
      expect(stat.mode & 0o7777).toBe(0o755)
      if (asRoot) expect([stat.uid, stat.gid]).toEqual([1234, 2345])
    }))

  it.scopedLive("a Latin-1 file stays Latin-1 when the new content fits, else becomes UTF-8 and the result says so", () =>
    Effect.gen(function*() {
      const { box, write } = yield* setup
      const file = box.path("project/legacy.txt")
      fs.writeFileSync(file, Buffer.from("caf\xe9\n", "latin1"))
      const kept = yield* run(write, { filePath: "legacy.txt", content: "café crème\n" }, makeContext().context)
      expect(fs.readFileSync(file).equals(Buffer.from("caf\xe9 cr\xe8me\n", "latin1"))).toBe(true)
      expect(kept.output).toBe("Wrote file successfully.")
      const converted = yield* run(write, { filePath: "legacy.txt", content: "café 5 €\n" }, makeContext().context)
      expect(fs.readFileSync(file, "utf8")).toBe("café 5 €\n")
      expect(converted.output).toMatch(/it is UTF-8 now, since the new content has U\+20AC "€"/)
    }))
})
