import { DeniedError, type PermissionConfig, type ToolPart } from "@agent/domain"
import { ScriptedModel, TestInstance, TestRuntime, TestToolContext } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as fs from "node:fs"
import { Instance, type InstanceInfo } from "../../src/runtime/Instance.js"
import * as Permission from "../../src/permission/Permission.js"
import { PermissionPolicy } from "../../src/permission/PermissionPolicy.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import * as Tool from "../../src/tool/Tool.js"
import * as ApplyPatch from "../../src/tools/ApplyPatch.js"
import * as Edit from "../../src/tools/Edit.js"
import * as Glob from "../../src/tools/Glob.js"
import * as Grep from "../../src/tools/Grep.js"
import * as List from "../../src/tools/List.js"
import { pathPatterns, readDenied } from "../../src/tool/PathRules.js"
import * as Read from "../../src/tools/Read.js"
import * as Write from "../../src/tools/Write.js"
import { readDeps } from "./deps.js"
import { sandboxWithAndWithoutRipgrep } from "./engines.js"

/**
 * Path rules see through symlinks: a tool is checked against the path as given and against its
 * real path, and the stricter rule wins. The project of every sandbox here holds
 * - `public.txt`, `secret.txt`, `x.env` and `private/key.txt`, each with the word "needle",
 * - `link.txt` → `secret.txt`, `envlink.txt` → `x.env`, `docs` → `private` (a directory link),
 * - `later.txt` → `secret-later.txt` and `future.txt` → `new.env` (dangling links).
 */
const FILES = {
  "project/public.txt": "needle public\n",
  "project/secret.txt": "needle secret\n",
  "project/x.env": "needle TOKEN=1\n",
  "project/private/key.txt": "needle key\n"
}

const LINKS: ReadonlyArray<readonly [string, string]> = [
  ["link.txt", "secret.txt"],
  ["envlink.txt", "x.env"],
  ["docs", "private"],
  ["later.txt", "secret-later.txt"],
  ["future.txt", "new.env"]
]

const linkAll = (box: TestInstance.Sandbox) => {
  for (const [link, target] of LINKS) fs.symlinkSync(target, box.path(`project/${link}`))
}

const sandbox = Effect.gen(function*() {
  const box = yield* TestInstance.sandbox({ files: FILES })
  linkAll(box)
  return box
})

const toolsFor = (instance: InstanceInfo) =>
  Effect.gen(function*() {
    const provided = <A>(make: Effect.Effect<A, never, Instance>) => Effect.provideService(make, Instance, instance)
    return {
      read: yield* Effect.provide(Read.make, readDeps(instance)),
      write: yield* provided(Write.make),
      edit: yield* provided(Edit.make),
      applyPatch: yield* provided(ApplyPatch.make),
      list: yield* provided(List.make),
      glob: yield* provided(Glob.make),
      grep: yield* provided(Grep.make)
    }
  })

const run = (tool: Tool.AnyTool, input: Record<string, unknown>, context: Tool.ToolContext) =>
  Tool.decodeInput(tool, input).pipe(Effect.flatMap((params) => tool.execute(params, context)))

/** The call's typed failure; fails the test when it succeeded. */
const failureOf = (exit: Exit.Exit<Tool.ToolResult, Tool.ToolFailure>): Tool.ToolFailure => {
  if (Exit.isSuccess(exit)) throw new Error(`expected a failure, got ${JSON.stringify(exit.value.output)}`)
  if (exit.cause._tag !== "Fail") throw new Error(`expected a typed failure, got ${exit.cause._tag}`)
  return exit.cause.error
}

const contextWith = (permission: PermissionConfig) => TestToolContext.make({ permission, sessionID: "ses_path_rules" })

const LEFT_OUT_ONE = "(1 file left out: the read permission denies it)"
const LEFT_OUT_TWO = "(2 files left out: the read permission denies them)"

describe("read through symlinks", () => {
  const rules: PermissionConfig = { "*": "allow", read: { "*secret*": "deny", "private/*": "deny" } }

  it.scopedLive("a link to a denied file is denied, asked with the link and its target", () =>
    Effect.gen(function*() {
      const box = yield* sandbox
      const { read } = yield* toolsFor(box.instance)
      const { context, asks } = contextWith(rules)
      const failure = failureOf(yield* Effect.exit(run(read, { filePath: "link.txt" }, context)))
      expect(failure).toBeInstanceOf(DeniedError)
      expect(failure).toMatchObject({ permission: "read", pattern: "secret.txt" })
      expect(asks.map((ask) => ask.patterns)).toEqual([["link.txt", "secret.txt"]])
      // A plain file is asked with one pattern, as before.
      const plain = contextWith(rules)
      expect((yield* run(read, { filePath: "public.txt" }, plain.context)).output).toContain("1: needle public")
      expect(plain.asks.map((ask) => ask.patterns)).toEqual([["public.txt"]])
    }))

  it.scopedLive("a link in a parent directory is resolved too", () =>
    Effect.gen(function*() {
      const box = yield* sandbox
      const { read } = yield* toolsFor(box.instance)
      const { context, asks } = contextWith(rules)
      const failure = failureOf(yield* Effect.exit(run(read, { filePath: box.path("project/docs/key.txt") }, context)))
      expect(failure).toMatchObject({ _tag: "DeniedError", pattern: "private/key.txt" })
      expect(asks.map((ask) => ask.patterns)).toEqual([["docs/key.txt", "private/key.txt"]])
    }))

  it.scopedLive("a dangling link is checked against where it points", () =>
    Effect.gen(function*() {
      const box = yield* sandbox
      const { read } = yield* toolsFor(box.instance)
      const failure = failureOf(yield* Effect.exit(run(read, { filePath: "later.txt" }, contextWith(rules).context)))
      expect(failure).toMatchObject({ _tag: "DeniedError", pattern: "secret-later.txt" })
    }))

  it.scopedLive("reading a directory leaves out the entries the agent may not read, and says how many", () =>
    Effect.gen(function*() {
      const box = yield* sandbox
      const { read } = yield* toolsFor(box.instance)
      const result = yield* run(read, { filePath: "." }, contextWith(rules).context)
      // secret.txt, link.txt (→ secret.txt) and later.txt (→ secret-later.txt) are left out.
      expect(result.output).toBe(
        [
          `<path>${box.path("project")}</path>`,
          "<type>directory</type>",
          "<entries>",
          ".git/",
          "docs/",
          "envlink.txt",
          "future.txt",
          "private/",
          "public.txt",
          "x.env",
          "(7 entries)",
          "(3 files left out: the read permission denies them)",
          "</entries>"
        ].join("\n")
      )
      expect(result.metadata).toMatchObject({ leftOut: 3 })
    }))
})

describe("write, edit and apply_patch through symlinks", () => {
  const rules: PermissionConfig = { "*": "allow", edit: { "*.env": "deny" } }
  const patch = (body: string) => `*** Begin Patch\n${body}\n*** End Patch`
  type EditingTool = "write" | "edit" | "applyPatch"

  const throughLink: ReadonlyArray<readonly [string, EditingTool, Record<string, unknown>]> = [
    ["write", "write", { filePath: "envlink.txt", content: "TOKEN=2\n" }],
    ["edit", "edit", { filePath: "envlink.txt", oldString: "TOKEN=1", newString: "TOKEN=2" }],
    ["apply_patch", "applyPatch", { patchText: patch("*** Update File: envlink.txt\n@@\n-needle TOKEN=1\n+needle TOKEN=2") }]
  ]
  for (const [label, id, input] of throughLink) {
    it.scopedLive(`${label}: a link to a denied file is denied and the file is not changed`, () =>
      Effect.gen(function*() {
        const box = yield* sandbox
        const tool = (yield* toolsFor(box.instance))[id]
        const { context, asks } = contextWith(rules)
        const failure = failureOf(yield* Effect.exit(run(tool, input, context)))
        expect(failure).toMatchObject({ _tag: "DeniedError", permission: "edit", pattern: "x.env" })
        expect(asks.find((ask) => ask.permission === "edit")?.patterns).toEqual(["envlink.txt", "x.env"])
        expect(fs.readFileSync(box.path("project/x.env"), "utf8")).toBe("needle TOKEN=1\n")
      }))
  }

  const dangling: ReadonlyArray<readonly [string, EditingTool, Record<string, unknown>]> = [
    ["write", "write", { filePath: "future.txt", content: "TOKEN=2\n" }],
    ["edit", "edit", { filePath: "future.txt", oldString: "", newString: "TOKEN=2\n" }],
    ["apply_patch", "applyPatch", { patchText: patch("*** Add File: future.txt\n+TOKEN=2") }]
  ]
  for (const [label, id, input] of dangling) {
    it.scopedLive(`${label}: a dangling link whose target would be denied is denied, nothing created`, () =>
      Effect.gen(function*() {
        const box = yield* sandbox
        const tool = (yield* toolsFor(box.instance))[id]
        const failure = failureOf(yield* Effect.exit(run(tool, input, contextWith(rules).context)))
        expect(failure).toMatchObject({ _tag: "DeniedError", pattern: "new.env" })
        expect(fs.existsSync(box.path("project/new.env"))).toBe(false)
      }))
  }

  it.scopedLive("apply_patch: a link in a parent directory is resolved too", () =>
    Effect.gen(function*() {
      const box = yield* sandbox
      const { applyPatch } = yield* toolsFor(box.instance)
      const { context, asks } = contextWith({ "*": "allow", edit: { "private/*": "deny" } })
      const failure = failureOf(yield* Effect.exit(run(applyPatch, { patchText: patch("*** Add File: docs/settings.env\n+TOKEN=3") }, context)))
      expect(failure).toMatchObject({ _tag: "DeniedError", pattern: "private/settings.env" })
      expect(asks.find((ask) => ask.permission === "edit")?.patterns).toEqual(["docs/settings.env", "private/settings.env"])
      expect(fs.existsSync(box.path("project/private/settings.env"))).toBe(false)
    }))

  it.scopedLive("a link to an allowed file still works, asked with both paths", () =>
    Effect.gen(function*() {
      const box = yield* sandbox
      const { write } = yield* toolsFor(box.instance)
      const { context, asks } = contextWith(rules)
      yield* run(write, { filePath: "link.txt", content: "changed\n" }, context)
      expect(fs.readFileSync(box.path("project/secret.txt"), "utf8")).toBe("changed\n")
      expect(asks.find((ask) => ask.permission === "edit")?.patterns).toEqual(["link.txt", "secret.txt"])
    }))
})

describe("glob, grep and list leave out files the agent may not read", () => {
  const rules: PermissionConfig = { "*": "allow", read: { "*secret*": "deny", "private/*": "deny" } }

  /** Both engines over the usual sandbox, and a way to call glob, grep or list with each. */
  const withEngines = (body: (call: (id: "glob" | "grep" | "list", input: Record<string, unknown>) => Effect.Effect<string, Tool.ToolFailure>, p: (relative: string) => string) => Effect.Effect<void, Tool.ToolFailure>) =>
    Effect.gen(function*() {
      const { box, withRg, withoutRg } = yield* sandboxWithAndWithoutRipgrep
      for (const [file, content] of Object.entries(FILES)) box.write(file, content)
      linkAll(box)
      for (const instance of [withRg, withoutRg]) {
        const tools = yield* toolsFor(instance)
        yield* body(
          (id, input) => run(tools[id], input, contextWith(rules).context).pipe(Effect.map((result) => result.output)),
          (relative) => box.path(`project/${relative}`)
        )
      }
    })

  it.scopedLive("glob, with ripgrep and with the built-in search", () =>
    withEngines((call, p) =>
      Effect.gen(function*() {
        // The project: secret.txt by its name, private/key.txt by its directory.
        expect(yield* call("glob", { pattern: "*.txt" })).toBe([p("public.txt"), "", LEFT_OUT_TWO].join("\n"))
        // Through the directory link docs → private: found as docs/key.txt, denied as private/key.txt.
        expect(yield* call("glob", { pattern: "*.txt", path: "docs" })).toBe(["No files found", "", LEFT_OUT_ONE].join("\n"))
      })
    ))

  it.scopedLive("grep, with ripgrep and with the built-in search", () =>
    withEngines((call, p) =>
      Effect.gen(function*() {
        expect(yield* call("grep", { pattern: "needle", include: "*.txt" })).toBe(
          ["Found 1 matches", `${p("public.txt")}:`, "  Line 1: needle public", "", LEFT_OUT_TWO].join("\n")
        )
        expect(yield* call("grep", { pattern: "needle", path: "docs" })).toBe(["No files found", LEFT_OUT_ONE].join("\n\n"))
        // Pointed at a file link.
        expect(yield* call("grep", { pattern: "needle", path: "link.txt" })).toBe(["No files found", LEFT_OUT_ONE].join("\n\n"))
      })
    ))

  it.scopedLive("list, with ripgrep and with the built-in search", () =>
    withEngines((call, p) =>
      Effect.gen(function*() {
        expect(yield* call("list", {})).toBe([p(""), "  public.txt", "  x.env", "", LEFT_OUT_TWO].join("\n"))
        expect(yield* call("list", { path: "docs" })).toBe([`${p("docs")}/`, "  (no files)", "", LEFT_OUT_ONE].join("\n"))
      })
    ))

  it.scopedLive("nothing is left out (and no note is added) when no read rule denies", () =>
    Effect.gen(function*() {
      const box = yield* sandbox
      const { glob } = yield* toolsFor(box.instance)
      const result = yield* run(glob, { pattern: "*.txt" }, contextWith({ "*": "allow", read: { "*.env": "ask" } }).context)
      expect(result.output.split("\n").sort()).toEqual(["private/key.txt", "public.txt", "secret.txt"].map((f) => box.path(`project/${f}`)))
      expect(result.metadata).toEqual({ count: 3, truncated: false })
    }))
})

describe("external_directory through symlinks", () => {
  it.scopedLive("a path outside the project that leads into it through a link asks external_directory", () =>
    Effect.gen(function*() {
      const box = yield* sandbox
      fs.mkdirSync(box.path("outside"))
      fs.symlinkSync("../project", box.path("outside/project-link"))
      const { read } = yield* toolsFor(box.instance)
      const { context, asks } = contextWith({ "*": "allow", external_directory: "deny" })
      const failure = failureOf(yield* Effect.exit(run(read, { filePath: box.path("outside/project-link/public.txt") }, context)))
      expect(failure).toMatchObject({ _tag: "DeniedError", permission: "external_directory" })
      expect(asks.map((ask) => [ask.permission, ask.patterns])).toEqual([
        ["external_directory", [box.path("outside/project-link/*")]]
      ])
    }))

  it.scopedLive("a link inside the project that points outside asks external_directory with the target's directory", () =>
    Effect.gen(function*() {
      const box = yield* sandbox
      box.write("outside/secret.txt", "outside\n")
      fs.symlinkSync("../outside/secret.txt", box.path("project/out-link.txt"))
      const { read } = yield* toolsFor(box.instance)
      const { context, asks } = contextWith({ "*": "allow", external_directory: "deny" })
      const failure = failureOf(yield* Effect.exit(run(read, { filePath: "out-link.txt" }, context)))
      expect(failure).toMatchObject({ _tag: "DeniedError", permission: "external_directory" })
      expect(asks.map((ask) => [ask.permission, ask.patterns])).toEqual([["external_directory", [box.path("outside/*")]]])
    }))
})

describe("PathRules", () => {
  it.scopedLive("pathPatterns: the path as given, then its real path when it differs", () =>
    Effect.gen(function*() {
      const box = yield* sandbox
      box.write("outside/o.txt", "o\n")
      fs.symlinkSync("../outside/o.txt", box.path("project/out-link.txt"))
      const patterns = (relative: string, form?: "absolute") => pathPatterns(box.instance, box.path(relative), form)
      expect(patterns("project/public.txt")).toEqual(["public.txt"])
      expect(patterns("project/link.txt")).toEqual(["link.txt", "secret.txt"])
      expect(patterns("project/docs/new/deep.txt")).toEqual(["docs/new/deep.txt", "private/new/deep.txt"])
      expect(patterns("project/future.txt")).toEqual(["future.txt", "new.env"])
      expect(patterns("project/out-link.txt")).toEqual(["out-link.txt", box.path("outside/o.txt")])
      expect(patterns("project/docs", "absolute")).toEqual([box.path("project/docs"), box.path("project/private")])
    }))

  it.scopedLive("readDenied: no check at all when no read rule can deny", () =>
    Effect.gen(function*() {
      const box = yield* sandbox
      const root = box.path("project")
      const rules = (config: PermissionConfig) => Permission.fromConfig(config)
      expect(readDenied(box.instance, rules({ "*": "allow" }), root)).toBeUndefined()
      expect(readDenied(box.instance, rules({ "*": "deny", read: { "*": "allow", "*.env": "ask" } }), root)).toBeUndefined()
      const denied = readDenied(box.instance, rules({ read: { "*secret*": "deny" } }), root)!
      expect(denied(box.path("project/secret.txt"))).toBe(true)
      expect(denied(box.path("project/public.txt"))).toBe(false)
      expect(denied(box.path("project/link.txt"))).toBe(false) // a found file is not a link: the caller says so
      expect(denied(box.path("project/link.txt"), true)).toBe(true)
    }))
})

describe("through the session loop", () => {
  const toolOutput = (runtime: TestRuntime.TestRuntime) =>
    Effect.gen(function*() {
      const store = yield* SessionStore
      const session = yield* store.create({ title: "path rules" })
      const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "find" }] })
      expect(outcome.reason).toBe("completed")
      const part = (yield* store.messages(session.id)).flatMap((m) => m.parts).find((p): p is ToolPart => p.type === "tool")
      return part?.state.status === "completed" ? part.state.output : `not completed: ${JSON.stringify(part?.state)}`
    }).pipe(Effect.provide(runtime.layer))

  it.scopedLive("grep heeds the enterprise policy's read rules", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[ScriptedModel.toolCall("grep", { pattern: "needle", include: "*.txt" })], "Done."])
      const policy = PermissionPolicy.make({ rules: Permission.fromConfig({ read: { "*secret*": "deny" } }) })
      const runtime = yield* TestRuntime.make({ model, policy, files: FILES })
      linkAll(runtime.box)
      const output = yield* toolOutput(runtime)
      expect(output).toContain(`${runtime.box.path("project/public.txt")}:`)
      expect(output).toContain(`${runtime.box.path("project/private/key.txt")}:`)
      expect(output).not.toContain("secret.txt")
      expect(output).toContain(LEFT_OUT_ONE)
    }))

  it.scopedLive("glob heeds the project config's read rules, also through a directory link", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[ScriptedModel.toolCall("glob", { pattern: "*.txt", path: "docs" })], "Done."])
      const runtime = yield* TestRuntime.make({
        model,
        files: { ...FILES, "project/agent.json": { permission: { read: { "private/*": "deny" } } } }
      })
      linkAll(runtime.box)
      expect(yield* toolOutput(runtime)).toBe(["No files found", "", LEFT_OUT_ONE].join("\n"))
    }))
})
