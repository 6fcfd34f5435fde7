/**
 * `agent run` against `opencode run` on the same scripted sessions (see compare.sh, which
 * installs OpenCode and calls this with its binary). Both get the same opencode.json, in a git
 * repository, with the model served by the project's scripted OpenAI-compatible server behind a
 * proxy that records when each model call arrives and when its answer has been sent:
 *
 *   six    read, grep, glob, bash, write, then a final answer
 *   100    100 reads of different files, then a final answer
 *   1000   1000 reads, then a final answer
 *
 * Printed for each: wall time and peak RSS of the process (GNU time), and the median per-step
 * overhead (from the end of one model answer to the arrival of the next model call: the tool
 * call and everything the runtime does around it) over the first and the last 20 steps.
 * Every run is checked: exit code 0 and every scripted model turn consumed.
 *
 * Usage: tsx scripts/bench/compare.ts <opencode binary> [six,100,1000]
 * COMPARE_ONLY=agent runs our side alone (for profiling; no ratios), and then needs no OpenCode binary.
 */
import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { Effect } from "effect"
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { modelProxy } from "./ModelProxy.js"

const { text, toolCall } = ScriptedModel
const root = fileURLToPath(new URL("../../", import.meta.url))
const agentBin = path.join(root, "packages/cli/dist/bundle/bin.js")
const opencodeBin = process.argv[2]
const wanted = (process.argv[3] ?? "six,100,1000").split(",")
const agentOnly = process.env.COMPARE_ONLY === "agent"
if (!agentOnly && (!opencodeBin || !fs.existsSync(opencodeBin))) {
  console.error("usage: tsx scripts/bench/compare.ts <opencode binary> [six,100,1000]")
  process.exit(2)
}
if (!fs.existsSync("/usr/bin/time")) {
  console.error("compare: GNU time (/usr/bin/time) is needed to measure peak RSS")
  process.exit(2)
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), "agent-compare-"))
process.on("exit", () => fs.rmSync(work, { recursive: true, force: true }))

type Turn = MockOpenAIServer.ServerTurn
interface Scenario {
  readonly name: string
  readonly prompt: string
  readonly turns: (project: string) => ReadonlyArray<Turn>
}

const READ_FILES = 100
const reads = (count: number) => (project: string): ReadonlyArray<Turn> => [
  // Consecutive reads differ, so neither runtime sees a doom loop.
  ...Array.from({ length: count }, (_, i) => [toolCall("read", { filePath: path.join(project, "data", `f${i % READ_FILES}.txt`) })]),
  `Read ${count} files.`
]

const allScenarios: ReadonlyArray<Scenario> = [
  {
    name: "six",
    prompt: "Look around the project and leave a note.",
    turns: (project) => [
      [toolCall("read", { filePath: path.join(project, "src", "main.ts") })],
      [toolCall("grep", { pattern: "TODO", path: path.join(project, "src") })],
      [toolCall("glob", { pattern: "**/*.ts" })],
      [toolCall("bash", { command: "git status --short", description: "Show the working tree status" })],
      [toolCall("write", { filePath: path.join(project, "NOTES.md"), content: "# Notes\n\nOne TODO in src/util.ts.\n" })],
      [text("Left a note in NOTES.md.")]
    ]
  },
  { name: "100", prompt: "Read the data files.", turns: reads(100) },
  { name: "1000", prompt: "Read the data files, many times.", turns: reads(1000) }
]
const scenarios = allScenarios.filter((scenario) => wanted.includes(scenario.name))

/** A git repository with a few sources and 100 small data files. */
const makeProject = (dir: string) => {
  fs.mkdirSync(path.join(dir, "src"), { recursive: true })
  fs.mkdirSync(path.join(dir, "data"), { recursive: true })
  fs.writeFileSync(path.join(dir, "README.md"), "# Bench project\n")
  fs.writeFileSync(path.join(dir, "src", "main.ts"), 'import { util } from "./util"\n\nconsole.log(util(2))\n')
  fs.writeFileSync(path.join(dir, "src", "util.ts"), "// TODO: handle negative numbers\nexport const util = (n: number) => n * 2\n")
  for (let i = 0; i < READ_FILES; i++) {
    fs.writeFileSync(path.join(dir, "data", `f${i}.txt`), Array.from({ length: 40 }, (_, line) => `file ${i} line ${line}`).join("\n") + "\n")
  }
  const git = (...args: Array<string>) => execFileSync("git", args, { cwd: dir, stdio: "ignore" })
  git("init", "-q")
  git("add", ".")
  git("-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm", "init")
}

interface Measured {
  readonly wallSeconds: number
  readonly peakRssMb: number
  readonly firstMs: number
  readonly lastMs: number
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN

/** Runs one CLI on one scenario in a fresh project; `home` persists across runs of the same CLI. */
const measure = (who: "agent" | "opencode", scenario: Scenario, home: string) =>
  Effect.scoped(Effect.gen(function*() {
    const project = fs.mkdtempSync(path.join(work, `${who}-${scenario.name}-`))
    makeProject(project)
    const turns = scenario.turns(project)
    const model = yield* MockOpenAIServer.start(turns)
    const titles = yield* MockOpenAIServer.start(Array.from({ length: 50 }, () => "Bench"))
    const proxy = yield* modelProxy(model.url, ({ method, url }) => (method === "POST" && url.endsWith("/chat/completions") ? true : undefined))
    // One config file, in OpenCode's shape, read by both.
    fs.writeFileSync(path.join(project, "opencode.json"), JSON.stringify({
      $schema: "https://opencode.ai/config.json",
      model: "mock/model",
      small_model: "titles/model",
      provider: {
        mock: { npm: "@ai-sdk/openai-compatible", name: "Mock", options: { baseURL: proxy.url, apiKey: "none" }, models: { model: { name: "Mock" } } },
        titles: { npm: "@ai-sdk/openai-compatible", name: "Titles", options: { baseURL: titles.url, apiKey: "none" }, models: { model: { name: "Titles" } } }
      }
    }, null, 2))
    const env = {
      PATH: process.env.PATH,
      HOME: home,
      XDG_CONFIG_HOME: path.join(home, ".config"),
      XDG_DATA_HOME: path.join(home, ".local", "share"),
      XDG_CACHE_HOME: path.join(home, ".cache"),
      XDG_STATE_HOME: path.join(home, ".local", "state"),
      AGENT_MANAGED_DIR: path.join(home, "managed"),
      // OpenCode: no network work unrelated to the run.
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_MODELS_FETCH: "1",
      OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
      OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
      OPENCODE_DISABLE_SHARE: "1",
      OPENCODE_DISABLE_CLAUDE_CODE: "1",
      OPENCODE_DISABLE_EXTERNAL_SKILLS: "1",
      // COMPARE_AGENT_ENV='{"AGENT_NO_COMPILE_CACHE":"1"}' sets variables for our side (A/B runs).
      ...(who === "agent" && process.env.COMPARE_AGENT_ENV ? JSON.parse(process.env.COMPARE_AGENT_ENV) as Record<string, string> : {})
    }
    // COMPARE_AGENT_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles our side.
    const nodeArgs = (process.env.COMPARE_AGENT_NODE_ARGS ?? "").split(" ").filter(Boolean)
    const command = who === "agent" ? [process.execPath, ...nodeArgs, agentBin] : [opencodeBin!]
    const timeFile = path.join(project, "..", `${path.basename(project)}.time`)
    const args = ["-f", "%e %M", "-o", timeFile, ...command, "run", "--format", "json", "--title", "bench", scenario.prompt]
    const result = yield* Effect.async<{ code: number | null; stderr: string; stdout: string }>((resume) => {
      const child = spawn("/usr/bin/time", args, { cwd: project, env, stdio: ["ignore", "pipe", "pipe"] })
      let stdout = ""
      let stderr = ""
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
      child.on("exit", (code) => resume(Effect.succeed({ code, stderr, stdout })))
      return Effect.sync(() => child.kill("SIGKILL"))
    })
    if (result.code !== 0 || model.remaining() !== 0) {
      return yield* Effect.die(new Error(
        `${who} on ${scenario.name}: exit ${result.code}, ${model.remaining()} of ${turns.length} model turns left\n` +
          `${result.stderr.slice(-2000)}\n${result.stdout.slice(-1000)}`
      ))
    }
    const [wall, rssKb] = fs.readFileSync(timeFile, "utf8").trim().split("\n").at(-1)!.split(" ").map(Number)
    const overheads = proxy.calls.slice(1).map((call, i) => call.arrived - proxy.calls[i]!.answered)
    const measured: Measured = {
      wallSeconds: wall!,
      peakRssMb: rssKb! / 1024,
      firstMs: median(overheads.slice(0, 20)),
      lastMs: median(overheads.slice(-20))
    }
    console.error(`  ${who} ${scenario.name}: ${measured.wallSeconds} s, ${measured.peakRssMb.toFixed(0)} MB`)
    return measured
  }))

const program = Effect.gen(function*() {
  const homes = { agent: path.join(work, "home-agent"), opencode: path.join(work, "home-opencode") }
  const version = agentOnly ? "(not run)" : execFileSync(opencodeBin!, ["--version"], { encoding: "utf8" }).trim()
  console.log(`agent run vs opencode run ${version} (${os.cpus().length} cores, load ${os.loadavg()[0]!.toFixed(1)} at start)`)
  // A first run of each warms caches (OpenCode's provider packages, both databases); it is not counted.
  // The shortest scenario does that as well as any (a warm-up of 1000 reads took OpenCode 7 minutes).
  const warmup = scenarios.length > 0 ? allScenarios.find((scenario) => scenario.name === "six") : undefined
  if (warmup) {
    yield* measure("agent", warmup, homes.agent)
    if (!agentOnly) yield* measure("opencode", warmup, homes.opencode)
  }
  const rows: Array<Array<string>> = [["scenario", "", "wall s", "peak RSS MB", "step overhead first 20", "last 20", "last/first"]]
  const ms = (value: number) => (Number.isNaN(value) ? "-" : `${value.toFixed(1)} ms`)
  for (const scenario of scenarios) {
    const agent = yield* measure("agent", scenario, homes.agent)
    rows.push([scenario.name, "agent", agent.wallSeconds.toFixed(2), agent.peakRssMb.toFixed(0), ms(agent.firstMs), ms(agent.lastMs), (agent.lastMs / agent.firstMs).toFixed(2)])
    if (agentOnly) continue
    const opencode = yield* measure("opencode", scenario, homes.opencode)
    rows.push(["", "opencode", opencode.wallSeconds.toFixed(2), opencode.peakRssMb.toFixed(0), ms(opencode.firstMs), ms(opencode.lastMs), (opencode.lastMs / opencode.firstMs).toFixed(2)])
    rows.push([
      "",
      "opencode/agent",
      `${(opencode.wallSeconds / agent.wallSeconds).toFixed(1)}×`,
      `${(opencode.peakRssMb / agent.peakRssMb).toFixed(1)}×`,
      `${(opencode.firstMs / agent.firstMs).toFixed(1)}×`,
      `${(opencode.lastMs / agent.lastMs).toFixed(1)}×`,
      ""
    ])
  }
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)))
  console.log(rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join("  ").trimEnd()).join("\n"))
  console.log(`load ${os.loadavg()[0]!.toFixed(1)} at the end`)
})

Effect.runPromise(program).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error)
  process.exit(1)
})
