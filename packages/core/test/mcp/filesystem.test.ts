import { TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Tool from "../../src/tool/Tool.js"
import { filesystemBin, makeContext, runTool, startMcp, toolById } from "./helpers.js"

describe("filesystem server over stdio", () => {
  it.scopedLive("lists, reads and writes inside its sandbox and refuses paths outside", () =>
    Effect.gen(function*() {
      // The directory the server may use, apart from the agent's own sandbox.
      const files = yield* TestInstance.sandbox({ git: false })
      const root = files.path("project")
      fs.writeFileSync(path.join(root, "notes.txt"), "first line\nsecond line\n")
      fs.mkdirSync(path.join(root, "docs"))
      fs.writeFileSync(files.path("secret.txt"), "not for the server")

      const { mcp } = yield* startMcp({ mcp: { filesystem: { type: "local", command: [filesystemBin, root] } } })
      yield* mcp.ready("20 seconds")
      expect((yield* mcp.status()).filesystem).toEqual({ status: "connected" })
      const ids = (yield* mcp.tools()).map((tool) => tool.id)
      expect(ids).toEqual(expect.arrayContaining([
        "filesystem_read_text_file",
        "filesystem_list_directory",
        "filesystem_write_file"
      ]))
      const { context, asked } = makeContext()

      const listing = yield* runTool(yield* toolById(mcp, "filesystem_list_directory"), { path: root }, context)
      expect(listing.output.split("\n").sort()).toEqual(["[DIR] docs", "[FILE] notes.txt"])

      const read = yield* runTool(
        yield* toolById(mcp, "filesystem_read_text_file"),
        { path: path.join(root, "notes.txt"), head: 1 },
        context
      )
      expect(read.output).toBe("first line")

      yield* runTool(
        yield* toolById(mcp, "filesystem_write_file"),
        { path: path.join(root, "docs", "new.md"), content: "# written by MCP\n" },
        context
      )
      expect(fs.readFileSync(path.join(root, "docs", "new.md"), "utf8")).toBe("# written by MCP\n")
      expect(asked.map((ask) => ask.permission)).toEqual([
        "filesystem_list_directory",
        "filesystem_read_text_file",
        "filesystem_write_file"
      ])

      const outside = yield* Effect.flip(
        runTool(yield* toolById(mcp, "filesystem_read_text_file"), { path: files.path("secret.txt") }, context)
      )
      expect(outside).toBeInstanceOf(Tool.ToolExecutionError)
      expect(outside.message).toMatch(/Access denied - path outside allowed directories/)
      expect(outside.message).not.toContain("not for the server")
    }), 60_000)
})
