import { TestInstance, TestToolContext } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Bus } from "../../src/runtime/Bus.js"
import { ConfigService } from "../../src/config/ConfigService.js"
import { Instance } from "../../src/runtime/Instance.js"
import { InstructionLoader } from "../../src/context/InstructionLoader.js"
import { Sandbox } from "../../src/sandbox/Sandbox.js"
import * as Tool from "../../src/tool/Tool.js"
import * as ApplyPatch from "../../src/tools/ApplyPatch.js"
import * as Bash from "../../src/tools/Bash.js"
import { isInsideProject, realPath } from "../../src/tool/ExternalDirectory.js"
import * as Edit from "../../src/tools/Edit.js"
import * as Glob from "../../src/tools/Glob.js"
import * as Grep from "../../src/tools/Grep.js"
import * as List from "../../src/tools/List.js"
import * as Read from "../../src/tools/Read.js"
import * as Write from "../../src/tools/Write.js"
import { Truncation } from "../../src/tool/Truncation.js"

/**
 * Every way out of the project, for every tool that takes a path. The sandbox has
 * `outside/secret.txt` next to `project/`, and inside the project:
 * - `escape` → `../outside` (a directory link),
 * - `secret-link.txt` → `../outside/secret.txt` (a file link),
 * - `dangling` → `../outside/created.txt` (a link to a file that does not exist yet: writing
 *   through it would create the file outside).
 */
const cases = [
  ["read", "traversal", { filePath: "../outside/secret.txt" }],
  ["read", "directory link", { filePath: "escape/secret.txt" }],
  ["read", "file link", { filePath: "secret-link.txt" }],
  ["read", "absolute", { filePath: "<outside>/secret.txt" }],
  ["write", "traversal", { filePath: "../outside/new.txt", content: "x" }],
  ["write", "directory link", { filePath: "escape/new.txt", content: "x" }],
  ["write", "file link", { filePath: "secret-link.txt", content: "x" }],
  ["write", "dangling link", { filePath: "dangling", content: "x" }],
  ["edit", "traversal", { filePath: "../outside/secret.txt", oldString: "secret", newString: "public" }],
  ["edit", "directory link", { filePath: "escape/secret.txt", oldString: "secret", newString: "public" }],
  ["edit", "file link", { filePath: "secret-link.txt", oldString: "secret", newString: "public" }],
  ["edit", "dangling link", { filePath: "dangling", oldString: "", newString: "x" }],
  ["apply_patch", "traversal", { patchText: "*** Begin Patch\n*** Add File: ../outside/added.txt\n+x\n*** End Patch" }],
  [
    "apply_patch",
    "directory link",
    { patchText: "*** Begin Patch\n*** Update File: escape/secret.txt\n@@\n-secret\n+public\n*** End Patch" }
  ],
  [
    "apply_patch",
    "file link",
    { patchText: "*** Begin Patch\n*** Update File: secret-link.txt\n@@\n-secret\n+public\n*** End Patch" }
  ],
  ["apply_patch", "dangling link", { patchText: "*** Begin Patch\n*** Add File: dangling\n+x\n*** End Patch" }],
  [
    "apply_patch",
    "move out",
    { patchText: "*** Begin Patch\n*** Update File: inside.txt\n*** Move to: ../outside/moved.txt\n*** End Patch" }
  ],
  ["glob", "traversal", { pattern: "*.txt", path: "../outside" }],
  ["glob", "directory link", { pattern: "*.txt", path: "escape" }],
  ["grep", "traversal", { pattern: "secret", path: "../outside" }],
  ["grep", "directory link", { pattern: "secret", path: "escape" }],
  ["grep", "file link", { pattern: "secret", path: "secret-link.txt" }],
  ["list", "traversal", { path: "../outside" }],
  ["list", "directory link", { path: "escape" }],
  ["bash", "traversal", { command: "cat ../outside/secret.txt", description: "Reads" }],
  ["bash", "directory link", { command: "rm escape/secret.txt", description: "Removes" }],
  ["bash", "file link", { command: "cp README.md secret-link.txt", description: "Copies" }],
  ["bash", "dangling link", { command: "touch dangling", description: "Touches" }],
  ["bash", "through a wrapper", { command: "sudo -n cp README.md ../outside/", description: "Copies" }],
  ["bash", "hidden in a chain", { command: "ls && mv inside.txt ../outside/ && echo ok", description: "Moves" }],
  ["bash", "redirect", { command: "echo x > ../outside/new.txt", description: "Writes" }],
  ["bash", "redirect through a link", { command: "ls >> escape/list.txt", description: "Appends" }],
  ["bash", "redirect through a dangling link", { command: "echo x > dangling", description: "Writes" }],
  ["bash", "workdir traversal", { command: "ls", workdir: "../outside", description: "Lists" }],
  ["bash", "workdir link", { command: "ls", workdir: "escape", description: "Lists" }]
] as const

/** glob and grep ask their own permission first (as OpenCode does); every other tool asks external_directory first. */
const OWN_PERMISSION_FIRST: ReadonlySet<string> = new Set(["glob", "grep"])

describe("external_directory guard in every path-taking tool", () => {
  it.scopedLive("path traversal and symlinks out of the project ask external_directory before anything happens", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({
        files: { "outside/secret.txt": "secret\n", "project/inside.txt": "inside\n", "project/README.md": "readme\n" }
      })
      fs.symlinkSync("../outside", box.path("project/escape"))
      fs.symlinkSync("../outside/secret.txt", box.path("project/secret-link.txt"))
      fs.symlinkSync("../outside/created.txt", box.path("project/dangling"))
      const outsideDir = fs.realpathSync(box.path("outside"))
      const instance = Layer.succeed(Instance, box.instance)
      const config = ConfigService.layer.pipe(Layer.provideMerge(instance))
      const deps = Layer.mergeAll(InstructionLoader.layer, Truncation.layer, Sandbox.layer.pipe(Layer.provide(Bus.layer))).pipe(
        Layer.provideMerge(config)
      )
      const tools = yield* Effect.all(
        [Read.make, Write.make, Edit.make, ApplyPatch.make, Glob.make, Grep.make, List.make, Bash.make]
      ).pipe(Effect.provide(deps))
      const byId = new Map(tools.map((tool) => [tool.id, tool]))
      expect([...new Set(cases.map(([id]) => id))].sort()).toEqual([...byId.keys()].sort())

      for (const [id, how, raw] of cases) {
        const params = JSON.parse(JSON.stringify(raw).replaceAll("<outside>", outsideDir)) as Record<string, unknown>
        const label = `${id} (${how}) ${JSON.stringify(params)}`
        const { asks, context } = TestToolContext.make({ permission: { "*": "allow", external_directory: "deny" } })
        const tool = byId.get(id)!
        const exit = yield* Effect.exit(
          Tool.decodeInput(tool, params).pipe(Effect.flatMap((decoded) => tool.execute(decoded, context)))
        )
        expect(exit._tag, label).toBe("Failure")
        const permissions = asks.map((ask) => ask.permission)
        expect(permissions, label).toEqual(OWN_PERMISSION_FIRST.has(id) ? [id, "external_directory"] : ["external_directory"])
        const external = asks.find((ask) => ask.permission === "external_directory")!
        expect(external.patterns, label).toContain(path.join(outsideDir, "*"))
        expect(external.always, label).toEqual(external.patterns)
      }
      // Nothing outside was read into a result, changed or created.
      expect(fs.readdirSync(box.path("outside")).sort()).toEqual(["secret.txt"])
      expect(fs.readFileSync(path.join(outsideDir, "secret.txt"), "utf8")).toBe("secret\n")
      expect(fs.readFileSync(box.path("project/inside.txt"), "utf8")).toBe("inside\n")
    }))
})

describe("realPath", () => {
  it.scopedLive("follows links, also dangling ones and chains of them, and appends what does not exist", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({ files: { "outside/a.txt": "a" } })
      const outside = box.path("outside")
      fs.symlinkSync(outside, box.path("project/dir-link"))
      fs.symlinkSync(path.join(outside, "later.txt"), box.path("project/dangling"))
      fs.symlinkSync("dangling", box.path("project/chain"))
      fs.symlinkSync(path.join(outside, "no/such/dir/file.txt"), box.path("project/deep-dangling"))
      fs.symlinkSync("loop-b", box.path("project/loop-a"))
      fs.symlinkSync("loop-a", box.path("project/loop-b"))

      expect(realPath(box.path("project/dir-link/a.txt"))).toBe(path.join(outside, "a.txt"))
      expect(realPath(box.path("project/dir-link/new/file.txt"))).toBe(path.join(outside, "new/file.txt"))
      expect(realPath(box.path("project/dangling"))).toBe(path.join(outside, "later.txt"))
      expect(realPath(box.path("project/chain"))).toBe(path.join(outside, "later.txt"))
      expect(realPath(box.path("project/deep-dangling"))).toBe(path.join(outside, "no/such/dir/file.txt"))
      expect(realPath(box.path("project/not/there.txt"))).toBe(box.path("project/not/there.txt"))
      // A loop of links resolves to nothing real; it stays where it is (and does not hang).
      expect(realPath(box.path("project/loop-a"))).toBe(box.path("project/loop-a"))

      expect(isInsideProject(box.instance, box.path("project/dangling"))).toBe(false)
      expect(isInsideProject(box.instance, box.path("project/not/there.txt"))).toBe(true)
    }))
})
