/**
 * Compaction benchmark: a long single-prompt run whose every step reads a large tool output
 * into a small context window, as in issue 6 ("OpenCode compacts on nearly every step: 24
 * compactions in a 40-step run; ours should need a handful"). The scripted model reports what
 * each request really costs (4 characters a token) and answers summary requests with a short
 * summary. Run after `pnpm build`: `pnpm bench:compaction`. Knobs: BENCH_STEPS (40),
 * BENCH_CONTEXT (24000 tokens), BENCH_OUTPUT_LIMIT (4000 tokens), BENCH_CHARS (8000 characters
 * of tool output per step; several sizes with commas).
 *
 * Prints, per size: compactions, the largest request right after a summary and the largest
 * request of the run (as a share of the usable window), tokens before and after each
 * compaction (from `session.compacted`), and whether the stored transcript still holds every
 * step's output.
 */
import { Bus, Compaction, SessionLoop, SessionStore, Tool } from "@agent/core"
import { ScriptedModel, TestRuntime } from "@agent/testing"
import { Effect, Schema, Stream } from "effect"

/** Like a read of a large file: a short call, a long result. */
const chunkTool = (chars: number) =>
  Tool.make({
    id: "chunk",
    description: "Reads one chunk of the data.",
    parameters: Schema.Struct({ n: Schema.Number }),
    execute: (params) => Effect.succeed({ title: `chunk ${params.n}`, output: `chunk-${params.n}-start ${"y".repeat(chars)}` })
  })

const numbers = (name: string, fallback: string) => (process.env[name] ?? fallback).split(",").map((value) => Number(value.trim()))
const [steps] = numbers("BENCH_STEPS", "40")
const [context] = numbers("BENCH_CONTEXT", "24000")
const [outputLimit] = numbers("BENCH_OUTPUT_LIMIT", "4000")
const sizes = numbers("BENCH_CHARS", "8000")

const run = (chars: number) =>
  Effect.gen(function*() {
    let step = 0
    let summarizing = false
    const afterSummary: Array<number> = []
    const requests: Array<number> = []
    const turn = (options: { prompt: ReadonlyArray<unknown> }) => {
      const input = Math.ceil(JSON.stringify(options.prompt).length / 4)
      if (JSON.stringify(options.prompt[0] ?? "").includes("working memory")) {
        summarizing = true
        return [
          ScriptedModel.text(`## Goal\nRead every chunk.\n## Progress\nChunks up to ${step} read.`),
          ScriptedModel.finish("stop", { input, output: 200 })
        ]
      }
      if (summarizing) afterSummary.push(input)
      summarizing = false
      requests.push(input)
      step++
      if (step >= steps!) return [ScriptedModel.text("All chunks read."), ScriptedModel.finish("stop", { input, output: 20 })]
      return [
        ScriptedModel.toolCall("chunk", { n: step }),
        ScriptedModel.finish("tool-calls", { input, output: 20 })
      ]
    }
    const model = ScriptedModel.make(Array.from({ length: steps! * 3 }, () => turn))
    const runtime = yield* TestRuntime.make({ model, tools: [chunkTool(chars)], modelInfo: { limit: { context: context!, output: outputLimit! } } })
    return yield* Effect.gen(function*() {
      const usable = (yield* Compaction).usable({ providerID: "test", modelID: "scripted", name: "scripted", limit: { context: context!, output: outputLimit! } })
      const compacted: Array<{ before: number; after: number }> = []
      const events = yield* (yield* Bus).subscribe({ types: ["session.compacted"] })
      yield* events.pipe(
        Stream.runForEach((event) => Effect.sync(() => compacted.push({ before: event.properties.tokensBefore, after: event.properties.tokensAfter }))),
        Effect.forkScoped
      )
      const store = yield* SessionStore
      const session = yield* store.create({ title: "bench" })
      const started = performance.now()
      const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "read all chunks" }] })
      const ms = performance.now() - started
      const transcript = JSON.stringify(yield* store.messages(session.id))
      const missing = Array.from({ length: step - 1 }, (_, index) => index + 1).filter((index) => !transcript.includes(`chunk-${index}-start`))
      const share = (tokens: number) => `${Math.round((tokens / usable) * 100)}%`
      console.log(`tool output ${chars} chars (~${Math.ceil(chars / 4)} tokens) per step, window ${context} (usable ${usable}):`)
      console.log(`  outcome ${outcome.reason}${outcome.error ? ` (${outcome.error.data.message})` : ""} after ${step} steps in ${ms.toFixed(0)} ms`)
      console.log(`  compactions: ${compacted.length} in ${step} steps`)
      if (afterSummary.length > 0) console.log(`  largest request right after a summary: ${Math.max(...afterSummary)} tokens (${share(Math.max(...afterSummary))} of usable)`)
      console.log(`  largest request of the run: ${Math.max(...requests)} tokens (${share(Math.max(...requests))} of usable)`)
      console.log(`  tokens before -> after each compaction: ${compacted.map((entry) => `${entry.before}->${entry.after}`).join(", ") || "none"}`)
      if (process.env.BENCH_DEBUG) console.log(`  requests: ${requests.join(" ")}`)
      console.log(`  transcript in the store: ${missing.length === 0 ? `complete (all ${step - 1} outputs)` : `MISSING ${missing.join(", ")}`}`)
    }).pipe(Effect.provide(runtime.layer))
  }).pipe(Effect.scoped)

Effect.runPromise(Effect.forEach(sizes, run, { discard: true })).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
