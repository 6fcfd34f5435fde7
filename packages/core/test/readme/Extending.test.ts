// The examples of docs/extending.md, run as written, so they stay true.
import { Database, Instance, LLMService, makeAppLayer, PermissionPolicy, SessionLoop, SessionStore, Tool } from "@agent/core"
import { FakeLLM, ScriptedModel, TestInstance, TestRuntime } from "@agent/testing"
import { expect, it } from "@effect/vitest"
import { Effect, Layer, Logger, Schema, Stream } from "effect"

/** Runs one prompt on `layer` and returns the run's outcome and the stored tool parts. */
const promptOnce = (layer: TestRuntime.TestRuntime["layer"], text: string) =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const session = yield* store.create()
    const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text }] })
    const parts = (yield* store.messages(session.id)).flatMap((message) => message.parts)
    return { outcome, tools: parts.flatMap((part) => (part.type === "tool" ? [part] : [])) }
  }).pipe(Effect.provide(layer))

// docs/extending.md, "A tool in code"
const wordCount = Tool.make({
  id: "word_count",
  description: "Counts the words of a text",
  parameters: Schema.Struct({ text: Schema.String }),
  execute: (params) =>
    Effect.succeed({ title: "word count", output: String(params.text.split(/\s+/).filter(Boolean).length) })
})

it.scopedLive("a tool given to makeAppLayer is offered and run", () =>
  Effect.gen(function*() {
    // The docs' own line, built (not run): the option type-checks against the real composition root.
    const app = makeAppLayer({ tools: [wordCount] })
    expect(app).toBeDefined()
    const model = ScriptedModel.make([[ScriptedModel.toolCall("word_count", { text: "one two three" })], "Three words."])
    const { layer } = yield* TestRuntime.make({ model, tools: [wordCount] })
    const { outcome, tools } = yield* promptOnce(layer, "count the words")
    expect(outcome.reason).toBe("completed")
    expect(tools[0]?.state.status === "completed" && tools[0].state.output).toBe("3")
  }))

// docs/extending.md, "Custom tools"
const weatherTool = `export default {
  description: "The current weather in a city",
  args: {
    city: { type: "string", description: "City name" },
    units: { type: "string", enum: ["metric", "imperial"], optional: true }
  },
  async execute(args, context) {
    return { output: "Sunny in " + args.city, title: args.city }
  }
}
`

it.scopedLive("a custom tool file in .agent/tools/ is offered under its file name", () =>
  Effect.gen(function*() {
    const model = ScriptedModel.make([[ScriptedModel.toolCall("weather", { city: "Lisbon" })], "It is sunny."])
    const { layer } = yield* TestRuntime.make({ model, files: { "project/.agent/tools/weather.js": weatherTool } })
    const { outcome, tools } = yield* promptOnce(layer, "weather in Lisbon?")
    expect(outcome.reason).toBe("completed")
    expect(tools[0]?.tool).toBe("weather")
    expect(tools[0]?.state.status === "completed" && tools[0].state.output).toBe("Sunny in Lisbon")
  }))

// docs/extending.md, "Replacing the policy"
it.scopedLive("a policy layer's deny holds against the user's allow", () =>
  Effect.gen(function*() {
    const audited: Array<string> = []
    const policy = PermissionPolicy.make({
      rules: [{ permission: "bash", pattern: "rm *", action: "deny" }],
      audit: (decision) => Effect.sync(() => void audited.push(`${decision.permission} ${decision.outcome}`))
    })
    const model = ScriptedModel.make([[ScriptedModel.toolCall("bash", { command: "rm -rf build", description: "clean" })], "Done."])
    const { layer } = yield* TestRuntime.make({
      model,
      policy,
      files: { "project/agent.json": { permission: { bash: "allow" } } }
    })
    const { tools } = yield* promptOnce(layer, "clean up")
    expect(tools[0]?.state.status).toBe("error")
    expect(audited).toContain("bash deny")
  }))

// docs/extending.md, "Replacing the model backend"
const logged = Layer.effect(
  LLMService,
  Effect.map(LLMService, (live) =>
    LLMService.fromStream((request) =>
      live.stream(request).pipe(Stream.onStart(Effect.log(`model call: ${request.model.info.modelID}`)))))
).pipe(Layer.provide(LLMService.layer))

it.scopedLive("an llm layer given to makeAppLayer carries every model call", () =>
  Effect.gen(function*() {
    const box = yield* TestInstance.sandbox({})
    const model = ScriptedModel.make(["Hello."])
    const layer = makeAppLayer({
      instance: Layer.succeed(Instance, box.instance),
      database: Database.layerMemory,
      providers: FakeLLM.layerModels(
        { "test/scripted": model, "test/small": TestRuntime.titleModel() },
        { defaultModel: "test/scripted", smallModel: "test/small" }
      ),
      llm: logged
    })
    const lines: Array<string> = []
    const capture = Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ message }) => void lines.push(Array.isArray(message) ? message.join(" ") : String(message)))
    )
    const { outcome } = yield* promptOnce(layer, "hi").pipe(Effect.provide(capture))
    expect(outcome.reason).toBe("completed")
    expect(lines).toContain("model call: scripted")
  }))
