import { Agent, type MessageID, type SessionID, type ToolPart } from "@agent/domain"
import { ScriptedModel, TestInstance, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Logger } from "effect"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { Bus } from "../../src/runtime/Bus.js"
import { ConfigService } from "../../src/config/ConfigService.js"
import * as Identifier from "../../src/runtime/Identifier.js"
import { Instance } from "../../src/runtime/Instance.js"
import { Sandbox } from "../../src/sandbox/Sandbox.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import * as Tool from "../../src/tool/Tool.js"
import { ToolRegistry } from "../../src/tool/ToolRegistry.js"
import * as CustomTools from "../../src/tools/CustomTools.js"

const toolContext = (controller = new AbortController()): Tool.ToolContext => ({
  sessionID: Identifier.descending("session") as SessionID,
  messageID: Identifier.ascending("message") as MessageID,
  callID: "call_1",
  agent: new Agent({ name: "build", mode: "primary", native: true, permission: [], options: {} }),
  abort: controller.signal,
  ask: () => Effect.void,
  rules: [],
  metadata: () => Effect.void
})

/** Scans the sandbox's config dirs, collecting the warnings that were logged. */
const scanSandbox = (box: TestInstance.Sandbox) =>
  Effect.gen(function*() {
    const warnings: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) => {
      if (logLevel._tag === "Warning") warnings.push(Array.isArray(message) ? message.join(" ") : String(message))
    })
    const loaded = yield* CustomTools.scan.pipe(
      Effect.provide(
        Layer.merge(ConfigService.layer, Sandbox.layer.pipe(Layer.provide(Bus.layer))).pipe(
          Layer.provideMerge(Layer.succeed(Instance, box.instance))
        )
      ),
      Effect.provide(Logger.replace(Logger.defaultLogger, logger))
    )
    return { ...loaded, warnings }
  })

const byId = (tools: ReadonlyArray<Tool.AnyTool>, id: string) => {
  const tool = tools.find((candidate) => candidate.id === id)
  if (!tool) throw new Error(`no tool ${id} among ${tools.map((t) => t.id).join(", ")}`)
  return tool
}

/** Decodes like the loop does, then runs. */
const run = (tool: Tool.AnyTool, input: unknown, context = toolContext()) =>
  Effect.flatMap(Tool.decodeInput(tool, input), (params) => tool.execute(params, context))

const GREET_JS = `
export default {
  description: "Greets someone",
  args: {
    name: { type: "string", description: "Who to greet" },
    times: { type: "integer", description: "How often", optional: true }
  },
  async execute(args, context) {
    return "hello " + args.name + " x" + (args.times ?? 1) + " from " + context.agent + " in " + context.directory
  }
}

export const loud = {
  description: "Greets loudly",
  args: { name: { type: "string" } },
  execute: (args) => ({ output: args.name.toUpperCase() + "!", title: "shouted", metadata: { volume: 11 } })
}

// Not a tool: ignored.
export const helper = (x) => x
export const VERSION = "1.0"
`

/** The sandbox has no node_modules, so the tool imports this workspace's effect by URL. */
const EFFECT_URL = pathToFileURL(
  path.join(path.dirname(createRequire(import.meta.url).resolve("effect")), "..", "esm", "index.js")
).href

const SHAPES_TS = `
import { Schema } from "${EFFECT_URL}"

interface Point { x: number; y: number }

const distance = (a: Point, b: Point): number => Math.hypot(a.x - b.x, a.y - b.y)

export default {
  description: "Distance between two points",
  args: {
    from: { type: "object", properties: { x: { type: "number" }, y: { type: "number" } } },
    to: { type: "object", properties: { x: { type: "number" }, y: { type: "number" } } },
    unit: { type: "string", enum: ["m", "km"], optional: true, description: "Unit" },
    tags: { type: "array", items: { type: "string" }, optional: true }
  },
  async execute(args: { from: Point; to: Point; unit?: string }) {
    return String(distance(args.from, args.to)) + (args.unit ?? "m")
  }
}

export const label = {
  description: "Labels a value, with an effect Schema argument",
  args: { value: Schema.NumberFromString.annotations({ description: "A number as text" }) },
  execute: (args: { value: number }) => "value=" + (args.value * 2)
}
`

describe("custom tools", () => {
  it.scopedLive("loads the default export as <file> and tool-like exports as <file>_<export>", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      box.write("project/.agent/tools/greet.js", GREET_JS)
      const { tools, problems, warnings } = yield* scanSandbox(box)
      expect(tools.map((tool) => tool.id).sort()).toEqual(["greet", "greet_loud"])
      expect(problems).toEqual([])
      expect(warnings).toEqual([])

      const greet = byId(tools, "greet")
      expect(greet.description).toBe("Greets someone")
      const result = yield* run(greet, { name: "Ada", times: 2 })
      expect(result).toEqual({ title: "greet", output: `hello Ada x2 from build in ${box.instance.directory}` })
      expect(yield* run(byId(tools, "greet_loud"), { name: "ada" })).toEqual({
        title: "shouted",
        output: "ADA!",
        metadata: { volume: 11 }
      })
    }))

  it.scopedLive("the args become a JSON schema: required unless optional, with descriptions, and are validated", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      box.write("project/.agent/tools/greet.js", GREET_JS)
      const greet = byId((yield* scanSandbox(box)).tools, "greet")
      const schema = Tool.jsonSchemaOf(greet)
      expect(schema).toMatchObject({
        type: "object",
        required: ["name"],
        properties: {
          name: { type: "string", description: "Who to greet" },
          times: { type: "integer", description: "How often" }
        }
      })
      const error = yield* Effect.flip(Tool.decodeInput(greet, { name: 42 }))
      expect(error._tag).toBe("ToolInputError")
      expect(error.message).toMatch(/name/)
    }))

  it.scopedLive("TypeScript files are transpiled; effect Schemas work as args", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      box.write("project/.agent/tools/shapes.ts", SHAPES_TS)
      const { tools, problems } = yield* scanSandbox(box)
      expect(problems).toEqual([])
      expect(tools.map((tool) => tool.id).sort()).toEqual(["shapes", "shapes_label"])
      const shapes = byId(tools, "shapes")
      expect((yield* run(shapes, { from: { x: 0, y: 0 }, to: { x: 3, y: 4 }, unit: "km" })).output).toBe("5km")
      expect((yield* Effect.flip(Tool.decodeInput(shapes, { from: { x: 0, y: 0 }, to: { x: 3, y: 4 }, unit: "mi" })))._tag).toBe(
        "ToolInputError"
      )
      expect(Tool.jsonSchemaOf(shapes)).toMatchObject({
        required: ["from", "to"],
        properties: { unit: { description: "Unit" }, tags: { type: "array", items: { type: "string" } } }
      })
      expect((yield* run(byId(tools, "shapes_label"), { value: "21" })).output).toBe("value=42")
      // the transpiled copy is removed again
      expect(fs.readdirSync(box.path("project/.agent/tools"))).toEqual(["shapes.ts"])
    }))

  it.scopedLive("broken files are reported and skipped; the good ones still load", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const dir = "project/.agent/tools"
      box.write(`${dir}/good.js`, `export default { description: "ok", args: {}, execute: () => "fine" }`)
      box.write(`${dir}/syntax.js`, `export default { description: "oops", execute( => }`)
      box.write(`${dir}/throws.mjs`, `throw new Error("database not configured")\nexport default {}`)
      box.write(`${dir}/shape.js`, `export default { args: { a: { type: "string" } }, execute: () => "x" }`)
      box.write(`${dir}/badarg.js`, `export default { description: "d", args: { a: { type: "date" } }, execute: () => "x" }`)
      box.write(`${dir}/notool.js`, `export default 42`)
      box.write(`${dir}/empty.js`, `export const x = 1`)
      box.write(`${dir}/bad name.js`, `export default { description: "d", execute: () => "x" }`)
      box.write(`${dir}/broken.ts`, `const x: number = ;\nexport default {}`)
      box.write(`${dir}/readme.md`, "not a tool")
      const { tools, problems, warnings } = yield* scanSandbox(box)

      expect(tools.map((tool) => tool.id)).toEqual(["good"])
      const reasons = Object.fromEntries(problems.map((problem) => [problem.file.split("/").at(-1), problem.reason]))
      expect(Object.keys(reasons).sort()).toEqual(
        ["bad name.js", "badarg.js", "broken.ts", "empty.js", "notool.js", "shape.js", "syntax.js", "throws.mjs"].sort()
      )
      // Node says SyntaxError; under vitest the module goes through vite, which words it differently.
      expect(reasons["syntax.js"]).toMatch(/^could not be loaded: (SyntaxError|Failed to parse source)/)
      expect(reasons["throws.mjs"]).toBe("could not be loaded: database not configured")
      expect(reasons["shape.js"]).toMatch(/^invalid tool definition: description/)
      expect(reasons["badarg.js"]).toMatch(/^invalid tool definition: args\.a/)
      expect(reasons["notool.js"]).toMatch(/default export is not a tool definition/)
      expect(reasons["empty.js"]).toBe("exports no tool definition")
      expect(reasons["bad name.js"]).toMatch(/not a valid tool name/)
      expect(reasons["broken.ts"]).toMatch(/^could not be loaded: TypeScript could not be transpiled/)
      expect(warnings).toHaveLength(problems.length)
      expect(warnings.join("\n")).toContain("throws.mjs")
    }))

  it.scopedLive("failures while running are tool errors; the abort signal reaches the tool", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      box.write(
        "project/.agent/tool/edge.js",
        `
export const fails = { description: "throws", execute: async () => { throw new Error("upstream returned 502") } }
export const wrong = { description: "bad result", execute: () => 42 }
export const waits = {
  description: "waits for abort",
  execute: (args, context) => new Promise((resolve) => context.abort.addEventListener("abort", () => resolve("aborted: " + context.abort.aborted)))
}
`
      )
      const { tools } = yield* scanSandbox(box)
      const fails = yield* Effect.flip(run(byId(tools, "edge_fails"), {}))
      expect(fails).toMatchObject({ _tag: "ToolExecutionError", detail: "upstream returned 502" })
      const wrong = yield* Effect.flip(run(byId(tools, "edge_wrong"), {}))
      expect(wrong.message).toMatch(/returned an invalid result/)
      const controller = new AbortController()
      const waiting = yield* Effect.fork(run(byId(tools, "edge_waits"), {}, toolContext(controller)))
      yield* Effect.sleep("20 millis")
      controller.abort()
      expect((yield* Fiber.join(waiting)).output).toBe("aborted: true")
    }))

  it.scopedLive("every config dir is scanned; a later dir wins for the same name", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const tool = (output: string) => `export default { description: "d", execute: () => ${JSON.stringify(output)} }`
      box.write("home/.config/agent/tools/same.js", tool("global"))
      box.write("home/.config/agent/tools/onlyglobal.js", tool("only global"))
      box.write("project/.opencode/tools/same.js", tool("opencode"))
      box.write("project/.agent/tools/same.js", tool("agent"))
      const { tools, sources } = yield* scanSandbox(box)
      expect(tools.map((t) => t.id).sort()).toEqual(["onlyglobal", "same"])
      expect((yield* run(byId(tools, "same"), {})).output).toBe("agent")
      expect(sources.get("same")).toBe(box.path("project/.agent/tools/same.js"))
      expect((yield* run(byId(tools, "onlyglobal"), {})).output).toBe("only global")
    }))

  it.scopedLive("a loaded custom tool runs through the real loop", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[ScriptedModel.toolCall("greet", { name: "Grace" })], "Greeted."])
      const runtime = yield* TestRuntime.make({ model, files: { "project/.agent/tools/greet.js": GREET_JS } })
      yield* Effect.gen(function*() {
        const loaded = yield* CustomTools.load
        yield* (yield* ToolRegistry).register(loaded)
        const store = yield* SessionStore
        const session = yield* store.create({ title: "custom" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "greet" }] })
        expect(outcome.reason).toBe("completed")
        const part = (yield* store.messages(session.id)).flatMap((m) => m.parts).find((p): p is ToolPart => p.type === "tool")
        expect(part?.state).toMatchObject({ status: "completed", output: expect.stringMatching(/^hello Grace x1 from build in /) })
        const offered = model.calls[0]!.tools?.map((tool) => tool.name) ?? []
        expect(offered).toContain("greet")
        expect(offered).toContain("greet_loud")
      }).pipe(Effect.provide(runtime.layer))
    }))
})
