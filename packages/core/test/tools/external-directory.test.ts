import { Agent, DeniedError, type MessageID, type SessionID } from "@agent/domain"
import { TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { ConfigService } from "../../src/ConfigService.js"
import { Instance } from "../../src/Instance.js"
import { InstructionLoader } from "../../src/Instructions.js"
import * as Tool from "../../src/Tool.js"
import * as ApplyPatch from "../../src/tools/ApplyPatch.js"
import * as Edit from "../../src/tools/Edit.js"
import * as Glob from "../../src/tools/Glob.js"
import * as Grep from "../../src/tools/Grep.js"
import * as List from "../../src/tools/List.js"
import * as Read from "../../src/tools/Read.js"
import * as Write from "../../src/tools/Write.js"

/** A context that records every ask and denies `external_directory`, so nothing outside is touched. */
const recordingContext = () => {
  const asks: Array<{ permission: string; patterns: ReadonlyArray<string> }> = []
  const context: Tool.ToolContext = {
    sessionID: "ses_00000000000000000000000000" as SessionID,
    messageID: "msg_00000000000000000000000000" as MessageID,
    callID: "call_1",
    agent: new Agent({ name: "build", mode: "primary", native: true, permission: [], options: {} }),
    abort: new AbortController().signal,
    ask: (request) =>
      Effect.suspend(() => {
        asks.push({ permission: request.permission, patterns: request.patterns })
        return request.permission === "external_directory"
          ? Effect.fail(new DeniedError({ permission: request.permission, pattern: request.patterns[0] ?? "", rules: [] }))
          : Effect.void
      }),
    metadata: () => Effect.void
  }
  return { asks, context }
}

const cases = (outside: string, link: string) =>
  [
    ["read", { filePath: `${outside}/secret.txt` }],
    ["read", { filePath: `${link}/secret.txt` }],
    ["write", { filePath: `${outside}/new.txt`, content: "x" }],
    ["write", { filePath: `${link}/new.txt`, content: "x" }],
    ["edit", { filePath: `${outside}/secret.txt`, oldString: "s", newString: "t" }],
    ["edit", { filePath: `${link}/secret.txt`, oldString: "s", newString: "t" }],
    ["apply_patch", { patchText: `*** Begin Patch\n*** Add File: ${outside}/added.txt\n+x\n*** End Patch` }],
    ["apply_patch", { patchText: `*** Begin Patch\n*** Update File: ${link}/secret.txt\n@@\n-secret\n+public\n*** End Patch` }],
    ["glob", { pattern: "*.txt", path: outside }],
    ["glob", { pattern: "*.txt", path: link }],
    ["grep", { pattern: "secret", path: outside }],
    ["grep", { pattern: "secret", path: link }],
    ["list", { path: outside }],
    ["list", { path: link }]
  ] as const

describe("external_directory guard in every path-taking tool", () => {
  it.scopedLive("path traversal and symlinks out of the project ask external_directory before anything happens", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({ files: { "outside/secret.txt": "secret\n" } })
      fs.symlinkSync(box.path("outside"), box.path("project/escape"))
      const outsideDir = fs.realpathSync(box.path("outside"))
      const deps = InstructionLoader.layer.pipe(Layer.provideMerge(ConfigService.layer), Layer.provideMerge(Layer.succeed(Instance, box.instance)))
      const tools = yield* Effect.all(
        [Read.make, Write.make, Edit.make, ApplyPatch.make, Glob.make, Grep.make, List.make]
      ).pipe(Effect.provide(deps))
      const byId = new Map(tools.map((tool) => [tool.id, tool]))
      for (const [id, params] of cases("../outside", "escape")) {
        const { asks, context } = recordingContext()
        const tool = byId.get(id)!
        const exit = yield* Effect.exit(
          Tool.decodeInput(tool, params).pipe(Effect.flatMap((decoded) => tool.execute(decoded, context)))
        )
        expect(exit._tag, `${id} ${JSON.stringify(params)}`).toBe("Failure")
        const external = asks.find((ask) => ask.permission === "external_directory")
        expect(external, `${id} ${JSON.stringify(params)} asked ${JSON.stringify(asks)}`).toBeDefined()
        expect(external!.patterns.some((pattern) => pattern.startsWith(outsideDir))).toBe(true)
        // the guard comes first: no other permission was asked, nothing was written
        expect(asks[0]!.permission === "external_directory" || asks.every((ask) => ask.permission !== "edit")).toBe(true)
      }
      expect(fs.readdirSync(box.path("outside")).sort()).toEqual(["secret.txt"])
      expect(fs.readFileSync(path.join(outsideDir, "secret.txt"), "utf8")).toBe("secret\n")
    }))
})
