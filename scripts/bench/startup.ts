/**
 * CLI startup benchmark: wall time of `agent --version`, `agent --help`, `agent session list`,
 * and of `agent run` until the model is first called and until it exits (a one-step answer from
 * the scripted OpenAI-compatible server), for the bundled bin and the unbundled `tsc` output.
 * Run after `pnpm build`: `pnpm bench:startup` (`BENCH_RUNS=20` for more runs). Target (issue 8):
 * `agent --version` ≤ 120 ms. The machine's load shows in every number: compare rows of one run.
 */
import { MockOpenAIServer } from "@agent/testing"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../../", import.meta.url))
const bins = {
  bundled: path.join(root, "packages/cli/dist/bundle/bin.js"),
  unbundled: path.join(root, "packages/cli/dist/bin.js")
}
const runs = Number(process.env.BENCH_RUNS ?? 10)

const sandbox = fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-startup-"))
const project = path.join(sandbox, "project")
fs.mkdirSync(path.join(project, ".git"), { recursive: true })
const env = {
  PATH: process.env.PATH,
  HOME: sandbox,
  XDG_CONFIG_HOME: path.join(sandbox, "config"),
  XDG_DATA_HOME: path.join(sandbox, "data"),
  AGENT_MANAGED_DIR: path.join(sandbox, "managed")
}

interface Timing {
  readonly exitMs: number
  /** When the model server received the first request, for runs. */
  readonly firstCallMs?: number
}

/** Starts the CLI and times it; `firstCall` tells when the model was first asked. */
const time = (bin: string, args: ReadonlyArray<string>, firstCall?: () => boolean) =>
  new Promise<Timing>((resolve, reject) => {
    const started = process.hrtime.bigint()
    const elapsed = () => Number(process.hrtime.bigint() - started) / 1e6
    const child = spawn(process.execPath, [bin, ...args], { cwd: project, env, stdio: ["ignore", "ignore", "pipe"] })
    let stderr = ""
    let firstCallMs: number | undefined
    const poll = firstCall
      ? setInterval(() => {
        if (firstCallMs === undefined && firstCall()) firstCallMs = elapsed()
      }, 1)
      : undefined
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.on("exit", (code) => {
      const exitMs = elapsed()
      if (poll) clearInterval(poll)
      if (code !== 0) return reject(new Error(`agent ${args.join(" ")} exited with ${code}: ${stderr}`))
      resolve(firstCallMs === undefined ? { exitMs } : { exitMs, firstCallMs })
    })
  })

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const format = (values: ReadonlyArray<number>) =>
  `${median(values).toFixed(0).padStart(6)} ms median  ${Math.min(...values).toFixed(0).padStart(6)} ms min`

const program = Effect.gen(function*() {
  const server = yield* MockOpenAIServer.start(Array.from({ length: runs * 2 + 2 }, () => "Hi."))
  fs.writeFileSync(
    path.join(project, "agent.json"),
    JSON.stringify({
      model: "mock/model",
      small_model: "mock/model",
      provider: { mock: { npm: "@ai-sdk/openai-compatible", options: { baseURL: server.url }, models: { model: {} } } }
    })
  )
  console.log(`agent CLI startup, ${runs} runs each (${os.cpus().length} cores, load ${os.loadavg()[0]!.toFixed(1)})`)
  for (const [name, bin] of Object.entries(bins)) {
    const measure = (args: ReadonlyArray<string>) =>
      Effect.promise(async () => {
        await time(bin, args) // warm the file system cache
        const times: Array<number> = []
        for (let i = 0; i < runs; i++) times.push((await time(bin, args)).exitMs)
        return times
      })
    console.log(`\n${name} (${path.relative(root, bin)})`)
    console.log(`  --version              ${format(yield* measure(["--version"]))}`)
    console.log(`  --help                 ${format(yield* measure(["--help"]))}`)
    console.log(`  session list           ${format(yield* measure(["session", "list"]))}`)
    const firstCalls: Array<number> = []
    const exits: Array<number> = []
    for (let i = 0; i < runs; i++) {
      const before = server.requests.length
      // --title: no title request, so the first request is the run's.
      const timing = yield* Effect.promise(() => time(bin, ["run", "--title", "bench", "hello"], () => server.requests.length > before))
      firstCalls.push(timing.firstCallMs ?? timing.exitMs)
      exits.push(timing.exitMs)
    }
    console.log(`  run: first model call  ${format(firstCalls)}`)
    console.log(`  run: exit              ${format(exits)}`)
  }
})

Effect.runPromise(Effect.scoped(program)).finally(() => fs.rmSync(sandbox, { recursive: true, force: true }))
