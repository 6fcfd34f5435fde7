import type { BusEventOf, MessageID, SessionID } from "@agent/domain"
import { ScriptedModel, TestData, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema, Stream } from "effect"
import { Bus } from "../../src/runtime/Bus.js"
import { Compaction } from "../../src/context/Compaction.js"
import type { LiveMessage } from "../../src/llm/MessageConversion.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import * as Tool from "../../src/tool/Tool.js"
import { echo, flood } from "./tools.js"

const { finish, text, toolCall } = ScriptedModel
const usage = (input: number) => ({ input, output: 50 })
const promptText = (call: { prompt: ReadonlyArray<unknown> }) => JSON.stringify(call.prompt)

describe("compaction", () => {
  it.scopedLive("a long session crosses the context limit twice; each time the model continues from summary + tail", () => {
    // usable window: 8000 context − 1000 output reserve = 7000 tokens
    const model = ScriptedModel.make([
      [text("ok alpha"), finish("stop", usage(1_000))],
      [text("ok beta"), finish("stop", usage(2_000))],
      [toolCall("echo", { text: "gamma work" }), finish("tool-calls", usage(7_500))],
      [text("SUMMARY ONE: alpha and beta done, gamma in progress"), finish("stop", usage(3_000))],
      [text("gamma finished"), finish("stop", usage(1_500))],
      [toolCall("echo", { text: "delta work" }), finish("tool-calls", usage(7_200))],
      [text("SUMMARY TWO: everything up to delta"), finish("stop", usage(3_000))],
      [text("delta finished"), finish("stop", usage(1_200))]
    ])
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model, tools: [echo], modelInfo: { limit: { context: 8_000, output: 1_000 } } })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const bus = yield* Bus
        const compactions: Array<BusEventOf<"session.compacted">> = []
        const events = yield* bus.subscribe({ types: ["session.compacted"] })
        yield* events.pipe(Stream.runForEach((event) => Effect.sync(() => compactions.push(event))), Effect.forkScoped)
        const session = yield* store.create({ title: "Long" })
        const say = (message: string) => loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: message }] })
        for (const word of ["alpha", "beta", "gamma", "delta"]) expect((yield* say(`${word} request`)).reason).toBe("completed")
        expect(model.remaining).toBe(0)

        // the summary requests: the first sees alpha; the second is an update of summary one
        const firstSummaryRequest = promptText(model.calls[3]!)
        expect(firstSummaryRequest).toContain("alpha request")
        expect(firstSummaryRequest).toContain("## Next Steps")
        expect(promptText(model.calls[6]!)).toContain("SUMMARY ONE")
        expect(promptText(model.calls[6]!)).toMatch(/earlier working summary/)

        // after the first: summary + tail (beta, gamma), not alpha
        const afterFirst = promptText(model.calls[4]!)
        expect(afterFirst).toContain("SUMMARY ONE")
        expect(afterFirst).toContain("beta request")
        expect(afterFirst).toContain("gamma request")
        expect(afterFirst).not.toContain("alpha request")
        expect(afterFirst.indexOf("SUMMARY ONE")).toBeLessThan(afterFirst.indexOf("gamma request"))
        // an automatic compaction goes on with a synthetic nudge as the newest user message
        expect(ScriptedModel.lastUserText(model.calls[4]!)).toMatch(/^Continue with the task from where the summary leaves off/)
        // after the second: the new summary, not the old one nor beta
        const afterSecond = promptText(model.calls[7]!)
        expect(afterSecond).toContain("SUMMARY TWO")
        expect(afterSecond).toContain("delta request")
        expect(afterSecond).not.toContain("SUMMARY ONE")
        expect(afterSecond).not.toContain("beta request")

        // the store keeps the whole transcript
        const transcript = JSON.stringify(yield* store.messages(session.id))
        for (const word of ["alpha", "beta", "gamma", "delta"]) expect(transcript).toContain(`${word} request`)
        expect(compactions).toHaveLength(2)
        expect(compactions[0]!.properties.auto).toBe(true)
        expect(compactions[0]!.properties.tokensBefore).toBeGreaterThan(0)
        expect(compactions[0]!.properties.tokensAfter).toBeGreaterThan(0)
        // and a reload sees what the model saw: the latest summary first
        const view = yield* store.history(session.id)
        expect(JSON.stringify(view)).toContain("SUMMARY TWO")
        expect(JSON.stringify(view)).not.toContain("alpha request")
      }).pipe(Effect.provide(runtime.layer))
    })
  })

  it.scopedLive("a run's tool switches survive an automatic compaction: a tool turned off stays off after the summary", () => {
    const model = ScriptedModel.make([
      [toolCall("echo", { text: "work" }), finish("tool-calls", usage(7_500))],
      [text("SUMMARY: working"), finish("stop", usage(3_000))],
      [text("done"), finish("stop", usage(1_000))]
    ])
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model, tools: [echo, flood], modelInfo: { limit: { context: 8_000, output: 1_000 } } })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const session = yield* store.create({ title: "Switches" })
        const result = yield* loop.prompt({
          sessionID: session.id,
          parts: [{ type: "text", text: "work request" }],
          tools: { flood: false }
        })
        expect(result.reason).toBe("completed")
        expect(model.remaining).toBe(0)
        const offered = (index: number) => (model.calls[index]!.tools ?? []).map((tool) => tool.name)
        expect(offered(0)).toContain("echo")
        expect(offered(0)).not.toContain("flood")
        // the step after the summary: same tools as before it
        expect(offered(2)).toContain("echo")
        expect(offered(2)).not.toContain("flood")
        // and every user message written by the compaction carries the switches
        const users = (yield* store.messages(session.id)).filter((message) => message.info.role === "user")
        expect(users.length).toBeGreaterThan(1)
        for (const user of users) expect(user.info).toMatchObject({ tools: { flood: false } })
      }).pipe(Effect.provide(runtime.layer))
    })
  })

  it.scopedLive("compaction.tail_turns sets how many of the latest user turns stay verbatim", () => {
    const model = ScriptedModel.make([
      "ok alpha",
      "ok beta",
      [toolCall("echo", { text: "gamma work" }), finish("tool-calls", usage(7_500))],
      [text("SUMMARY: alpha and beta done"), finish("stop", usage(3_000))],
      "gamma finished"
    ])
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({
        model,
        tools: [echo],
        modelInfo: { limit: { context: 8_000, output: 1_000 } },
        files: { "project/agent.json": { compaction: { tail_turns: 1 } } }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const session = yield* store.create({ title: "Tail" })
        for (const word of ["alpha", "beta", "gamma"]) {
          expect((yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: `${word} request` }] })).reason).toBe("completed")
        }
        expect(model.remaining).toBe(0)
        const after = promptText(model.calls[4]!)
        expect(after).toContain("SUMMARY: alpha and beta done")
        expect(after).toContain("gamma request")
        expect(after).toContain("gamma work")
        expect(after).not.toContain("beta request")
        const [compaction] = (yield* store.messages(session.id)).flatMap((message) => message.parts.filter((part) => part.type === "compaction"))
        const gamma = (yield* store.messages(session.id)).find((message) => JSON.stringify(message.parts).includes("gamma request"))!
        expect(compaction).toMatchObject({ auto: true, tail_start_id: gamma.info.id })
      }).pipe(Effect.provide(runtime.layer))
    })
  })

  it.scopedLive("a tail too large for the headroom budget is shrunk: a huge turn is summarized, not kept verbatim", () => {
    // usable 7 000 tokens; the verbatim tail may take at most 2 000
    const model = ScriptedModel.make([
      [text("alpha done"), finish("stop", usage(500))],
      [toolCall("echo", { text: `BIG ${"b".repeat(12_000)}` }), finish("tool-calls", usage(3_000))],
      [text("beta done"), finish("stop", usage(4_100))],
      [toolCall("echo", { text: "gamma work" }), finish("tool-calls", usage(7_500))],
      [text("SUMMARY: beta printed a lot"), finish("stop", usage(3_000))],
      "gamma finished"
    ])
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model, tools: [echo], modelInfo: { limit: { context: 8_000, output: 1_000 } } })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const session = yield* store.create({ title: "Shrink" })
        for (const word of ["alpha", "beta", "gamma"]) {
          expect((yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: `${word} request` }] })).reason).toBe("completed")
        }
        expect(model.remaining).toBe(0)
        const after = promptText(model.calls[5]!)
        expect(after).toContain("SUMMARY: beta printed a lot")
        expect(after).toContain("gamma request")
        expect(after).not.toContain("beta request")
        expect(after).not.toContain("BIG bbbb")
        expect(Math.ceil(after.length / 4)).toBeLessThan(3_500)
      }).pipe(Effect.provide(runtime.layer))
    })
  })

  it.scopedLive("compaction.auto false: no compaction on overflow, the run goes on as the provider allows", () => {
    const model = ScriptedModel.make([
      [toolCall("echo", { text: "big" }), finish("tool-calls", usage(7_900))],
      [text("done"), finish("stop", usage(7_950))]
    ])
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({
        model,
        tools: [echo],
        modelInfo: { limit: { context: 8_000, output: 1_000 } },
        files: { "project/agent.json": { compaction: { auto: false } } }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "Big" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }] })
        expect(outcome.reason).toBe("completed")
        expect(model.calls).toHaveLength(2)
        expect(JSON.stringify(yield* store.messages(session.id))).not.toContain('"summary":true')
      }).pipe(Effect.provide(runtime.layer))
    })
  })

  it.scopedLive("a window too small even after summarizing ends the run with a clear error instead of looping", () => {
    const model = ScriptedModel.make([
      [toolCall("echo", { text: "x" }), finish("tool-calls", usage(7_500))],
      [text("SUMMARY"), finish("stop", usage(500))],
      ScriptedModel.contextOverflow(),
      "never"
    ])
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model, tools: [echo], modelInfo: { limit: { context: 8_000, output: 1_000 } } })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "Tiny" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }] })
        expect(outcome.reason).toBe("error")
        expect(outcome.error?.data.message).toMatch(/no longer fits the model's context window, even right after summarizing/)
        expect(model.calls).toHaveLength(3)
      }).pipe(Effect.provide(runtime.layer))
    })
  })
})

describe("overflow check", () => {
  const modelWith = (limit: { context: number; input?: number; output: number }) => ({ providerID: "p", modelID: "m", name: "m", limit })
  const compactionWith = (config: object) =>
    Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model: ScriptedModel.make([]), files: { "project/agent.json": config } })
      return yield* Effect.provide(Compaction, runtime.layer)
    })
  const step = (input: number, cacheRead = 0) =>
    TestData.assistantMessage("ses_x" as SessionID, "msg_x" as MessageID, {
      finish: "stop",
      tokens: { input, output: 1_000, reasoning: 0, cache: { read: cacheRead, write: 0 } }
    })

  it.scoped("usable = context minus the output reserve (output limit capped at 32 000), or input limit minus compaction.reserved", () =>
    Effect.gen(function*() {
      const defaults = yield* compactionWith({})
      expect(defaults.usable(modelWith({ context: 200_000, output: 8_192 }))).toBe(200_000 - 8_192)
      expect(defaults.usable(modelWith({ context: 400_000, output: 128_000 }))).toBe(400_000 - 32_000)
      expect(defaults.usable(modelWith({ context: 100_000, output: 0 }))).toBe(100_000 - 32_000)
      // With an input limit: input minus the reserve, min(20 000, output cap) by default.
      expect(defaults.usable(modelWith({ context: 400_000, input: 272_000, output: 128_000 }))).toBe(272_000 - 20_000)
      expect(defaults.usable(modelWith({ context: 400_000, input: 272_000, output: 8_000 }))).toBe(272_000 - 8_000)
      const reserved = yield* compactionWith({ compaction: { reserved: 50_000 } })
      expect(reserved.usable(modelWith({ context: 400_000, input: 272_000, output: 128_000 }))).toBe(222_000)
      // A step counts input, output and cache tokens against the window.
      const small = modelWith({ context: 10_000, output: 2_000 })
      // usable 8 000; each step also has 1 000 output tokens
      expect(defaults.isOverflow(step(7_000), small)).toBe(true)
      expect(defaults.isOverflow(step(6_999), small)).toBe(false)
      expect(defaults.isOverflow(step(5_000, 1_000), small)).toBe(false)
      expect(defaults.isOverflow(step(5_000, 2_000), small)).toBe(true)
      // plus what the history gained since that step (its tool results)
      expect(defaults.isOverflow(step(5_000), small, 1_999)).toBe(false)
      expect(defaults.isOverflow(step(5_000), small, 2_000)).toBe(true)
      // Unknown window (0): never; compaction.auto false: never.
      expect(defaults.isOverflow(step(1_000_000), modelWith({ context: 0, output: 0 }))).toBe(false)
      const off = yield* compactionWith({ compaction: { auto: false } })
      expect(off.auto).toBe(false)
      expect(off.isOverflow(step(1_000_000), small)).toBe(false)
    }))
})

describe("prune", () => {
  const pruneWith = (config: object, history: (sessionID: SessionID) => Array<LiveMessage>) =>
    Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model: ScriptedModel.make([]), files: { "project/agent.json": config } })
      return yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "Prune" })
        const messages = history(session.id)
        for (const message of messages) {
          yield* store.upsertMessage(message.info)
          for (const part of message.parts) yield* store.upsertPart(part)
        }
        const { pruned } = yield* (yield* Compaction).prune(session.id, messages)
        const stored = (yield* store.messages(session.id)).flatMap((message) => message.parts)
        const cleared = stored.filter((part) => part.type === "tool" && part.state.status === "completed" && part.state.time.compacted)
        return { pruned, cleared: cleared.map((part) => (part.type === "tool" ? part.tool : "")) }
      }).pipe(Effect.provide(runtime.layer))
    })

  /** Three user turns; the oldest holds tool outputs of the given sizes (characters). */
  const session = (sizes: ReadonlyArray<readonly [tool: string, chars: number]>) => (sessionID: SessionID) => {
    const turns: Array<LiveMessage> = []
    for (let turn = 0; turn < 3; turn++) {
      const user = TestData.userMessage(sessionID)
      const reply = TestData.assistantMessage(sessionID, user.id, { finish: "stop" })
      const parts = turn === 0
        ? sizes.map(([tool, chars]) => {
          const part = TestData.toolPart(reply, "completed", tool)
          return { ...part, state: { ...part.state, output: "x".repeat(chars) } } as typeof part
        })
        : [TestData.textPart(reply, `turn ${turn}`)]
      turns.push({ info: user, parts: [TestData.textPart(user, `question ${turn}`)] }, { info: reply, parts })
    }
    return turns
  }

  it.scoped("clears old outputs beyond the newest 40 000 tokens when 20 000 or more can be freed", () =>
    Effect.gen(function*() {
      // five outputs of 15 000 tokens: the newest 40 000 stay, the older 45 000 go
      const result = yield* pruneWith({}, session([["read", 60_000], ["grep", 60_000], ["bash", 60_000], ["read", 60_000], ["glob", 60_000]]))
      expect(result.pruned).toBe(3)
      expect(result.cleared.sort()).toEqual(["bash", "grep", "read"])
    }))

  it.scoped("does nothing when less than 20 000 tokens would be freed, and never clears skill output", () =>
    Effect.gen(function*() {
      const small = yield* pruneWith({}, session([["read", 60_000], ["read", 60_000], ["read", 60_000]]))
      expect(small.pruned).toBe(0) // 45 000 tokens: only 5 000 beyond the protected 40 000
      const skills = yield* pruneWith({}, session([["skill", 80_000], ["skill", 80_000], ["read", 100_000], ["read", 100_000]]))
      expect(skills.cleared).toEqual(["read"])
    }))

  it.scoped("compaction.prune false turns it off", () =>
    Effect.gen(function*() {
      const off = yield* pruneWith({ compaction: { prune: false } }, session([["read", 200_000], ["read", 200_000], ["read", 200_000]]))
      expect(off.pruned).toBe(0)
    }))
})


describe("prune in a run", () => {
  /**
   * Turn 1 reads a package file, then six echo calls print ~12 500 tokens each (75 000 in all);
   * turns 2 and 3 are small. After turn 3 the oldest outputs fall outside the newest 40 000 tokens.
   */
  const script = () =>
    ScriptedModel.make([
      [toolCall("read", { filePath: "packages/web/src/app.ts" })],
      Array.from({ length: 6 }, (_, index) => toolCall("echo", { text: `chunk-${index + 1} ${"z".repeat(50_000)}` })),
      "noted",
      "two",
      "three",
      [toolCall("read", { filePath: "packages/web/src/app.ts" })],
      "four"
    ])
  const files = {
    "project/packages/web/AGENTS.md": "Web rule: components are PascalCase.",
    "project/packages/web/src/app.ts": "export const app = 1\n"
  }
  const session = (model: ScriptedModel, config: object) =>
    Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model, tools: [echo], files: { ...files, "project/agent.json": config } })
      return yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const session = yield* store.create({ title: "Noisy" })
        for (const word of ["make noise", "second", "third", "fourth"]) {
          expect((yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: word }] })).reason).toBe("completed")
        }
        expect(model.remaining).toBe(0)
        const parts = (yield* store.messages(session.id)).flatMap((message) => message.parts)
        // The tool results the model got back in its sixth call (the calls themselves still carry the inputs).
        const results = model.calls[5]!.prompt
          .flatMap((entry) => (entry.role === "tool" ? entry.content : []))
          .map((part) => (part.type === "tool-result" ? JSON.stringify(part.output) : ""))
        return { request: results.join("\n"), parts }
      }).pipe(Effect.provide(runtime.layer))
    })

  it.scopedLive("by default old outputs are cleared after a run: the model sees the marker, the store keeps the text", () =>
    Effect.gen(function*() {
      const { parts, request } = yield* session(script(), {})
      expect(request).toContain("[Old tool result content cleared]")
      for (const chunk of ["chunk-1 ", "chunk-2 ", "chunk-3 "]) expect(request).not.toContain(chunk)
      for (const chunk of ["chunk-4 ", "chunk-5 ", "chunk-6 "]) expect(request).toContain(chunk)
      const cleared = parts.filter((part) => part.type === "tool" && part.state.status === "completed" && part.state.time.compacted)
      expect(cleared.map((part) => (part.type === "tool" ? part.tool : ""))).toEqual(["read", "echo", "echo", "echo"])
      // The stored text is intact.
      expect(JSON.stringify(parts)).toContain("chunk-1 ")
      // The pruned read carried the package's AGENTS.md: the next read in the package brings it again.
      const reads = parts.flatMap((part) => (part.type === "tool" && part.tool === "read" && part.state.status === "completed" ? [part.state.output] : []))
      expect(reads).toHaveLength(2)
      expect(reads[1]).toContain("Web rule: components are PascalCase.")
    }))

  it.scopedLive("compaction.prune false keeps every output in the model's view", () =>
    Effect.gen(function*() {
      const { request } = yield* session(script(), { compaction: { prune: false } })
      expect(request).not.toContain("[Old tool result content cleared]")
      for (const chunk of ["chunk-1 ", "chunk-6 "]) expect(request).toContain(chunk)
    }))
})

/** Like a read of a large file: a short call, a long result (`chars` characters). */
const chunkTool = (chars: number) =>
  Tool.make({
    id: "chunk",
    description: "Reads one chunk of the data.",
    parameters: Schema.Struct({ n: Schema.Number }),
    execute: (params) => Effect.succeed({ title: `chunk ${params.n}`, output: `chunk-${params.n}-start ${"y".repeat(chars)}` })
  })

describe("compaction converges", () => {
  it.scopedLive("40 steps of large tool output in a small window need only a handful of compactions, and no request overflows", () => {
    // The scripted model reports what the prompt really costs (4 characters a token).
    let steps = 0
    let summarizing = false
    /** The size of every request, and of each request that came right after a summary. */
    const requests: Array<number> = []
    const afterSummary: Array<number> = []
    const turn = (options: { prompt: ReadonlyArray<unknown> }) => {
      const input = Math.ceil(JSON.stringify(options.prompt).length / 4)
      const system = JSON.stringify(options.prompt[0] ?? "")
      if (system.includes("working memory")) {
        summarizing = true
        return [text("## Goal\nRead every chunk.\n## Progress\nSeveral chunks read."), finish("stop", { input, output: 200 })]
      }
      if (summarizing) afterSummary.push(input)
      summarizing = false
      requests.push(input)
      steps++
      if (steps >= 40) return [text("All chunks read."), finish("stop", { input, output: 20 })]
      return [toolCall("chunk", { n: steps }), finish("tool-calls", { input, output: 20 })]
    }
    const model = ScriptedModel.make(Array.from({ length: 80 }, () => turn))
    return Effect.gen(function*() {
      // ~2 000 tokens of new output per step into a 20 000-token usable window
      const runtime = yield* TestRuntime.make({ model, tools: [chunkTool(8_000)], modelInfo: { limit: { context: 24_000, output: 4_000 } } })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const bus = yield* Bus
        let compactions = 0
        const events = yield* bus.subscribe({ types: ["session.compacted"] })
        yield* events.pipe(Stream.runForEach(() => Effect.sync(() => compactions++)), Effect.forkScoped)
        const session = yield* store.create({ title: "Chunks" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "read all chunks" }] })
        expect(outcome.reason).toBe("completed")
        expect(steps).toBe(40)
        // one summary every ~9 steps (OpenCode: 24 in such a run)
        expect(compactions).toBeGreaterThanOrEqual(2)
        expect(compactions).toBeLessThanOrEqual(5)
        // no request over the usable window, and real headroom after each summary: at most half of it
        expect(Math.max(...requests)).toBeLessThan(20_000)
        expect(afterSummary).toHaveLength(compactions)
        for (const size of afterSummary) expect(size).toBeLessThanOrEqual(10_000)
        // the store still holds every output
        const transcript = JSON.stringify(yield* store.messages(session.id))
        for (let n = 1; n < 40; n++) expect(transcript).toContain(`chunk-${n}-start`)
        console.log(`compactions in a 40-step run: ${compactions}; largest request ${Math.max(...requests)} of 20000 usable tokens`)
      }).pipe(Effect.provide(runtime.layer))
    })
  }, 60_000)

  it.scopedLive("a tool result that would overflow the next request is summarized before that request is sent", () => {
    // usable 7 000; the step used 3 550 and its result adds ~4 000
    const model = ScriptedModel.make([
      [toolCall("chunk", { n: 1 }), finish("tool-calls", usage(3_500))],
      [text("SUMMARY: chunk 1 was read"), finish("stop", usage(1_000))],
      "done"
    ])
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model, tools: [chunkTool(16_000)], modelInfo: { limit: { context: 8_000, output: 1_000 } } })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "Big result" })
        expect((yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "read chunk 1" }] })).reason).toBe("completed")
        expect(model.remaining).toBe(0)
        expect(JSON.stringify(model.calls[1]!.prompt[0])).toContain("working memory")
        const next = promptText(model.calls[2]!)
        expect(next).toContain("SUMMARY: chunk 1 was read")
        expect(next).not.toContain("chunk-1-start")
      }).pipe(Effect.provide(runtime.layer))
    })
  })
})

describe("manual compaction and summaries", () => {
  it.scopedLive("compact is an API call; summarize asks the summary agent about the session", () => {
    const model = ScriptedModel.make([
      "I renamed parseLine to parseRow.",
      [text("SUMMARY: parseLine renamed"), finish("stop", usage(100))],
      "You asked for a rename; parseLine is now parseRow in src/parse.ts. Nothing is left open."
    ])
    return Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const session = yield* store.create({ title: "Rename" })
        yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "rename parseLine" }] })
        expect((yield* loop.compact(session.id)).reason).toBe("completed")
        const view = yield* store.history(session.id)
        expect(view.some((message) => message.info.role === "assistant" && message.info.summary === true)).toBe(true)
        expect(JSON.stringify(view)).not.toContain("Continue with the task") // manual: no nudge to go on
        const summary = yield* loop.summarize(session.id)
        expect(summary).toMatch(/parseRow/)
        expect(JSON.stringify(model.calls[2]!.prompt[0])).toMatch(/summarize what an agent did/i)
      }).pipe(Effect.provide(runtime.layer))
    })
  })
})
