/**
 * Hooks benchmark: what hooks add to a tool call. Three runtimes run the same session (each step one
 * tool call, the scripted model answers at once): no hooks; hooks configured for an event no step
 * reaches (the interceptor is in place but runs nothing); and a no-op PreToolUse command hook (`true`)
 * on every call, started through the command launcher (docs/hooks.md) and, for comparison, directly
 * from the runtime (`AGENT_HOOK_LAUNCHER=off`). Prints the median step of each and the differences,
 * plus the cost of the checks a step makes when no hook is configured, measured alone. The
 * configurations run in interleaved rounds (BENCH_ROUNDS, default 3; the medians are over every
 * round's steps), since the machine's load moves. Run after `pnpm build`: `pnpm bench:hooks`
 * (BENCH_STEPS=200 changes the steps per session). Targets (issue 26): a no-op hook ≤ 15 ms per tool
 * call including the process start; no hooks ≤ 0.1 ms.
 */
import { Hooks, Instance, makeAppLayer, SessionLoop, SessionStore, Tool } from "@agent/core"
import { FakeLLM, ScriptedModel, TestRuntime } from "@agent/testing"
import { Effect, Layer, Schema } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"

const STEPS = Number(process.env.BENCH_STEPS ?? 200)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
/** BENCH_ONLY=noop,viaHttp runs those configurations (and "none") only, e.g. under a profiler. */
const ONLY = process.env.BENCH_ONLY?.split(",")

const echo = Tool.make({
  id: "echo",
  description: "Repeats the given text.",
  parameters: Schema.Struct({ text: Schema.String }),
  execute: (params) => Effect.succeed({ title: "echo", output: params.text })
})

const median = (values: ReadonlyArray<number>): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN

/** A runtime whose user config holds `hooks`; its session's step times (model call to model call). */
const measure = (hooks: object | undefined, extraEnv: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-hooks-"))
    const config = path.join(dir, "config", "agent")
    fs.mkdirSync(config, { recursive: true })
    fs.writeFileSync(path.join(config, "agent.json"), JSON.stringify(hooks ? { hooks } : {}))
    const calls: Array<number> = []
    let planned = 0
    const model = ScriptedModel.make(
      Array.from({ length: 10_000 }, () => () => {
        calls.push(performance.now())
        return calls.length === planned ? "done" : [ScriptedModel.toolCall("echo", { text: `step ${calls.length}` })]
      })
    )
    const layer = makeAppLayer({
      instance: Instance.layerWith({
        directory: dir,
        home: dir,
        env: { HOME: dir, PATH: process.env.PATH, XDG_DATA_HOME: path.join(dir, "data"), XDG_CONFIG_HOME: path.join(dir, "config"), AGENT_MANAGED_DIR: path.join(dir, "managed"), ...extraEnv }
      }),
      providers: FakeLLM.layerModels(
        { "test/scripted": model, "test/small": TestRuntime.titleModel() },
        { defaultModel: "test/scripted", smallModel: "test/small" }
      ),
      tools: [echo]
    })
    const session = (steps: number) =>
      Effect.gen(function*() {
        calls.length = 0
        planned = steps
        const created = yield* (yield* SessionStore).create({ title: "bench" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: created.id, parts: [{ type: "text", text: "go" }], autoApprove: true })
        if (outcome.reason !== "completed") throw new Error(`run ended with ${outcome.reason}`)
        return calls.slice(1).map((at, index) => at - calls[index]!)
      })
    const result = yield* Effect.gen(function*() {
      yield* session(50) // warm-up
      const cpu = process.cpuUsage()
      const perStep = yield* session(STEPS)
      const used = process.cpuUsage(cpu)
      return { perStep, cpuPerStep: (used.user + used.system) / 1000 / STEPS, hooks: yield* Hooks }
    }).pipe(Effect.provide(layer), Effect.scoped)
    fs.rmSync(dir, { recursive: true, force: true })
    return result
  })

/** The checks a step makes with no hook configured, alone: `active` once, `has` for the events a step can reach. */
const noHookChecks = (hooks: Hooks["Type"]) => {
  const rounds = 1_000_000
  let found = 0
  const started = performance.now()
  for (let round = 0; round < rounds; round++) {
    if (hooks.active) found++
    if (hooks.has("Stop") || hooks.has("SubagentStop") || hooks.has("PreCompact")) found++
    if (hooks.has("SessionStart") || hooks.has("SessionEnd") || hooks.has("UserPromptSubmit")) found++
  }
  const perStep = (performance.now() - started) / rounds
  if (found !== 0) throw new Error("hooks were found where none are configured")
  return perStep
}

/** Starting `sh -c true` alone, from this process, as the hook runner starts it: the floor of any command hook here. */
const spawnAlone = (runs: number) =>
  Effect.promise(async () => {
    const times: Array<number> = []
    for (let run = 0; run < runs; run++) {
      const started = performance.now()
      await new Promise<void>((resolve) => {
        const child = spawn("/bin/sh", ["-c", "true"], { detached: true, stdio: ["pipe", "pipe", "pipe"] })
        child.stdin.on("error", () => undefined)
        child.stdin.end("{}")
        child.on("close", () => resolve())
      })
      times.push(performance.now() - started)
    }
    return median(times)
  })

/** A local endpoint answering `{}`: an HTTP hook costs the hooks' own machinery without a process start. */
const endpoint = () =>
  Effect.acquireRelease(
    Effect.async<http.Server>((resume) => {
      const server = http.createServer((request, response) => {
        request.resume()
        request.on("end", () => response.writeHead(200, { "content-type": "application/json" }).end("{}"))
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.sync(() => server.close())
  )

const program = Effect.gen(function*() {
  const server = yield* endpoint()
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`
  const configs = {
    none: () => measure(undefined),
    idle: () => measure({ PreCompact: [{ hooks: [{ type: "command", command: "true" }] }] }),
    noop: () => measure({ PreToolUse: [{ matcher: "echo", hooks: [{ type: "command", command: "true" }] }] }),
    noopDirect: () => measure({ PreToolUse: [{ matcher: "echo", hooks: [{ type: "command", command: "true" }] }] }, { AGENT_HOOK_LAUNCHER: "off" }),
    viaHttp: () => measure({ PreToolUse: [{ matcher: "echo", hooks: [{ type: "http", url }] }] })
  }
  const steps: Record<keyof typeof configs, Array<number>> = { none: [], idle: [], noop: [], noopDirect: [], viaHttp: [] }
  const cpu: Record<keyof typeof configs, Array<number>> = { none: [], idle: [], noop: [], noopDirect: [], viaHttp: [] }
  const floors: Array<number> = []
  let none: Effect.Effect.Success<ReturnType<typeof measure>> | undefined
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of Object.keys(configs) as Array<keyof typeof configs>) {
      if (ONLY !== undefined && name !== "none" && !ONLY.includes(name)) continue
      const result = yield* configs[name]()
      steps[name].push(...result.perStep)
      cpu[name].push(result.cpuPerStep)
      if (name === "none") none = result
    }
    floors.push(yield* spawnAlone(30))
  }
  const floor = median(floors)
  const [a, b, c, d, e] = [median(steps.none), median(steps.idle), median(steps.noop), median(steps.viaHttp), median(steps.noopDirect)]
  console.log(`${STEPS} steps per session, ${ROUNDS} interleaved rounds, each step one tool call (median step, model call to model call):`)
  console.log(`  no hooks:                              ${a.toFixed(2)} ms`)
  console.log(`  hooks configured, none reached:        ${b.toFixed(2)} ms  (${(b - a).toFixed(2)} ms vs no hooks; machine noise included)`)
  console.log(`  a no-op PreToolUse hook on every call: ${c.toFixed(2)} ms  (${(c - a).toFixed(2)} ms per tool call)   [target ≤ 15 ms]`)
  console.log(`    the same hook started from the runtime (AGENT_HOOK_LAUNCHER=off): ${e.toFixed(2)} ms  (${(e - a).toFixed(2)} ms per tool call)`)
  console.log(`    the runtime's own CPU per step (this process): ${median(cpu.noop).toFixed(2)} ms through the launcher, ${median(cpu.noopDirect).toFixed(2)} ms started from the runtime, ${median(cpu.none).toFixed(2)} ms with no hooks`)
  console.log(`    starting \`sh -c true\` alone from this process, on this machine now: ${floor.toFixed(2)} ms`)
  console.log(`  a no-op HTTP hook (local endpoint) instead: ${d.toFixed(2)} ms  (${(d - a).toFixed(2)} ms per tool call: the hooks' own work, no process)`)
  const checks = noHookChecks(none!.hooks)
  console.log(`  what a step checks when no hook is configured, measured alone: ${(checks * 1000).toFixed(1)} ns per step   [target ≤ 0.1 ms]`)
})

Effect.runPromise(Effect.scoped(program)).catch((error) => {
  console.error(error)
  process.exit(1)
})
