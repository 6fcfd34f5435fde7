/**
 * A real `agent serve` process for server.ts: started in a temporary home whose project talks to
 * a scripted model, driven through its HTTP API and one SSE stream, and measured from the kernel's
 * view of the process (/proc) and from its own (`GET /global/memory`).
 */
import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { Effect, type Scope } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

// The bundle is what `agent` runs (the package's bin); BENCH_SERVER_BIN=packages/cli/dist/bin.js runs the
// unbundled build, whose profile names each library's files.
const bin = process.env.BENCH_SERVER_BIN ?? fileURLToPath(new URL("../../packages/cli/dist/bundle/bin.js", import.meta.url))

/**
 * A session's model: `steps - 1` `read` calls, then a final answer; each call looks at how far its
 * own session got. The offsets differ from one call to the next, or the doom-loop guard would
 * (rightly) step in.
 */
export const turn = (steps: number) => (request: MockOpenAIServer.ChatCompletionRequest) => {
  if (!request.tools) return "Bench session" // the title
  const done = request.messages.filter((entry) => entry.role === "tool").length
  return done < steps - 1 ? [ScriptedModel.toolCall("read", { filePath: "notes.txt", offset: (done % 10) + 1, limit: 5 })] : "done"
}

/** CPU time (user + system, ms) a process has used so far, from the kernel (Linux; 100 ticks/s). */
export const cpuMsOf = (pid: number) => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** Fields of /proc/<pid>/status in bytes (Linux): VmHWM is the peak RSS; RssAnon, RssFile and RssShmem add up to VmRSS. */
export const statusOf = (pid: number) => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  const field = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024
  return {
    rss: field("VmRSS"),
    peakRss: field("VmHWM"),
    anon: field("RssAnon"),
    file: field("RssFile"),
    shmem: field("RssShmem"),
    threads: Number(/Threads:\s+(\d+)/.exec(status)?.[1] ?? 0)
  }
}

export interface ServeProcess {
  readonly url: string
  readonly pid: number
  /** Sizes in bytes of the server's database file and of its write-ahead log. */
  readonly database: () => { readonly db: number; readonly wal: number }
  /** The server's own `process.memoryUsage()`. */
  readonly memory: () => Promise<{ rss: number; heapTotal: number; heapUsed: number; external: number; arrayBuffers: number }>
  /**
   * Has the server (started with `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=<directory>`) write
   * its heap into `directory` and waits until it answers again (it is stopped while it writes).
   */
  readonly heapSnapshot: (directory: string) => Promise<string>
  /** SIGTERM, then waits (up to 10 s) for the process to end; the scope's finalizer SIGKILLs whatever is left. */
  readonly stop: () => Promise<void>
}

/**
 * Starts `agent serve --port 0` in a fresh home under `dir`, whose project (holding `notes.txt`)
 * uses the OpenAI-compatible model at `modelUrl`, with `env` added to its environment and `nodeArgs`
 * given to node.
 */
export const startServe = (
  dir: string,
  modelUrl: string,
  options: { readonly env?: Record<string, string>; readonly nodeArgs?: ReadonlyArray<string> } = {}
): Effect.Effect<ServeProcess, never, Scope.Scope> =>
  Effect.gen(function*() {
    const project = path.join(dir, "project")
    fs.mkdirSync(project, { recursive: true })
    fs.writeFileSync(path.join(project, "notes.txt"), "hello\n".repeat(20))
    fs.writeFileSync(
      path.join(project, "agent.json"),
      JSON.stringify({
        model: "mock/model",
        provider: { mock: { npm: "@ai-sdk/openai-compatible", options: { baseURL: modelUrl }, models: { model: {} } } }
      })
    )
    // BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the server.
    const nodeArgs = [...(process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter(Boolean), ...(options.nodeArgs ?? [])]
    const child = spawn(process.execPath, [...nodeArgs, bin, "serve", "--port", "0"], {
      cwd: project,
      env: {
        ...process.env,
        HOME: dir,
        XDG_DATA_HOME: path.join(dir, "data"),
        XDG_CONFIG_HOME: path.join(dir, "config"),
        AGENT_MANAGED_DIR: path.join(dir, "managed"),
        ...options.env
      },
      stdio: ["ignore", "pipe", "inherit"]
    })
    yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
    const url = yield* Effect.promise(() =>
      new Promise<string>((resolve, reject) => {
        let out: string | undefined = ""
        // BENCH_SERVER_STDOUT=<file> keeps what the server prints (e.g. with BENCH_SERVER_NODE_ARGS=--trace-gc).
        const log = process.env.BENCH_SERVER_STDOUT ? fs.createWriteStream(process.env.BENCH_SERVER_STDOUT) : undefined
        child.stdout!.on("data", (chunk: Buffer) => {
          log?.write(chunk)
          if (out === undefined) return
          out += chunk.toString()
          const match = /listening on (http:\/\/\S+)/.exec(out)
          if (match) {
            out = undefined
            resolve(match[1]!)
          }
        })
        child.on("exit", (code) => reject(new Error(`agent serve exited with ${code}`)))
      })
    )
    const size = (file: string) => fs.statSync(file, { throwIfNoEntry: false })?.size ?? 0
    const database = path.join(dir, "data", "agent", "agent.db")
    return {
      url,
      pid: child.pid!,
      database: () => ({ db: size(database), wal: size(`${database}-wal`) }),
      memory: () => fetch(`${url}/global/memory`).then((response) => response.json()),
      heapSnapshot: async (directory) => {
        const before = new Set(fs.readdirSync(directory))
        child.kill("SIGUSR2")
        let written: string | undefined
        while ((written = fs.readdirSync(directory).find((name) => !before.has(name))) === undefined) {
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        await fetch(`${url}/global/health`)
        return path.join(directory, written)
      },
      // A graceful stop (and, when profiling, time to write the profile) before the finalizer's SIGKILL.
      stop: () =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve()
          child.once("exit", () => resolve())
          child.kill("SIGTERM")
          setTimeout(resolve, 10_000).unref()
        })
    }
  })

export interface SessionsRun {
  readonly wall: number
  /** Each session's time from its prompt (or its previous step) to each step's end, ms. */
  readonly perStep: Array<number>
  readonly events: number
  readonly bytes: number
}

/**
 * Creates `sessions` sessions, prompts them all at once (session `first + i` is marked
 * `bench-session-<first + i>` in its prompt) and follows one SSE stream until every one is idle
 * again, having finished `steps` steps.
 */
export const runSessions = async (url: string, options: { readonly sessions: number; readonly steps: number; readonly first?: number }): Promise<SessionsRun> => {
  const first = options.first ?? 0
  const post = (route: string, body: unknown) =>
    fetch(`${url}${route}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
  const sessions = await Promise.all(Array.from({ length: options.sessions }, (_, index) =>
    post("/session", { title: `bench ${first + index}` }).then((response) => response.json() as Promise<{ id: string }>)))
  const finishes = new Map<string, Array<number>>(sessions.map((session) => [session.id, []]))
  const seenFinish = new Set<string>()
  let idle = 0
  let events = 0
  let bytes = 0

  const stream = await fetch(`${url}/event`)
  const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader()
  const allIdle = (async () => {
    let buffer = ""
    while (idle < options.sessions) {
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
  const starts = new Map<string, number>()
  await Promise.all(sessions.map((session, index) => {
    starts.set(session.id, performance.now())
    return post(`/session/${session.id}/prompt_async`, { parts: [{ type: "text", text: `Read the notes (bench-session-${first + index}).` }] })
  }))
  await allIdle
  const wall = performance.now() - started

  const perStep: Array<number> = []
  for (const [id, times] of finishes) {
    if (times.length !== options.steps) throw new Error(`session ${id} finished ${times.length} steps, expected ${options.steps}`)
    let previous = starts.get(id)!
    for (const at of times) {
      perStep.push(at - previous)
      previous = at
    }
  }
  return { wall, perStep, events, bytes }
}
