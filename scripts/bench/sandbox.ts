/**
 * Sandbox benchmark: the time the sandbox adds to a command, printed as tables.
 * - through the bash tool, as the model calls it: `true` and `ls -R` over a project of 100
 *   files, with `sandbox.mode` "off", with a sandbox per command (workspace-write, no network;
 *   `keepIdleMs: 0`, a bubblewrap each) and with the default, the kept sandbox (one bubblewrap, commands
 *   started inside by its supervisor);
 * - the process alone: `bash -c true` spawned as is and through the sandbox's launch (bubblewrap,
 *   its namespaces and mounts, and the keeper that waits for background jobs).
 * Runs are interleaved (off, on, off, on, ...; the order flips every round) so a busy spell of the
 * machine hits both; medians and minimums. Runs on the TypeScript sources, no build needed:
 * `pnpm bench:sandbox`. Options (env): BENCH_RUNS (default 40).
 */
import { Agent, type MessageID, type SandboxConfig, type SessionID } from "@agent/domain"
import { Context, Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Bus } from "../../packages/core/src/runtime/Bus.js"
import { ConfigService } from "../../packages/core/src/config/ConfigService.js"
import { Instance, makeInstanceInfo } from "../../packages/core/src/runtime/Instance.js"
import { type Launch, Sandbox } from "../../packages/core/src/sandbox/Sandbox.js"
import type * as Tool from "../../packages/core/src/tool/Tool.js"
import * as Bash from "../../packages/core/src/tools/Bash.js"
import { Truncation } from "../../packages/core/src/tool/Truncation.js"

const RUNS = Number(process.env.BENCH_RUNS ?? 40)

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const ms = (value: number) => `${value.toFixed(1)} ms`

const contextFor = (sandbox: SandboxConfig | undefined): Tool.ToolContext => ({
  sessionID: "ses_bench" as SessionID,
  messageID: "msg_bench" as MessageID,
  callID: "call_bench",
  agent: new Agent({ name: "build", mode: "primary", native: true, permission: [], options: {}, ...(sandbox ? { sandbox } : {}) }),
  abort: new AbortController().signal,
  ask: () => Effect.void,
  metadata: () => Effect.void
})

/** A project of 100 files in 10 directories, a git dir and an agent.json. */
const project = (root: string) => {
  fs.mkdirSync(path.join(root, ".git"), { recursive: true })
  fs.writeFileSync(path.join(root, "agent.json"), "{}\n")
  for (let i = 0; i < 100; i++) {
    const dir = path.join(root, `dir${i % 10}`)
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(path.join(dir, `file${i}.txt`), `file ${i}\n`)
  }
}

/** CPU time (user + system) of this process's finished children so far, in ms (clock ticks of 10 ms; summed over many runs). */
const childCpu = (): number => {
  const fields = fs.readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[13]) + Number(fields[14])) * 10
}

/** Runs a spawned process to its end; resolves with the wall time. */
const timeProcess = (file: string, args: ReadonlyArray<string>, env: Record<string, string>, cwd: string, extraFds: 0 | 1 | 2) =>
  new Promise<number>((resolve, reject) => {
    const start = process.hrtime.bigint()
    const child = spawn(file, [...args], {
      cwd,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe", ...Array.from({ length: extraFds }, () => "pipe" as const)]
    })
    child.stdout!.resume()
    child.stderr!.resume()
    ;(child.stdio[3] as NodeJS.ReadableStream | undefined)?.resume()
    ;(child.stdio[4] as NodeJS.ReadableStream | undefined)?.resume()
    child.once("error", reject)
    child.once("close", (code) => code === 0 ? resolve(Number(process.hrtime.bigint() - start) / 1e6) : reject(new Error(`exit ${code}`)))
  })

const program = Effect.gen(function*() {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-sandbox-")))
  yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true })))
  const directory = path.join(root, "project")
  project(directory)
  const info = makeInstanceInfo({ directory, home: path.join(root, "home"), env: { ...process.env, HOME: path.join(root, "home") } })
  const instance = Layer.succeed(Instance, info)
  const config = ConfigService.layerFromInfo({ config: {}, sources: [], warnings: [], directories: [], origin: () => undefined })
  const deps = yield* Layer.build(
    Layer.mergeAll(Sandbox.layerWith({ keepIdleMs: 0 }), Truncation.layer.pipe(Layer.provide(config))).pipe(
      Layer.provideMerge(Layer.merge(instance, Bus.layer))
    )
  )
  const sandbox = Context.get(deps, Sandbox)
  const keptDeps = yield* Layer.build(
    Layer.mergeAll(Sandbox.layer, Truncation.layer.pipe(Layer.provide(config))).pipe(
      Layer.provideMerge(Layer.merge(instance, Bus.layer))
    )
  )
  const check = yield* sandbox.check(undefined)
  if (!check.plan.active) {
    console.log(`The sandbox does not work here: ${check.plan.unavailable}`)
    return
  }
  const tool = yield* Effect.provide(Bash.make, deps)
  const keptTool = yield* Effect.provide(Bash.make, keptDeps)
  const off = contextFor({ mode: "off" })
  const on = contextFor(undefined)
  const runTool = (command: string, context: Tool.ToolContext, which: Tool.AnyTool = tool) =>
    Effect.gen(function*() {
      const start = process.hrtime.bigint()
      const result = yield* which.execute({ command, description: "bench" }, context)
      if (result.metadata?.exit !== 0) throw new Error(`${command} failed: ${result.output}`)
      return Number(process.hrtime.bigint() - start) / 1e6
    })

  const toolRows: Array<Array<string>> = []
  for (const command of ["true", "ls -R"]) {
    yield* runTool(command, off)
    yield* runTool(command, on)
    yield* runTool(command, on, keptTool)
    const samples = { off: [] as Array<number>, on: [] as Array<number>, kept: [] as Array<number> }
    // The three rotate, so each comes first, second and last equally often.
    const orders = [["off", "on", "kept"], ["on", "kept", "off"], ["kept", "off", "on"]] as const
    for (let round = 0; round < RUNS; round++) {
      for (const which of orders[round % 3]!) {
        samples[which].push(yield* runTool(command, which === "off" ? off : on, which === "kept" ? keptTool : tool))
      }
    }
    for (const which of ["on", "kept"] as const) {
      const added = samples[which].map((value, index) => value - samples.off[index]!)
      toolRows.push([
        `bash tool${which === "kept" ? " (kept sandbox, the default)" : " (a sandbox per command)"}: ${command}${command === "ls -R" ? " (100 files)" : ""}`,
        ms(median(samples.off)),
        ms(median(samples[which])),
        ms(median(added)),
        `${ms(Math.min(...samples.off))} / ${ms(Math.min(...samples[which]))}`,
        ""
      ])
    }
  }

  // The process alone: the same argv with and without the sandbox's launch.
  const shell = Bash.shellFor(info)
  const env = Object.fromEntries(Object.entries(info.env).filter((entry): entry is [string, string] => entry[1] !== undefined))
  const plan = yield* sandbox.plan(undefined)
  const processRows: Array<Array<string>> = []
  // The launch's own cost in this process: the layout (stats of the protected paths), placeholders, release.
  const prepareTimes: Array<number> = []
  for (let round = 0; round < RUNS; round++) {
    const start = process.hrtime.bigint()
    const launch = yield* sandbox.prepare({ plan, argv: [shell, "-c", "true"], cwd: directory, env, keeper: "wait", tool: "bench" })
    yield* launch.release
    prepareTimes.push(Number(process.hrtime.bigint() - start) / 1e6)
  }
  for (const command of ["true", "ls -R"]) {
    const samples = { off: [] as Array<number>, on: [] as Array<number> }
    const cpu = { off: 0, on: 0 }
    for (let round = 0; round <= RUNS; round++) {
      const launch: Launch = yield* sandbox.prepare({ plan, argv: [shell, "-c", command], cwd: directory, env, keeper: "wait", tool: "bench" })
      const run = (which: "off" | "on") => async () => {
        const before = childCpu()
        const wall = which === "off"
          ? await timeProcess(shell, ["-c", command], env, directory, 0)
          : await timeProcess(launch.file, launch.args, launch.env, directory, launch.syncFd ? 2 : launch.statusFd ? 1 : 0)
        if (round > 0) cpu[which] += childCpu() - before
        return wall
      }
      const order = round % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const)
      const first = yield* Effect.promise(run(order[0]))
      const second = yield* Effect.promise(run(order[1]))
      yield* launch.release
      if (round === 0) continue // warm-up
      samples[order[0]].push(first)
      samples[order[1]].push(second)
    }
    const added = samples.on.map((value, index) => value - samples.off[index]!)
    processRows.push([
      `process: ${shell} -c ${command}`,
      ms(median(samples.off)),
      ms(median(samples.on)),
      ms(median(added)),
      `${ms(Math.min(...samples.off))} / ${ms(Math.min(...samples.on))}`,
      `${ms(cpu.off / RUNS)} / ${ms(cpu.on / RUNS)}`
    ])
  }

  const rows = [
    ["", "unsandboxed", "sandboxed", "added (median of pairs)", "min off / on", "CPU off / on (children)"],
    ...toolRows,
    ...processRows
  ]
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)))
  console.log(`bubblewrap ${check.capabilities.bwrap?.version}, ${RUNS} interleaved runs each, load ${os.loadavg()[0]!.toFixed(2)}, ${os.cpus().length} cores`)
  console.log(`prepare + release of a launch (layout, placeholders): median ${ms(median(prepareTimes))}`)
  for (const row of rows) console.log(row.map((cell, column) => cell.padEnd(widths[column]!)).join("  "))
})

Effect.runPromise(Effect.scoped(program)).catch((error) => {
  console.error(error)
  process.exit(1)
})
