import { readDeps } from "./deps.js"
import { DeniedError, type PermissionConfig, type ToolPart } from "@agent/domain"
import { ScriptedModel, TestInstance, TestRuntime, TestToolContext } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { PermissionService } from "../../src/permission/PermissionService.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import * as Tool from "../../src/tool/Tool.js"
import { FileTimes } from "../../src/tool/FileTimes.js"
import * as Read from "../../src/tools/Read.js"

/** A ToolContext that records asks and answers them from `permission` rules (deny fails the call). */
const makeContext = (permission: PermissionConfig = { "*": "allow" }, sessionID = "ses_read") =>
  TestToolContext.make({ permission, sessionID })

const setup = (options: TestInstance.TestInstanceOptions = {}) =>
  Effect.gen(function*() {
    const box = yield* TestInstance.sandbox(options)
    const tool = yield* Effect.provide(Read.make, readDeps(box.instance))
    return { box, tool }
  })

/** Decodes the input as the loop does, then runs the tool. */
const run = (tool: Tool.AnyTool, input: Record<string, unknown>, context: Tool.ToolContext) =>
  Tool.decodeInput(tool, input).pipe(Effect.flatMap((params) => tool.execute(params, context)))

const failureOf = <A>(exit: Exit.Exit<A, Tool.ToolFailure>): Tool.ToolFailure => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  if (failure === undefined) throw new Error(`expected a typed failure, got ${exit.cause._tag}`)
  return failure
}

const numbered = (count: number, text: (n: number) => string = (n) => `line ${n}`) =>
  Array.from({ length: count }, (_, index) => text(index + 1)).join("\n") + "\n"

describe("read: text files", () => {
  it.scopedLive("shows numbered lines in OpenCode's format and asks read with the worktree-relative path", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      box.write("project/src/a.txt", "alpha\nbeta\ngamma\n")
      const { context, asks } = makeContext()
      const result = yield* run(tool, { filePath: "src/a.txt" }, context)
      const file = box.path("project/src/a.txt")
      expect(result.output).toBe(
        `<path>${file}</path>\n<type>file</type>\n<content>\n1: alpha\n2: beta\n3: gamma\n\n(End of file - total 3 lines)\n</content>`
      )
      expect(result.title).toBe("src/a.txt")
      expect(result.truncated).toBe(true)
      expect(asks).toEqual([{ permission: "read", patterns: ["src/a.txt"], always: ["*"], metadata: { filepath: file } }])
      expect((yield* FileTimes).lastRead("ses_read", file)).toBe(fs.statSync(file).mtimeMs)
    }))

  it.scopedLive("offset and limit page through the file; offset 0 starts at line 1", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      box.write("project/ten.txt", numbered(10))
      const { context } = makeContext()
      const middle = yield* run(tool, { filePath: "ten.txt", offset: 3, limit: 4 }, context)
      expect(middle.output).toContain("<content>\n3: line 3\n4: line 4\n5: line 5\n6: line 6\n\n")
      expect(middle.output).not.toContain("7: line 7")
      expect(middle.output).toContain("(Showing lines 3-6 of 10. Use offset=7 to continue.)\n</content>")
      const fromZero = yield* run(tool, { filePath: "ten.txt", offset: 0, limit: 2 }, context)
      expect(fromZero.output).toContain("<content>\n1: line 1\n2: line 2\n\n(Showing lines 1-2 of 10. Use offset=3 to continue.)")
      const tail = yield* run(tool, { filePath: "ten.txt", offset: 9 }, context)
      expect(tail.output).toContain("9: line 9\n10: line 10\n\n(End of file - total 10 lines)")
    }))

  it.scopedLive("an offset past the end is an error naming the line count", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      box.write("project/ten.txt", numbered(10))
      const exit = yield* Effect.exit(run(tool, { filePath: "ten.txt", offset: 11 }, makeContext().context))
      expect(failureOf(exit).message).toBe("Offset 11 is out of range for this file (10 lines)")
    }))

  it.scopedLive("negative or fractional offsets are rejected by the schema", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup()
      const exit = yield* Effect.exit(run(tool, { filePath: "x", offset: -1 }, makeContext().context))
      expect(failureOf(exit)).toBeInstanceOf(Tool.ToolInputError)
      // one issue per problem, without the noise of the optional field's `undefined` branch
      expect(failureOf(exit).message).toBe(
        "The read tool was called with invalid arguments: offset: expected a line number: a whole number, 1 or more (0 counts as 1).\n" +
          "Please rewrite the input so it satisfies the expected schema."
      )
      const fraction = yield* Effect.exit(run(tool, { filePath: "x", offset: 1.5, limit: "ten" }, makeContext().context))
      expect(failureOf(fraction).message).toBe(
        "The read tool was called with invalid arguments: offset: expected a line number: a whole number, 1 or more (0 counts as 1); " +
          "limit: expected a whole number of lines, 0 or more (0 means the default).\n" +
          "Please rewrite the input so it satisfies the expected schema."
      )
    }))

  it.scopedLive("counts the lines of a long file without showing them (and without a trailing newline)", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      box.write("project/big.txt", numbered(100_000).slice(0, -1))
      const result = yield* run(tool, { filePath: "big.txt", limit: 10 }, makeContext().context)
      expect(result.output).toContain("10: line 10\n\n(Showing lines 1-10 of 100000. Use offset=11 to continue.)")
      const last = yield* run(tool, { filePath: "big.txt", offset: 100_000 }, makeContext().context)
      expect(last.output).toContain("100000: line 100000\n\n(End of file - total 100000 lines)")
    }))

  it.scopedLive("without a limit it shows 2000 lines and says where to continue", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      box.write("project/long.txt", numbered(2500))
      const result = yield* run(tool, { filePath: "long.txt" }, makeContext().context)
      expect(result.output).toContain("<content>\n1: line 1\n")
      expect(result.output).toContain("\n2000: line 2000\n\n(Showing lines 1-2000 of 2500. Use offset=2001 to continue.)\n</content>")
      expect(result.output).not.toContain("2001: ")
      const rest = yield* run(tool, { filePath: "long.txt", offset: 2001 }, makeContext().context)
      expect(rest.output).toContain("<content>\n2001: line 2001\n")
      expect(rest.output).toContain("2500: line 2500\n\n(End of file - total 2500 lines)")
    }))

  it.scopedLive("lines longer than 2000 characters are cut", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      box.write("project/wide.txt", `short\n${"x".repeat(5000)}\nend\n`)
      const result = yield* run(tool, { filePath: "wide.txt" }, makeContext().context)
      expect(result.output).toContain(`2: ${"x".repeat(2000)}... (line truncated to 2000 chars)\n3: end`)
      expect(result.output).not.toContain("x".repeat(2001))
    }))

  it.scopedLive("stops at 50 KB of lines and says where to continue", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      box.write("project/heavy.txt", numbered(3000, () => "y".repeat(100)))
      const result = yield* run(tool, { filePath: "heavy.txt" }, makeContext().context)
      // 100-byte lines plus newlines: 506 of them fit in 51200 bytes.
      expect(result.output).toContain("506: ")
      expect(result.output).not.toContain("507: ")
      expect(result.output).toContain("(Output capped at 50 KB. Showing lines 1-506. Use offset=507 to continue.)\n</content>")
      expect(Buffer.byteLength(result.output)).toBeLessThan(60 * 1024)
      expect(result.truncated).toBe(true)
    }))

  it.scopedLive("a small file (read at once) and a large one (streamed) show the same multi-byte lines", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      const text = (n: number) => `ünïcødé 日本語 ${n} ${"é".repeat(n % 7)}`
      box.write("project/small.txt", numbered(100, text))
      box.write("project/large.txt", numbered(5000, text)) // about 150 KB: streamed in 64 KB chunks
      expect(fs.statSync(box.path("project/large.txt")).size).toBeGreaterThan(128 * 1024)
      const expected = [41, 42, 43].map((n) => `${n}: ${text(n)}`).join("\n")
      const small = yield* run(tool, { filePath: "small.txt", offset: 41, limit: 3 }, makeContext().context)
      expect(small.output).toContain(`${expected}\n\n(Showing lines 41-43 of 100. Use offset=44 to continue.)`)
      const large = yield* run(tool, { filePath: "large.txt", offset: 41, limit: 3 }, makeContext().context)
      expect(large.output).toContain(`${expected}\n\n(Showing lines 41-43 of 5000. Use offset=44 to continue.)`)
      // A character cut by a chunk boundary comes out whole: 1000 lines of 65 bytes, then a line
      // whose 3-byte character starts at byte 65 535, one byte before the first chunk ends.
      const straddle = `${"a".repeat(535)}語語 tail`
      box.write("project/cut.txt", `${"a".repeat(64)}\n`.repeat(1000) + `${straddle}\n` + `${"語".repeat(30)}\n`.repeat(2000))
      expect(Buffer.from(fs.readFileSync(box.path("project/cut.txt"))).subarray(65535, 65538).toString()).toBe("語")
      const cut = yield* run(tool, { filePath: "cut.txt", offset: 1001, limit: 2 }, makeContext().context)
      expect(cut.output).toContain(`<content>\n1001: ${straddle}\n1002: ${"語".repeat(30)}\n\n(Showing lines 1001-1002 of 3001.`)
    }))

  it.scopedLive("an empty file has zero lines", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      box.write("project/empty.txt", "")
      const result = yield* run(tool, { filePath: "empty.txt" }, makeContext().context)
      expect(result.output).toBe(`<path>${box.path("project/empty.txt")}</path>\n<type>file</type>\n<content>\n(End of file - total 0 lines)\n</content>`)
    }))

  it.scopedLive("a file that is not UTF-8 shows as Latin-1, with a note saying so, small or streamed", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      fs.writeFileSync(box.path("project/legacy.txt"), Buffer.from("caf\xe9 cr\xe8me\n\xa9 2024\n", "latin1"))
      const small = yield* run(tool, { filePath: "legacy.txt" }, makeContext().context)
      expect(small.output).toContain("1: café crème\n2: © 2024\n\n(End of file - total 2 lines)\n(This file is not valid UTF-8. It is shown as Latin-1")
      // Large: streamed, and the only Latin-1 byte comes long after the 50 KB the call shows.
      const utf8Head = "ünïcödé line\n".repeat(10_000)
      fs.writeFileSync(box.path("project/mixed.txt"), Buffer.concat([Buffer.from(utf8Head), Buffer.from("caf\xe9\n", "latin1")]))
      const large = yield* run(tool, { filePath: "mixed.txt", limit: 2 }, makeContext().context)
      // As the edit tools will see it: UTF-8's two bytes per "ü" are two Latin-1 characters.
      expect(large.output).toContain("1: Ã¼nÃ¯cÃ¶dÃ© line\n2: Ã¼nÃ¯cÃ¶dÃ© line\n\n(Showing lines 1-2 of 10001.")
      expect(large.output).toContain("(This file is not valid UTF-8.")
      // A UTF-8 file, streamed too, has no note.
      fs.writeFileSync(box.path("project/fine.txt"), utf8Head)
      const fine = yield* run(tool, { filePath: "fine.txt", limit: 1 }, makeContext().context)
      expect(fine.output).toContain("1: ünïcödé line\n\n(Showing lines 1-1 of 10000.")
      expect(fine.output).not.toContain("not valid UTF-8")
    }))

  it.scopedLive("CRLF files show without carriage returns", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      box.write("project/dos.txt", "one\r\ntwo\r\n")
      const result = yield* run(tool, { filePath: "dos.txt" }, makeContext().context)
      expect(result.output).toContain("1: one\n2: two\n\n(End of file - total 2 lines)")
      expect(result.output).not.toContain("\r")
    }))
})

describe("read: directories, binaries, images, missing files", () => {
  it.scopedLive("lists a directory sorted, with / on subdirectories, asking external_directory as a directory when outside", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      box.write("project/dir/b.txt", "b")
      box.write("project/dir/a/inner.txt", "a")
      box.write("project/dir/c.md", "c")
      const { context, asks } = makeContext()
      const result = yield* run(tool, { filePath: "dir" }, context)
      expect(result.output).toBe(
        `<path>${box.path("project/dir")}</path>\n<type>directory</type>\n<entries>\na/\nb.txt\nc.md\n(3 entries)\n</entries>`
      )
      expect(asks.map((ask) => ask.permission)).toEqual(["read"])

      box.write("outside/x.txt", "x")
      const outside = makeContext()
      yield* run(tool, { filePath: box.path("outside") }, outside.context)
      expect(outside.asks[0]).toMatchObject({ permission: "external_directory", patterns: [path.join(box.path("outside"), "*")] })
    }))

  it.scopedLive("pages through large directories", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      for (let index = 0; index < 12; index++) box.write(`project/many/f${String(index).padStart(2, "0")}`, "")
      const result = yield* run(tool, { filePath: "many", offset: 3, limit: 4 }, makeContext().context)
      expect(result.output).toContain("<entries>\nf02\nf03\nf04\nf05\n(Showing entries 3-6 of 12. Use offset=7 to continue.)\n</entries>")
    }))

  it.scopedLive("refuses binary files, by content", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      fs.writeFileSync(box.path("project/blob.xyz"), Buffer.from([0x41, 0x00, 0x42, 0x43]))
      fs.writeFileSync(box.path("project/noise.txt"), Buffer.from(Array.from({ length: 100 }, (_, index) => (index % 2 ? 1 : 65))))
      // Past 64 KB a file is streamed: its head is looked at first.
      fs.writeFileSync(box.path("project/large.out"), Buffer.concat([Buffer.from([0x7f, 0x45, 0x00, 0x01]), Buffer.alloc(100 * 1024, 0x41)]))
      for (const name of ["blob.xyz", "noise.txt", "large.out"]) {
        const exit = yield* Effect.exit(run(tool, { filePath: name }, makeContext().context))
        expect(failureOf(exit).message).toBe(`Cannot read binary file: ${box.path(`project/${name}`)}`)
      }
    }))

  it.scopedLive("attaches images and PDFs as data URLs, up to 10 MB", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0])
      fs.writeFileSync(box.path("project/logo.png"), png)
      const result = yield* run(tool, { filePath: "logo.png" }, makeContext().context)
      expect(result.output).toContain("Image read successfully")
      expect(result.attachments).toEqual([
        { mime: "image/png", url: `data:image/png;base64,${png.toString("base64")}`, filename: "logo.png" }
      ])
      fs.writeFileSync(box.path("project/doc.pdf"), "%PDF-1.4\n")
      const pdf = yield* run(tool, { filePath: "doc.pdf" }, makeContext().context)
      expect(pdf.attachments?.[0]?.mime).toBe("application/pdf")

      const huge = box.path("project/huge.jpg")
      fs.writeFileSync(huge, Buffer.from([0xff, 0xd8, 0xff, 0xe0]))
      fs.truncateSync(huge, 11 * 1024 * 1024)
      const exit = yield* Effect.exit(run(tool, { filePath: "huge.jpg" }, makeContext().context))
      expect(failureOf(exit).message).toMatch(/Cannot attach .*huge\.jpg.*limited to 10 MB/)
    }))

  it.scopedLive("a missing file suggests similar names from the same directory", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      box.write("project/src/config.json", "{}")
      box.write("project/src/Config.yaml", "")
      box.write("project/src/unrelated.md", "")
      const exit = yield* Effect.exit(run(tool, { filePath: "src/confg.json" }, makeContext().context))
      const message = failureOf(exit).message
      expect(message).toMatch(new RegExp(`^File not found: ${box.path("project/src/confg.json")}\n\nDid you mean one of these\\?\n`))
      expect(message).toContain(box.path("project/src/config.json"))
      expect(message).not.toContain("unrelated.md")

      const none = yield* Effect.exit(run(tool, { filePath: "src/zzzzzzzzzz.rs" }, makeContext().context))
      expect(failureOf(none).message).toBe(`File not found: ${box.path("project/src/zzzzzzzzzz.rs")}`)
    }))
})

describe("read: permissions", () => {
  it.scopedLive(".env files ask read with their worktree-relative path; a deny rule on them fails the call", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      box.write("project/app/.env", "SECRET=1\n")
      box.write("project/app/.env.example", "SECRET=\n")
      const { context, asks } = makeContext()
      yield* run(tool, { filePath: "app/.env" }, context)
      yield* run(tool, { filePath: "app/.env.example" }, context)
      expect(asks.map((ask) => [ask.permission, ask.patterns, ask.always])).toEqual([
        ["read", ["app/.env"], ["*"]],
        ["read", ["app/.env.example"], ["*"]]
      ])
      const denied = makeContext({ "*": "allow", read: { "*.env": "deny" } })
      const exit = yield* Effect.exit(run(tool, { filePath: "app/.env" }, denied.context))
      expect(failureOf(exit)).toBeInstanceOf(DeniedError)
    }))

  it.scopedLive("with the built-in default rules, reading .env (at any depth) waits for the user; .env.example does not", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        [ScriptedModel.toolCall("read", { filePath: "config/.env.example" })],
        [ScriptedModel.toolCall("read", { filePath: "config/.env" })],
        [ScriptedModel.toolCall("read", { filePath: ".env.production" })],
        "Done."
      ])
      // No permission config at all: the runtime's own defaults decide.
      const runtime = yield* TestRuntime.make({
        model,
        files: { "project/config/.env": "SECRET=1\n", "project/config/.env.example": "SECRET=\n", "project/.env.production": "P=1\n" }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const permissions = yield* PermissionService
        const session = yield* store.create({ title: "env" })
        const running = yield* Effect.fork(
          (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "show the settings" }] })
        )
        const pending = (pattern: string) =>
          Effect.gen(function*() {
            for (;;) {
              const request = (yield* permissions.list()).find((candidate) => candidate.patterns.includes(pattern))
              if (request) return request
              yield* Effect.sleep("5 millis")
            }
          })
        const env = yield* pending("config/.env")
        expect(env).toMatchObject({ permission: "read", patterns: ["config/.env"], always: ["*"] })
        // the example was read without asking anybody
        expect(model.calls).toHaveLength(2)
        yield* permissions.reply({ requestID: env.id, reply: "once" })
        const production = yield* pending(".env.production")
        expect(production.permission).toBe("read")
        yield* permissions.reply({ requestID: production.id, reply: "once" })
        expect((yield* Fiber.join(running)).reason).toBe("completed")
        const outputs = (yield* store.messages(session.id))
          .flatMap((message) => message.parts)
          .filter((part): part is ToolPart => part.type === "tool")
          .map((part) => (part.state.status === "completed" ? part.state.output : part.state.status))
        expect(outputs).toHaveLength(3)
        expect(outputs[0]).toContain("1: SECRET=")
        expect(outputs[1]).toContain("1: SECRET=1")
        expect(outputs[2]).toContain("1: P=1")
      }).pipe(Effect.provide(runtime.layer))
    }))

  it.scopedLive("path traversal out of the project asks external_directory before anything else", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      const traversal = path.relative(box.instance.directory, "/etc/hosts")
      expect(traversal.startsWith("../../")).toBe(true)
      const { context, asks } = makeContext({ "*": "allow", external_directory: "deny" })
      const exit = yield* Effect.exit(run(tool, { filePath: traversal }, context))
      expect(failureOf(exit)).toBeInstanceOf(DeniedError)
      expect(asks).toEqual([
        {
          permission: "external_directory",
          patterns: ["/etc/*"],
          always: ["/etc/*"],
          metadata: { filepath: "/etc/hosts", parentDir: "/etc" }
        }
      ])
    }))

  it.scopedLive("a symlink inside the project that points outside asks external_directory", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      box.write("outside/secret.txt", "top secret\n")
      fs.symlinkSync(box.path("outside"), box.path("project/link"))
      fs.symlinkSync(box.path("outside/secret.txt"), box.path("project/secret-link.txt"))
      for (const filePath of ["link/secret.txt", "secret-link.txt"]) {
        const { context, asks } = makeContext({ "*": "allow", external_directory: "deny" })
        const exit = yield* Effect.exit(run(tool, { filePath }, context))
        expect(failureOf(exit)).toBeInstanceOf(DeniedError)
        expect(asks.map((ask) => [ask.permission, ask.patterns])).toEqual([
          ["external_directory", [path.join(box.path("outside"), "*")]]
        ])
      }
      // Allowed, the link is followed.
      const { context } = makeContext()
      const result = yield* run(tool, { filePath: "link/secret.txt" }, context)
      expect(result.output).toContain("1: top secret")
    }))
})

describe("read: in the loop", () => {
  it.scopedLive("the model reads a file and gets its numbered lines back", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      box.write("project/notes.md", "# Notes\nremember the milk\n")
      const tool = yield* Effect.provide(Read.make, readDeps(box.instance))
      const model = ScriptedModel.make([
        [ScriptedModel.toolCall("read", { filePath: box.path("project/notes.md") })],
        "You need milk."
      ])
      const runtime = yield* TestRuntime.make({ model, tools: [tool] })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const session = yield* store.create({ title: "read" })
        const outcome = yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "what do my notes say?" }] })
        expect(outcome.reason).toBe("completed")
        const messages = yield* store.messages(session.id)
        const part = messages.flatMap((message) => message.parts).find((candidate): candidate is ToolPart => candidate.type === "tool")
        expect(part?.state.status).toBe("completed")
        expect(part?.state.status === "completed" && part.state.output).toContain("2: remember the milk")
        const results = model.calls[1]!.prompt.filter((entry) => entry.role === "tool").flatMap((entry) => entry.content)
        expect(JSON.stringify(results)).toContain("1: # Notes")
      }).pipe(Effect.provide(runtime.layer))
    }))
})
