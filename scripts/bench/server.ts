/**
 * Server benchmark: 50 sessions prompted at once through the HTTP API of a real `agent serve`
 * process, each running 20 scripted steps (19 `read` calls and a final answer) from the
 * project's scripted OpenAI-compatible server, watched through one SSE stream. The model
 * answers at once, so the time between one step's finish and the next is the runtime's own
 * overhead (server, loop, tools, store, event stream) plus a local HTTP round trip to the model.
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

const program = Effect.gen(function*() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-server-"))
  const model = yield* MockOpenAIServer.start(Array.from({ length: SESSIONS * (STEPS + 1) + 100 }, () => turn))
  const project = path.join(dir, "project")
  fs.mkdirSync(project, { recursive: true })
  fs.writeFileSync(path.join(project, "notes.txt"), "hello\n".repeat(20))
  fs.writeFileSync(
    path.join(project, "agent.json"),
    JSON.stringify({
      model: "mock/model",
      provider: { mock: { npm: "@ai-sdk/openai-compatible", options: { baseURL: model.url }, models: { model: {} } } }
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
    await Promise.all(sessions.map((session) => {
      starts.set(session.id, performance.now())
      return post(`/session/${session.id}/prompt_async`, { parts: [{ type: "text", text: "go" }] })
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
  const peakRss = peakRssOf(child.pid!)
  // A graceful stop (and, when profiling, time to write the profile) before the finalizer's SIGKILL.
  yield* Effect.promise(() =>
    new Promise<void>((resolve) => {
      child.once("exit", () => resolve())
      child.kill("SIGTERM")
      setTimeout(resolve, 10_000).unref()
    })
  )
  fs.rmSync(dir, { recursive: true, force: true })

  const steps = SESSIONS * STEPS
  console.log(`${SESSIONS} sessions × ${STEPS} steps through HTTP + SSE (${result.events} events, ${(result.bytes / 1024 / 1024).toFixed(1)} MB streamed)`)
  console.log(`  wall time:   ${result.wall.toFixed(0)} ms, throughput ${(steps / (result.wall / 1000)).toFixed(0)} steps/s`)
  console.log(
    `  per step (all sessions interleaved on one server): p50 ${percentile(result.perStep, 50).toFixed(1)} ms, p99 ${percentile(result.perStep, 99).toFixed(1)} ms   [target p99 ≤ 50 ms]`
  )
  console.log(
    `  server CPU per step: ${(result.serverCpu / steps).toFixed(1)} ms (user + system; the p50/p99 above include waiting for the other ${SESSIONS - 1} sessions' steps)`
  )
  console.log(`  peak RSS of the server: ${(peakRss / 1024 / 1024).toFixed(0)} MiB   [target ≤ 400 MiB]`)
})

Effect.runPromise(Effect.scoped(program)).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
