/**
 * `agent acp` against `agent run` on the same scripted 20-step session (19 `read` calls, then an
 * answer) from the project's scripted OpenAI-compatible server, behind a proxy that records when
 * each model call arrives and when its answer has been sent. For each, BENCH_ACP_ROUNDS rounds
 * (default 3; medians printed):
 *
 * - first update: from the end of the model's first answer to the first update the user gets (an
 *   ACP `session/update`; a JSON event line of `agent run --format json`); for ACP also from the
 *   `session/prompt` request to its first update;
 * - per-step overhead: the median, over the steps, of the time from the end of one model answer
 *   to the arrival of the next model call (the tool call and everything around it; ACP adds its
 *   updates to the editor);
 * - CPU per step: the agent process's CPU time (all its threads, from /proc/PID/task/N/schedstat, in ns)
 *   between the second model call and the last, per step; the figure that shared, loaded machines
 *   disturb least;
 * - peak RSS of the agent process (VmHWM, from /proc), at the end of the session.
 *
 * Run after `pnpm build`: `pnpm bench:acp` (BENCH_ACP_ROUNDS, BENCH_ACP_STEPS; BENCH_ACP_SERIES=1 also prints CPU per
 * step in groups of steps, the first ones apart; BENCH_ACP_PROF=dir writes CPU
 * profiles of both processes under dir/run and dir/acp, sampled every BENCH_ACP_PROF_INTERVAL µs (1000), each
 * with `steps.PID.json` beside it: the monotonic times (µs, the profiles' clock) of the second model call and
 * the last, so a reader can keep to the steps the bench measures). Target (issue 25): ACP adds ≤ 2 ms per step and ≤ 20 MiB.
 */
import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Worker } from "node:worker_threads"
import { type ModelCall, modelProxy } from "./ModelProxy.js"

// BENCH_ACP_BIN: another build of the CLI (an absolute path), for before/after pairs.
const bin = process.env.BENCH_ACP_BIN ?? fileURLToPath(new URL("../../packages/cli/dist/bundle/bin.js", import.meta.url))
const STEPS = Number(process.env.BENCH_ACP_STEPS ?? 20)
const ROUNDS = Number(process.env.BENCH_ACP_ROUNDS ?? 3)

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}
const mib = (bytes: number) => bytes / 1024 / 1024
/** CPU time (user + system, ms) a process has used so far (Linux; 100 ticks/s). */
const cpuMsOf = (pid: number) => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}
/** CPU time (ms, ns precision) of all the threads of a process so far; 0 once it is gone. */
const threadsCpuMsOf = (pid: number) => {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).reduce((sum, task) => {
      try {
        return sum + Number(fs.readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0]) / 1e6
      } catch {
        return sum // the thread ended meanwhile
      }
    }, 0)
  } catch {
    return 0
  }
}
const peakRssOf = (pid: number) => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024
}

/** 19 reads at changing offsets (the doom-loop guard stays quiet), then an answer; titles answered apart. */
const turn = (request: MockOpenAIServer.ChatCompletionRequest) => {
  if (!request.tools) return "Bench session"
  const done = request.messages.filter((entry) => entry.role === "tool").length
  return done < STEPS - 1 ? [ScriptedModel.toolCall("read", { filePath: "notes.txt", offset: (done % 10) + 1, limit: 5 })] : "done"
}

interface Measure {
  readonly firstUpdate: number
  readonly promptToFirstUpdate?: number
  readonly perStep: number
  readonly peakRss: number
  /** The agent process's CPU time for the session (ACP: from the prompt; run: the whole process). */
  readonly cpu: number
  /** The agent's CPU time per step, from the second model call to the last. */
  readonly cpuPerStep: number
  /** The agent's CPU time of each step (from one model call to the next), from the second call on. */
  readonly stepCpus: ReadonlyArray<number>
}

/** A temporary home and project whose model is `url`. */
const makeProject = (url: string) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-acp-"))
  const project = path.join(root, "project")
  fs.mkdirSync(path.join(project, ".git"), { recursive: true })
  fs.writeFileSync(path.join(project, "notes.txt"), Array.from({ length: 40 }, (_, i) => `line ${i + 1}`).join("\n"))
  fs.writeFileSync(path.join(project, "agent.json"), JSON.stringify({
    model: "mock/model-a",
    small_model: "mock/model-a",
    permission: { read: "allow" },
    provider: { mock: { npm: "@ai-sdk/openai-compatible", options: { baseURL: url }, models: { "model-a": {} } } }
  }))
  const home = path.join(root, "home")
  const env = { ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, ".config"), XDG_DATA_HOME: path.join(home, ".local", "share"), AGENT_MANAGED_DIR: path.join(root, "managed") }
  return { root, project, env }
}

/** The model calls of the session, in order, as the proxy saw them. */
const perStep = (calls: ReadonlyArray<Call>) =>
  median(calls.slice(1).map((call, i) => call.arrived - calls[i]!.answered))
/** Where BENCH_ACP_PROF puts a kind's profiles, and the node flags that write them there. */
const profileDir = (kind: "run" | "acp") => process.env.BENCH_ACP_PROF && path.join(process.env.BENCH_ACP_PROF, kind)
const profileArgs = (kind: "run" | "acp") => {
  const dir = profileDir(kind)
  return dir ? ["--cpu-prof", "--cpu-prof-dir", dir, "--cpu-prof-interval", process.env.BENCH_ACP_PROF_INTERVAL ?? "1000"] : []
}
/** Beside the profiles: the measured steps' window in the profiles' clock. */
const writeStepWindow = (kind: "run" | "acp", pid: number | undefined, calls: ReadonlyArray<Call>) => {
  const dir = profileDir(kind)
  if (!dir || pid === undefined || calls.length < 3) return
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, `steps.${pid}.json`), JSON.stringify({ from: calls[1]!.tag.monotonic, to: calls[calls.length - 1]!.tag.monotonic }))
}
const cpuPerStep = (calls: ReadonlyArray<Call>) => (calls[calls.length - 1]!.tag.cpu - calls[1]!.tag.cpu) / (calls.length - 2)
const stepCpus = (calls: ReadonlyArray<Call>) => calls.slice(2).map((call, i) => call.tag.cpu - calls[i + 1]!.tag.cpu)

/** A model call, tagged with the agent's CPU time when it arrived. */
type Call = ModelCall<{ readonly cpu: number; /** µs, CLOCK_MONOTONIC: the clock of V8's profiles. */ readonly monotonic: number }>
/** The agent process, once started: the proxy reads its CPU time as each model call arrives. */
interface Agent {
  pid: number | undefined
}

const viaRun = (url: string, calls: Array<Call>, agent: Agent) =>
  Effect.promise(() => {
    const { root, project, env } = makeProject(url)
    return new Promise<Measure>((resolve, reject) => {
      const child = spawn(process.execPath, [...profileArgs("run"), bin, "run", "--format", "json", "read the notes"], { cwd: project, env, stdio: ["ignore", "pipe", "pipe"] })
      agent.pid = child.pid
      let firstLine = 0
      let peak = 0
      let cpu = 0
      let stderr = ""
      const poll = setInterval(() => {
        peak = Math.max(peak, peakRssOf(child.pid!))
        cpu = cpuMsOf(child.pid!)
      }, 20)
      child.stdout.on("data", () => (firstLine ||= performance.now()))
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
      child.on("exit", (code) => {
        clearInterval(poll)
        fs.rmSync(root, { recursive: true, force: true })
        if (code !== 0 || calls.length !== STEPS) return reject(new Error(`agent run exited ${code} after ${calls.length} model calls: ${stderr}`))
        resolve({ firstUpdate: firstLine - calls[0]!.answered, perStep: perStep(calls), peakRss: peak, cpu, cpuPerStep: cpuPerStep(calls), stepCpus: stepCpus(calls) })
      })
    })
  })

const viaAcp = (url: string, calls: Array<Call>, agent: Agent) =>
  Effect.promise(async () => {
    const { root, project, env } = makeProject(url)
    const nodeArgs = profileArgs("acp")
    // The client runs in a worker thread (AcpClient.mjs says why); its clock is the epoch's, the proxy's this thread's.
    const worker = new Worker(new URL("./AcpClient.mjs", import.meta.url), { workerData: { bin, project, env, nodeArgs } })
    try {
      const result = await new Promise<ClientResult>((resolve, reject) => {
        worker.on("message", (message: { pid?: number; result?: ClientResult; error?: string }) => {
          if (message.pid !== undefined) agent.pid = message.pid
          if (message.result !== undefined) resolve(message.result)
          if (message.error !== undefined) reject(new Error(`agent acp: ${message.error}`))
        })
        worker.on("error", reject)
      })
      if (result.stopReason !== "end_turn" || calls.length !== STEPS) throw new Error(`agent acp: ${result.stopReason} after ${calls.length} model calls`)
      const answered = performance.timeOrigin + calls[0]!.answered
      return {
        firstUpdate: result.firstUpdate - answered,
        promptToFirstUpdate: result.firstUpdate - result.sent,
        perStep: perStep(calls),
        peakRss: result.peakRss,
        cpu: result.cpu,
        cpuPerStep: cpuPerStep(calls),
        stepCpus: stepCpus(calls)
      }
    } finally {
      await worker.terminate()
      fs.rmSync(root, { recursive: true, force: true })
    }
  })

/** What the client thread reports of a session (times in ms since the epoch). */
interface ClientResult {
  readonly stopReason: string
  readonly firstUpdate: number
  readonly sent: number
  readonly peakRss: number
  readonly cpu: number
}

/** One session through `run`: a fresh model server and proxy, tool-calling requests recorded. */
const once = (kind: "run" | "acp", run: (url: string, calls: Array<Call>, agent: Agent) => Effect.Effect<Measure>) =>
  Effect.scoped(Effect.gen(function*() {
    const model = yield* MockOpenAIServer.start(Array.from({ length: STEPS + 10 }, () => turn))
    const agent: Agent = { pid: undefined }
    const proxy = yield* modelProxy(model.url, ({ body }) =>
      body.includes('"tools":')
        ? { cpu: agent.pid === undefined ? 0 : threadsCpuMsOf(agent.pid), monotonic: Number(process.hrtime.bigint() / 1000n) }
        : undefined)
    const measure = yield* run(proxy.url, proxy.calls, agent)
    writeStepWindow(kind, agent.pid, proxy.calls)
    return measure
  }))

const report = (name: string, measures: ReadonlyArray<Measure>) => {
  const firstUpdate = median(measures.map((m) => m.firstUpdate))
  const step = median(measures.map((m) => m.perStep))
  const rss = median(measures.map((m) => m.peakRss))
  const cpu = median(measures.map((m) => m.cpu))
  const stepCpu = median(measures.map((m) => m.cpuPerStep))
  const prompt = measures[0]?.promptToFirstUpdate === undefined ? "" : `, prompt to first update ${median(measures.map((m) => m.promptToFirstUpdate!)).toFixed(1)} ms`
  console.log(`${name.padEnd(10)} first update ${firstUpdate.toFixed(1)} ms after the model's answer${prompt}; per step ${step.toFixed(2)} ms (CPU ${stepCpu.toFixed(2)} ms); CPU ${cpu} ms; peak RSS ${mib(rss).toFixed(0)} MiB`)
  return { step, rss, stepCpu, series: (measures[0]?.stepCpus ?? []).map((_, i) => median(measures.map((m) => m.stepCpus[i]!))) }
}

/** BENCH_ACP_SERIES=1: each step's CPU (medians), in groups, to see where the two differ (the first steps, or all). */
const printSeries = (run: ReadonlyArray<number>, acp: ReadonlyArray<number>) => {
  const groups = [[0, 8], [8, 18], [18, 48], [48, 98], [98, Infinity]] as const
  for (const [from, to] of groups) {
    const a = run.slice(from, to)
    const b = acp.slice(from, to)
    if (a.length === 0) break
    const mean = (values: ReadonlyArray<number>) => values.reduce((sum, value) => sum + value, 0) / values.length
    console.log(`  steps ${from + 2}-${from + 1 + a.length}: CPU per step run ${mean(a).toFixed(2)} ms, acp ${mean(b).toFixed(2)} ms (acp adds ${(mean(b) - mean(a)).toFixed(2)})`)
  }
}

const program = Effect.gen(function*() {
  if (!fs.existsSync(bin)) return yield* Effect.die(new Error("bench:acp needs the built CLI: run `pnpm build` first"))
  console.log(`${STEPS}-step scripted session, ${ROUNDS} rounds each (medians)`)
  const run: Array<Measure> = []
  const acp: Array<Measure> = []
  for (let round = 0; round < ROUNDS; round++) {
    run.push(yield* once("run", viaRun))
    acp.push(yield* once("acp", viaAcp))
  }
  const a = report("agent run", run)
  const b = report("agent acp", acp)
  const addedStep = b.step - a.step
  const addedRss = mib(b.rss - a.rss)
  if (process.env.BENCH_ACP_SERIES) printSeries(a.series, b.series)
  console.log(`acp adds ${addedStep.toFixed(2)} ms per step (target ≤ 2), ${(b.stepCpu - a.stepCpu).toFixed(2)} ms of CPU per step, and ${addedRss.toFixed(1)} MiB peak RSS (target ≤ 20)`)
})

Effect.runPromise(program).catch((error) => {
  console.error(error)
  process.exit(1)
})
