import type { ToolPart } from "@agent/domain"
import { ScriptedModel, TestInstance, TestRuntime, TestToolContext } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as fs from "node:fs"
import { Instance } from "../../src/runtime/Instance.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import * as Tool from "../../src/tool/Tool.js"
import * as Edit from "../../src/tools/Edit.js"
import * as Read from "../../src/tools/Read.js"
import * as Write from "../../src/tools/Write.js"
import { readDeps } from "./deps.js"

/** edit beyond exact matches, and Claude Code's argument names: through the tools, arguments in, files and results out. */

const setup = Effect.gen(function*() {
  const box = yield* TestInstance.sandbox()
  const tools = {
    edit: yield* Effect.provideService(Edit.make, Instance, box.instance),
    write: yield* Effect.provideService(Write.make, Instance, box.instance),
    read: yield* Effect.provide(Read.make, readDeps(box.instance))
  }
  const file = (name: string) => box.path(`project/${name}`)
  const text = (name: string) => fs.readFileSync(file(name), "utf8")
  const call = (tool: keyof typeof tools, input: Record<string, unknown>) =>
    Tool.decodeInput(tools[tool], input).pipe(
      Effect.flatMap((params) => tools[tool].execute(params, TestToolContext.make({ sessionID: `ses_fuzzy_${Math.random()}` }).context))
    )
  const edit = (input: Record<string, unknown>) => call("edit", input)
  const refused = (tool: keyof typeof tools, input: Record<string, unknown>) =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(call(tool, input))
      if (Exit.isSuccess(exit) || exit.cause._tag !== "Fail") throw new Error("expected the call to fail")
      return exit.cause.error.message
    })
  return { box, tools, file, text, edit, call, refused }
})

describe("edit: when oldString is not there exactly", () => {
  const cases: ReadonlyArray<{
    readonly strategy: string
    readonly content: string
    readonly oldString: string
    readonly newString: string
    readonly expected: string
  }> = [
    {
      strategy: "line-trimmed",
      content: "function f() {\n    start()   \n    stop()\n}\n",
      oldString: "    start()\n    stop()",
      newString: "    begin()\n    stop()",
      expected: "function f() {\n    begin()\n    stop()\n}\n"
    },
    {
      strategy: "whitespace-normalized",
      content: "const total = price  *  count;\n",
      oldString: "total = price * count",
      newString: "total = price * amount",
      expected: "const total = price * amount;\n"
    },
    {
      strategy: "indentation-flexible",
      content: "class A {\n  m() {\n    if (a) {\n      run()\n    }\n  }\n  n() {\n    if (a) {\n    run()\n    }\n  }\n}\n",
      oldString: "if (a) {\n  run()\n}",
      newString: "if (a) {\n  go()\n}",
      // line-trimmed sees both blocks; only m's has the same relative indentation. The replacement lands at its indentation.
      expected: "class A {\n  m() {\n    if (a) {\n      go()\n    }\n  }\n  n() {\n    if (a) {\n    run()\n    }\n  }\n}\n"
    },
    {
      strategy: "escape-normalized",
      content: "print(\"hi\")\nnext()\n",
      oldString: "print(\\\"hi\\\")\\nnext()",
      newString: "print(\"hello\")\nnext()",
      expected: "print(\"hello\")\nnext()\n"
    },
    {
      strategy: "unicode-normalized",
      content: "title = \u201CCaf\u00E9 \u2013 menu\u201D\nprice = 3\n",
      oldString: "title = \"Cafe\u0301 - menu\"",
      newString: "title = \"Tea - menu\"",
      expected: "title = \"Tea - menu\"\nprice = 3\n"
    },
    {
      strategy: "block-anchor",
      content: "// math\nfunction add(a, b) {\n  const sum = a + b\n  return sum\n}\n",
      oldString: "function add(a, b) {\n  const sum = a + b // add them\n  return sum\n}",
      newString: "function add(a, b) {\n  return a + b\n}",
      expected: "// math\nfunction add(a, b) {\n  return a + b\n}\n"
    }
  ]
  for (const { strategy, content, oldString, newString, expected } of cases) {
    it.scopedLive(`${strategy}: applied when it singles out one place, and the result says so`, () =>
      Effect.gen(function*() {
        const { box, text, edit } = yield* setup
        box.write("project/f.txt", content)
        const result = yield* edit({ filePath: "f.txt", oldString, newString })
        expect(text("f.txt")).toBe(expected)
        expect(result.output).toMatch(new RegExp(`^Edit applied successfully\\. oldString was not found exactly; it matched one place .*\\(strategy: ${strategy}\\)`))
      }))
  }

  it.scopedLive("a fuzzy match found in two places is not applied: the error says how many and where, the file is unchanged", () =>
    Effect.gen(function*() {
      const { box, text, refused } = yield* setup
      const content = "a()\n  step(1)\n  next()\nb()\n    step(1)\n    next()\n"
      box.write("project/f.txt", content)
      const message = yield* refused("edit", { filePath: "f.txt", oldString: "step(1)\n      next()", newString: "x" })
      expect(message).toMatch(/^Found multiple matches for oldString \(2 places when lines are compared without their leading and trailing whitespace\) in .*f\.txt, at lines 2 and 5\./)
      expect(text("f.txt")).toBe(content)
    }))

  it.scopedLive("several exact matches are an error that counts them and names their lines, even where a fuzzy strategy would pick one", () =>
    Effect.gen(function*() {
      const { box, text, refused, edit } = yield* setup
      const content = "const max = 1\nlet x = 1\nprint(x)\n  x = 1\n"
      box.write("project/f.txt", content)
      const message = yield* refused("edit", { filePath: "f.txt", oldString: "x = 1", newString: "x = 2" })
      expect(message).toMatch(/^Found multiple matches for oldString \(3 places\) in .*f\.txt, at lines 1, 2 and 4\. Include more surrounding lines/)
      expect(text("f.txt")).toBe(content)
      box.write("project/many.txt", "todo()\n".repeat(13))
      expect(yield* refused("edit", { filePath: "many.txt", oldString: "todo()", newString: "done()" })).toMatch(
        /\(13 places\) in .*many\.txt, at lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 3 more\./
      )
      yield* edit({ filePath: "f.txt", oldString: "x = 1", newString: "x = 2", replaceAll: true })
      expect(text("f.txt")).toBe("const max = 2\nlet x = 2\nprint(x)\n  x = 2\n")
    }))

  it.scopedLive("CRLF and mixed line endings: only the replaced lines change, new lines take the file's style", () =>
    Effect.gen(function*() {
      const { file, edit } = yield* setup
      fs.writeFileSync(file("crlf.txt"), "one\r\ntwo\r\nthree\r\n")
      yield* edit({ filePath: "crlf.txt", oldString: "two\n", newString: "2\n2.5\n" })
      expect(fs.readFileSync(file("crlf.txt"), "utf8")).toBe("one\r\n2\r\n2.5\r\nthree\r\n")
      // Mostly LF, one CRLF line: it keeps its CRLF, the added lines are LF.
      fs.writeFileSync(file("mixed.txt"), "a\nb\r\nc\nd\n")
      const result = yield* edit({ filePath: "mixed.txt", oldString: "c\nd", newString: "C\nD\nE" })
      expect(fs.readFileSync(file("mixed.txt"), "utf8")).toBe("a\nb\r\nC\nD\nE\n")
      expect(result.metadata).toMatchObject({ additions: 3, deletions: 2 })
      // A fuzzy (line-trimmed) match across a CRLF line in a mostly LF file, re-indented.
      fs.writeFileSync(file("mixed2.txt"), "x\n  y  \r\n  z\n")
      yield* edit({ filePath: "mixed2.txt", oldString: "y\nz", newString: "Y\nZ" })
      expect(fs.readFileSync(file("mixed2.txt"), "utf8")).toBe("x\n  Y\n  Z\n")
    }))

  it.scopedLive("NFC in oldString matches NFD in the file (and back) as whole lines", () =>
    Effect.gen(function*() {
      const { box, text, edit } = yield* setup
      box.write("project/nfd.txt", "name = \"Jose\u0301\"\nage = 3\n")
      const result = yield* edit({ filePath: "nfd.txt", oldString: "name = \"Jos\u00E9\"", newString: "name = \"Ana\"" })
      expect(text("nfd.txt")).toBe("name = \"Ana\"\nage = 3\n")
      expect(result.output).toContain("(strategy: unicode-normalized)")
    }))

  it.scopedLive("a search of a 1.6 MB file that runs the whole cascade and finds nothing leaves it as it was", () =>
    Effect.gen(function*() {
      const { box, text, refused } = yield* setup
      const content = Array.from({ length: 34_000 }, (_, index) => (index % 3 === 0 ? "}" : `  const value${index} = compute(\u201C${index}\u201D)`)).join("\n")
      box.write("project/big.ts", content)
      const oldString = ["}", ...Array.from({ length: 60 }, (_, index) => `  other ${index}`), "}"].join("\n")
      const message = yield* refused("edit", { filePath: "big.ts", oldString, newString: "x" })
      expect(message).toMatch(/^Could not find oldString in .*big\.ts/)
      expect(text("big.ts")).toBe(content)
    }), 60_000)
})

describe("Claude Code's argument names", () => {
  it.scopedLive("edit, write and read accept file_path, old_string, new_string and replace_all", () =>
    Effect.gen(function*() {
      const { text, call } = yield* setup
      yield* call("write", { file_path: "cc.txt", content: "a a\nb\n" })
      expect(text("cc.txt")).toBe("a a\nb\n")
      yield* call("edit", { file_path: "cc.txt", old_string: "a", new_string: "z", replace_all: true })
      expect(text("cc.txt")).toBe("z z\nb\n")
      const read = yield* call("read", { file_path: "cc.txt" })
      expect(read.output).toContain("1: z z\n2: b")
      // Our own name wins over its alias when both are given.
      yield* call("edit", { filePath: "cc.txt", file_path: "elsewhere.txt", old_string: "b", new_string: "c" })
      expect(text("cc.txt")).toBe("z z\nc\n")
    }))

  it.scopedLive("the schema the model sees offers only our names, and a missing argument is named as ours", () =>
    Effect.gen(function*() {
      const { tools, refused } = yield* setup
      for (const tool of Object.values(tools)) {
        const schema = JSON.stringify(Tool.jsonSchemaOf(tool))
        expect(schema).toContain("\"filePath\"")
        expect(schema).not.toMatch(/file_path|old_string|new_string|replace_all/)
      }
      expect(Tool.jsonSchemaOf(tools.edit)).toMatchObject({ required: ["filePath", "oldString", "newString"] })
      expect(yield* refused("edit", { file_path: "x.txt", old_string: "a" })).toMatch(/^The edit tool was called with invalid arguments: newString: is missing/)
    }))
})

describe("Claude Code's argument names: in the loop", () => {
  it.scopedLive("a model that sends file_path, old_string and new_string gets its edit", () =>
    Effect.gen(function*() {
      const { box, tools, text } = yield* setup
      box.write("project/greet.js", "console.log('hello')\n")
      const model = ScriptedModel.make([
        [ScriptedModel.toolCall("edit", { file_path: "greet.js", old_string: "'hello'", new_string: "'hello, world'" })],
        "Done."
      ])
      const runtime = yield* TestRuntime.make({ model, tools: [tools.edit] })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const session = yield* store.create({ title: "aliases" })
        expect((yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "greet the world" }] })).reason).toBe("completed")
        expect(text("greet.js")).toBe("console.log('hello, world')\n")
        const part = (yield* store.messages(session.id))
          .flatMap((message) => message.parts)
          .find((candidate): candidate is ToolPart => candidate.type === "tool")
        expect(part?.state.status === "completed" && part.state.output).toBe("Edit applied successfully.")
      }).pipe(Effect.provide(runtime.layer))
    }))
})
