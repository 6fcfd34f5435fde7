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
import * as List from "../../src/tools/List.js"

const makeContext = (deny: ReadonlyArray<string> = []) => TestToolContext.make({ deny })

const write = (file: string, content = "x\n") => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, content)
}

const withList = <A, E>(body: (tool: Tool.AnyTool, box: TestInstance.Sandbox) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const box = yield* TestInstance.sandbox()
    const tool = yield* Effect.provideService(List.make, Instance, box.instance)
    return yield* body(tool, box)
  })

describe("list tool", () => {
  it.scopedLive("renders a tree, directories first, leaving out default and gitignored directories", () =>
    withList((tool, box) =>
      Effect.gen(function*() {
        const root = box.path("project")
        for (const file of [
          "README.md",
          "package.json",
          "src/index.ts",
          "src/util/strings.ts",
          "src/util/arrays.ts",
          "docs/guide.md",
          "node_modules/left-pad/index.js",
          "dist/index.js",
          "src/__pycache__/x.pyc",
          "coverage/lcov.info",
          "generated/out.ts",
          "app.log"
        ]) {
          write(path.join(root, file))
        }
        write(path.join(root, ".gitignore"), "generated/\n*.log\n")
        const { context, asked } = makeContext()
        const result = yield* tool.execute({}, context)
        expect(result.output).toBe(
          [
            `${root}/`,
            "  docs/",
            "    guide.md",
            "  src/",
            "    util/",
            "      arrays.ts",
            "      strings.ts",
            "    index.ts",
            "  .gitignore",
            "  README.md",
            "  package.json"
          ].join("\n")
        )
        expect(asked).toEqual([{ permission: "list", patterns: [root], always: ["*"], metadata: { path: root } }])
        expect(result.metadata).toEqual({ count: 7, truncated: false })
      })
    ))

  it.scopedLive("extra ignore globs and a relative path", () =>
    withList((tool, box) =>
      Effect.gen(function*() {
        write(box.path("project/src/a.ts"))
        write(box.path("project/src/a.test.ts"))
        write(box.path("project/src/fixtures/data.json"))
        const { context } = makeContext()
        const result = yield* tool.execute({ path: "src", ignore: ["*.test.ts", "fixtures/"] }, context)
        expect(result.output).toBe(`${box.path("project/src")}/\n  a.ts`)
      })
    ))

  it.scopedLive("at most 100 files, with a note", () =>
    withList((tool, box) =>
      Effect.gen(function*() {
        for (let i = 0; i < 140; i++) write(box.path(`project/d${i % 4}/f${i}.txt`))
        const { context } = makeContext()
        const result = yield* tool.execute({}, context)
        expect(result.output.split("\n").filter((line) => line.endsWith(".txt"))).toHaveLength(100)
        expect(result.output).toMatch(/\(Showing the first 100 files\./)
        expect(result.metadata).toEqual({ count: 100, truncated: true })
      })
    ))

  it.scopedLive("a directory outside the project asks external_directory before list; a deny stops it", () =>
    withList((tool, box) =>
      Effect.gen(function*() {
        write(box.path("elsewhere/a.txt"))
        const { context, asked } = makeContext()
        const result = yield* tool.execute({ path: box.path("elsewhere") }, context)
        expect(result.output).toBe(`${box.path("elsewhere")}/\n  a.txt`)
        expect(asked.map((ask) => ask.permission)).toEqual(["external_directory", "list"])
        expect(asked[0]!.patterns).toEqual([path.join(box.path("elsewhere"), "*")])

        const denied = makeContext(["external_directory"])
        expect(yield* Effect.flip(tool.execute({ path: box.path("elsewhere") }, denied.context))).toBeInstanceOf(DeniedError)
        expect(denied.asked.map((ask) => ask.permission)).toEqual(["external_directory"])
      })
    ))

  it.scopedLive("a file or a missing path is a tool error", () =>
    withList((tool, box) =>
      Effect.gen(function*() {
        write(box.path("project/file.txt"))
        const { context } = makeContext()
        expect((yield* Effect.flip(tool.execute({ path: "file.txt" }, context))).message).toMatch(/^Not a directory/)
        expect((yield* Effect.flip(tool.execute({ path: "nope" }, context))).message).toMatch(/^Directory not found/)
      })
    ))

  it.scopedLive("runs through the real loop", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[ScriptedModel.toolCall("list", {})], "Two files."])
      const runtime = yield* TestRuntime.make({ model })
      write(runtime.box.path("project/one.txt"))
      write(runtime.box.path("project/sub/two.txt"))
      yield* Effect.gen(function*() {
        yield* (yield* ToolRegistry).register([yield* List.make])
        const store = yield* SessionStore
        const session = yield* store.create({ title: "list" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "what is here?" }] })
        expect(outcome.reason).toBe("completed")
        const part = (yield* store.messages(session.id)).flatMap((m) => m.parts).find((p): p is ToolPart => p.type === "tool")
        expect(part?.state).toMatchObject({
          status: "completed",
          output: `${runtime.box.path("project")}/\n  sub/\n    two.txt\n  one.txt`
        })
      }).pipe(Effect.provide(runtime.layer))
    }))
})
