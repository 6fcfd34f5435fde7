/**
 * Server benchmark: 50 sessions prompted at once through the HTTP API of a real `agent serve`
 * process, each running 20 scripted steps (19 `read` calls and a final answer) from the
 * project's scripted OpenAI-compatible server, watched through one SSE stream. Two runs:
 *
 * 1. The model answers at once: the 50 sessions keep the server busy all the time, so this
 *    gives the throughput, the server's CPU per step and its peak RSS; a step's time here is
 *    mostly waiting for the other 49 sessions' steps.
 * 2. Every model call takes BENCH_MODEL_MS (default 2000 ms, a fast model's tool-calling
 *    step): the per-step overhead is measured at the model boundary, as in compare.ts, from
 *    the end of one model answer to the arrival of the session's next model call (the tool
 *    call, the store, the event stream, the server's handling, and any wait for the other
 *    sessions' work). All 50 sessions start together and every call takes the same time, so
 *    their steps stay in lockstep: 50 steps arrive in the same millisecond, every time.
 * 3. As 2, with each model call taking between half and one and a half BENCH_MODEL_MS (uniform,
 *    from a fixed seed), as model calls do: the sessions drift apart after their first answers
 *    and a step waits only for the work that happens to arrive with it.
 *
 * Run after `pnpm build`: `pnpm bench:server`. Targets (issue 9): p99 ≤ 50 ms per step, peak
 * RSS of the server ≤ 400 MiB.
 */
import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { modelProxy } from "./ModelProxy.js"

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 50)
const STEPS = Number(process.env.BENCH_STEPS ?? 20)
// The bundle is what `agent` runs (the package's bin); BENCH_SERVER_BIN=packages/cli/dist/bin.js runs the
// unbundled build, whose profile names each library's files.
const bin = process.env.BENCH_SERVER_BIN ?? fileURLToPath(new URL("../../packages/cli/dist/bundle/bin.js", import.meta.url))

const percentile = (values: Array<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!
}

// Every session calls the same model; each call looks at how far its own session got. The
// offsets differ from one call to the next, or the doom-loop guard would (rightly) step in.
const turn = (request: MockOpenAIServer.ChatCompletionRequest) => {
  if (!request.tools) return "Bench session" // the title
  const done = request.messages.filter((entry) => entry.role === "tool").length
  return done < STEPS - 1 ? [ScriptedModel.toolCall("read", { filePath: "notes.txt", offset: (done % 10) + 1, limit: 5 })] : "done"
}

/** CPU time (user + system, ms) a process has used so far, from the kernel (Linux; 100 ticks/s). */
const cpuMsOf = (pid: number) => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** Peak resident memory of a process, from the kernel (Linux). */
const peakRssOf = (pid: number) => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024
}

/** One run: a fresh server, SESSIONS sessions prompted at once, each model call held for `delayOf()` ms. */
const phase = (delayOf: () => number) =>
  Effect.scoped(Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-server-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
    const model = yield* MockOpenAIServer.start(Array.from({ length: SESSIONS * (STEPS + 1) + 100 }, () => turn))
    // Tool-calling requests (not the title's), by the session marker in their prompt.
    const proxy = yield* modelProxy(model.url, ({ body }) => {
      const marker = /bench-session-(\d+)/.exec(body)
      return marker && body.includes('"tools":') ? Number(marker[1]) : undefined
    }, delayOf)
    const project = path.join(dir, "project")
    fs.mkdirSync(project, { recursive: true })
    fs.writeFileSync(path.join(project, "notes.txt"), "hello\n".repeat(20))
    fs.writeFileSync(
      path.join(project, "agent.json"),
      JSON.stringify({
        model: "mock/model",
        provider: { mock: { npm: "@ai-sdk/openai-compatible", options: { baseURL: proxy.url }, models: { model: {} } } }
      })
    )
    // BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the server.
    const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter(Boolean)
    const child = spawn(process.execPath, [...nodeArgs, bin, "serve", "--port", "0"], {
      cwd: project,
      env: {
        ...process.env,
        HOME: dir,
        XDG_DATA_HOME: path.join(dir, "data"),
        XDG_CONFIG_HOME: path.join(dir, "config"),
        AGENT_MANAGED_DIR: path.join(dir, "managed")
      },
      stdio: ["ignore", "pipe", "inherit"]
    })
    yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
    const url = yield* Effect.promise(() =>
      new Promise<string>((resolve, reject) => {
        let out = ""
        child.stdout!.on("data", (chunk: Buffer) => {
          out += chunk.toString()
          const match = /listening on (http:\/\/\S+)/.exec(out)
          if (match) resolve(match[1]!)
        })
        child.on("exit", (code) => reject(new Error(`agent serve exited with ${code}`)))
      })
    )

    const result = yield* Effect.promise(async () => {
      const post = (route: string, body: unknown) =>
        fetch(`${url}${route}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
      const sessions = await Promise.all(Array.from({ length: SESSIONS }, (_, index) =>
        post("/session", { title: `bench ${index}` }).then((response) => response.json() as Promise<{ id: string }>)))
      const finishes = new Map<string, Array<number>>(sessions.map((session) => [session.id, []]))
      const seenFinish = new Set<string>()
      let idle = 0
      let events = 0
      let bytes = 0

      const stream = await fetch(`${url}/event`)
      const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader()
      const allIdle = (async () => {
        let buffer = ""
        while (idle < SESSIONS) {
          const { done, value } = await reader.read()
          if (done) throw new Error("event stream ended early")
          buffer += value
          bytes += value.length
          const frames = buffer.split("\n\n")
          buffer = frames.pop()!
          const now = performance.now()
          for (const frame of frames) {
            const line = frame.split("\n").find((entry) => entry.startsWith("data: "))
            if (!line) continue
            events++
            const event = JSON.parse(line.slice(6))
            if (process.env.BENCH_TRACE) console.log(event.type, JSON.stringify(event.properties).slice(0, 200))
            if (event.type === "message.part.updated" && event.properties.part.type === "step-finish") {
              if (seenFinish.has(event.properties.part.id)) continue
              seenFinish.add(event.properties.part.id)
              finishes.get(event.properties.part.sessionID)?.push(now)
            }
            if (event.type === "session.status" && event.properties.status.type === "idle" && finishes.has(event.properties.sessionID)) idle++
          }
        }
        await reader.cancel()
      })()

      const started = performance.now()
      const cpuBefore = cpuMsOf(child.pid!)
      const starts = new Map<string, number>()
      await Promise.all(sessions.map((session, index) => {
        starts.set(session.id, performance.now())
        return post(`/session/${session.id}/prompt_async`, { parts: [{ type: "text", text: `Read the notes (bench-session-${index}).` }] })
      }))
      await allIdle
      const wall = performance.now() - started
      const serverCpu = cpuMsOf(child.pid!) - cpuBefore

      const perStep: Array<number> = []
      for (const [id, times] of finishes) {
        if (times.length !== STEPS) throw new Error(`session ${id} finished ${times.length} steps, expected ${STEPS}`)
        let previous = starts.get(id)!
        for (const at of times) {
          perStep.push(at - previous)
          previous = at
        }
      }
      return { wall, perStep, events, bytes, serverCpu }
    })
    // From the end of one model answer to the session's next model call.
    const overhead: Array<number> = []
    for (let session = 0; session < SESSIONS; session++) {
      const calls = proxy.calls.filter((call) => call.tag === session)
      if (calls.length !== STEPS) throw new Error(`session ${session} made ${calls.length} model calls, expected ${STEPS}`)
      for (let index = 1; index < calls.length; index++) overhead.push(calls[index]!.arrived - calls[index - 1]!.answered)
    }
    const peakRss = peakRssOf(child.pid!)
    // A graceful stop (and, when profiling, time to write the profile) before the finalizer's SIGKILL.
    yield* Effect.promise(() =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve())
        child.kill("SIGTERM")
        setTimeout(resolve, 10_000).unref()
      })
    )
    return { ...result, overhead, peakRss }
  }))

const program = Effect.gen(function*() {
  const steps = SESSIONS * STEPS
  const line = (values: Array<number>) => `p50 ${percentile(values, 50).toFixed(1)} ms, p99 ${percentile(values, 99).toFixed(1)} ms`

  const busy = yield* phase(() => 0)
  console.log(`${SESSIONS} sessions × ${STEPS} steps through HTTP + SSE, the model answering at once`)
  console.log(`  (${busy.events} events, ${(busy.bytes / 1024 / 1024).toFixed(1)} MB streamed)`)
  console.log(`  wall time:   ${busy.wall.toFixed(0)} ms, throughput ${(steps / (busy.wall / 1000)).toFixed(0)} steps/s`)
  console.log(`  server CPU per step: ${(busy.serverCpu / steps).toFixed(1)} ms (user + system)`)
  console.log(`  a step's time, all sessions interleaved: ${line(busy.perStep)} (mostly waiting for the other ${SESSIONS - 1} sessions)`)
  console.log(`  peak RSS of the server: ${(busy.peakRss / 1024 / 1024).toFixed(0)} MiB   [target ≤ 400 MiB]`)

  const delayMs = Number(process.env.BENCH_MODEL_MS ?? 2000)
  if (delayMs <= 0) return
  const paced = yield* phase(() => delayMs)
  console.log(`${SESSIONS} sessions × ${STEPS} steps, every model call taking ${delayMs} ms (the sessions in lockstep)`)
  console.log(`  wall time:   ${paced.wall.toFixed(0)} ms; server CPU per step ${(paced.serverCpu / steps).toFixed(1)} ms`)
  console.log(`  per-step overhead (model answer → next model call): ${line(paced.overhead)}   [target p99 ≤ 50 ms]`)
  console.log(`  peak RSS of the server: ${(paced.peakRss / 1024 / 1024).toFixed(0)} MiB`)

  // mulberry32: the same sequence of model latencies in every run.
  let seed = 0x5eed
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const varied = yield* phase(() => delayMs * (0.5 + random()))
  console.log(`${SESSIONS} sessions × ${STEPS} steps, each model call taking ${delayMs / 2}–${(delayMs * 3) / 2} ms (uniform, fixed seed)`)
  console.log(`  wall time:   ${varied.wall.toFixed(0)} ms; server CPU per step ${(varied.serverCpu / steps).toFixed(1)} ms`)
  console.log(`  per-step overhead (model answer → next model call): ${line(varied.overhead)}   [target p99 ≤ 50 ms]`)
  console.log(`  peak RSS of the server: ${(varied.peakRss / 1024 / 1024).toFixed(0)} MiB`)
})

Effect.runPromise(program).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
