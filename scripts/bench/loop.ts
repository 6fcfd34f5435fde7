/**
 * Session loop benchmark: the runtime's own cost per step (the scripted model answers at
 * once), for sessions of 10, 100 and 1000 steps, each step one tool call. Run after
 * `pnpm build`: `pnpm bench:loop`. Targets (issue 4): ≤ 3 ms median per step, and the
 * 1000th step no more than 1.5× the 10th plus the cost of sending a longer history.
 */
import { Instance, makeAppLayer, SessionLoop, SessionStore, Tool } from "@agent/core"
import { FakeLLM, ScriptedModel, TestRuntime } from "@agent/testing"
import { Effect, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const echo = Tool.make({
  id: "echo",
  description: "Repeats the given text.",
  parameters: Schema.Struct({ text: Schema.String }),
  execute: (params) => Effect.succeed({ title: "echo", output: params.text })
})

const percentile = (values: Array<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!
}

const session = (steps: number) =>
  Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-loop-"))
    const calls: Array<number> = []
    const model = ScriptedModel.make(
      Array.from({ length: steps }, (_, index) => () => {
        calls.push(performance.now())
        return index === steps - 1 ? "done" : [ScriptedModel.toolCall("echo", { text: `step ${index} ${"x".repeat(200)}` })]
      })
    )
    const layer = makeAppLayer({
      instance: Instance.layerWith({
        directory: dir,
        home: dir,
        env: { HOME: dir, XDG_DATA_HOME: path.join(dir, "data"), XDG_CONFIG_HOME: path.join(dir, "config"), AGENT_MANAGED_DIR: path.join(dir, "managed") }
      }),
      providers: FakeLLM.layerModels(
        { "test/scripted": model, "test/small": TestRuntime.titleModel() },
        { defaultModel: "test/scripted", smallModel: "test/small" }
      ),
      tools: [echo]
    })
    const started = performance.now()
    const outcome = yield* Effect.gen(function*() {
      const store = yield* SessionStore
      const created = yield* store.create({ title: "bench" })
      return yield* (yield* SessionLoop).prompt({ sessionID: created.id, parts: [{ type: "text", text: "go" }] })
    }).pipe(Effect.provide(layer), Effect.scoped)
    const total = performance.now() - started
    fs.rmSync(dir, { recursive: true, force: true })
    if (outcome.reason !== "completed" || outcome.usage.steps !== steps) throw new Error(`run ended with ${outcome.reason} after ${outcome.usage.steps} steps`)
    const perStep = calls.slice(1).map((at, index) => at - calls[index]!)
    return { perStep, total }
  })

const program = Effect.gen(function*() {
  yield* session(20) // warm-up
  for (const steps of (process.env.BENCH_STEPS ?? "10,100,1000").split(",").map(Number)) {
    const { perStep, total } = yield* session(steps)
    console.log(
      `${String(steps).padStart(4)} steps: per step median ${percentile(perStep, 50).toFixed(2)} ms, p99 ${percentile(perStep, 99).toFixed(2)} ms, total ${total.toFixed(0)} ms`
    )
    if (steps === 1000) {
      const early = percentile(perStep.slice(5, 15), 50)
      const late = percentile(perStep.slice(-10), 50)
      console.log(`  steps 6-15 median ${early.toFixed(2)} ms vs last 10 median ${late.toFixed(2)} ms (ratio ${(late / early).toFixed(2)})`)
    }
  }
})

Effect.runPromise(program).catch((error) => {
  console.error(error)
  process.exit(1)
})


