/**
 * A kept sandbox: one bubblewrap sandbox that outlives its command, with the supervisor
 * (Supervisor.ts) inside starting each command on request. Made for one sandbox shape (its mounts and
 * network), retired after an idle time or when its layer closes, and replaced when it dies. The
 * state of one instance is this object's; the pool of instances is the Sandbox layer's.
 */
import { type ChildProcess, spawn } from "node:child_process"
import type { Readable, Writable } from "node:stream"
import { readiness } from "../process/Readiness.js"
import { STATUS_FD, SYNC_FD } from "./Bwrap.js"
import { encodeRequest, readSupervisorLine, type SupervisorMessage, type SupervisorRequest } from "./Supervisor.js"

/** What a command started in a kept sandbox reports, as a child process would. */
export interface KeptHandlers {
  readonly output: (chunk: string) => void
  readonly exit: (code: number | null, signal: NodeJS.Signals | null) => void
  /** Its output has ended. */
  readonly close: () => void
  /** It could not start, or the sandbox ended under it. */
  readonly error: (error: Error) => void
}

export interface KeptCommand {
  /** SIGTERM to the command's process group, SIGKILL after `graceMs`; resolves once the group is gone. */
  readonly stop: (graceMs: number) => Promise<void>
  /** Stops reading its output (background jobs may hold it) and forgets it. */
  readonly detach: () => void
}

/** How long a kept sandbox waits for the next command by default: a pause to read or think, not a lunch break. */
export const DEFAULT_KEEP_IDLE_MS = 120_000

/**
 * `keepIdleMs` from the options, else from `AGENT_SANDBOX_KEEP_MS` when that is a whole number (0: no kept
 * sandbox), else the default.
 */
export const keepIdleMsOf = (options: { readonly keepIdleMs?: number }, env: Readonly<Record<string, string | undefined>>): number => {
  if (options.keepIdleMs !== undefined) return Math.max(0, options.keepIdleMs)
  const text = env.AGENT_SANDBOX_KEEP_MS?.trim() ?? ""
  const value = Number(text)
  return text !== "" && Number.isInteger(value) && value >= 0 ? value : DEFAULT_KEEP_IDLE_MS
}

export type KeptState = "starting" | "ready" | "retired" | "ended"

/** How long a retiring sandbox is waited for when its layer closes (its background jobs may keep it longer). */
const CLOSE_WAIT_MS = 2_000
/** A supervisor not up by then is taken as one that cannot start (the caller falls back to a bubblewrap per command). */
const START_TIMEOUT_MS = 30_000

export class KeptSandbox {
  state: KeptState = "starting"
  /** Resolves once the supervisor is up; rejects with what bubblewrap said when it did not come up. */
  readonly ready: Promise<void>
  /** Resolves when bubblewrap has exited: every process of the sandbox has ended. */
  readonly gone: Promise<void>
  private readonly child: ChildProcess
  private readonly commands = new Map<number, KeptHandlers>()
  private readonly stopping = new Map<number, Array<() => void>>()
  private nextId = 0
  /** Launches handed out whose command has not started yet: the sandbox is not idle while any is. */
  private reserved = 0
  private idleTimer: NodeJS.Timeout | undefined
  /** The host pid of bubblewrap's init: killing it ends every process of the sandbox. */
  private initPid: number | undefined
  private stderr = ""

  constructor(
    file: string,
    args: ReadonlyArray<string>,
    env: Readonly<Record<string, string>>,
    private readonly idleMs: number,
    /** Called once when it stops taking commands (retired or ended): the pool forgets it. */
    private readonly onRetired: () => void
  ) {
    this.child = spawn(file, [...args], { env, detached: true, stdio: ["pipe", "pipe", "pipe", "pipe", "pipe"] })
    const { promise, resolve: readyResolve, reject: readyReject } = readiness()
    this.ready = promise
    const startTimer = setTimeout(() => {
      readyReject(new Error(`the supervisor did not start within ${START_TIMEOUT_MS} ms`))
      this.kill()
      this.end("it did not start")
    }, START_TIMEOUT_MS)
    startTimer.unref()
    void this.ready.then(() => clearTimeout(startTimer), () => clearTimeout(startTimer))
    this.gone = new Promise((resolve) => this.child.once("close", () => resolve()))
    this.child.once("error", (error) => {
      readyReject(error)
      this.end(`bubblewrap could not start: ${error.message}`)
    })
    this.child.once("exit", () => {
      readyReject(new Error(this.stderr.trim() || "bubblewrap exited before the sandbox was up"))
      this.end("bubblewrap exited")
    })
    this.child.stderr!.setEncoding("utf8")
    this.child.stderr!.on("data", (chunk: string) => {
      if (this.stderr.length < 4_000) this.stderr += chunk
    })
    this.readLines(this.child.stdout!, (line) => {
      const message = readSupervisorLine(line)
      if (message?.t === "ready") {
        if (this.state === "starting") this.state = "ready"
        readyResolve()
        this.scheduleIdle()
      } else if (message !== undefined) this.dispatch(message)
    })
    this.readLines(this.child.stdio[STATUS_FD] as Readable, (line) => {
      const pid = /"child-pid"\s*:\s*(\d+)/.exec(line)?.[1]
      if (pid !== undefined) this.initPid = Number(pid)
      // The supervisor's own exit: nothing more can start or be followed in this sandbox.
      if (/"exit-code"/.test(line)) this.end("its supervisor exited")
    })
    // Held open by bubblewrap while any process of the sandbox lives; only read, so its end can come.
    ;(this.child.stdio[SYNC_FD] as Readable).resume()
    ;(this.child.stdin as Writable).on("error", () => {})
  }

  /** A command will start soon: no idle close until `unreserve`. */
  reserve(): void {
    this.reserved++
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.idleTimer = undefined
  }

  unreserve(): void {
    this.reserved = Math.max(0, this.reserved - 1)
    this.scheduleIdle()
  }

  /** Starts `argv` in the sandbox; its events go to `handlers`. */
  run(request: { readonly argv: ReadonlyArray<string>; readonly cwd: string; readonly env: Readonly<Record<string, string>> }, handlers: KeptHandlers): KeptCommand {
    const id = this.nextId++
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.idleTimer = undefined
    if (this.state !== "ready") {
      handlers.error(new Error("the kept sandbox is no longer running"))
      return { stop: () => Promise.resolve(), detach: () => {} }
    }
    this.commands.set(id, handlers)
    this.send({ t: "run", id, argv: request.argv, cwd: request.cwd, env: request.env })
    return {
      stop: (graceMs) =>
        new Promise<void>((resolve) => {
          if (this.state === "ended") return resolve()
          const waiting = this.stopping.get(id) ?? []
          waiting.push(resolve)
          this.stopping.set(id, waiting)
          if (waiting.length === 1) this.send({ t: "stop", id, graceMs })
        }),
      detach: () => {
        if (this.state !== "ended") this.send({ t: "detach", id })
        this.commands.delete(id)
        this.scheduleIdle()
      }
    }
  }

  /** Takes no more commands: the supervisor exits once its stdin ends; bubblewrap when the last process of the sandbox has. */
  retire(): void {
    if (this.state === "starting" || this.state === "ready") {
      this.state = "retired"
      this.onRetired()
    }
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.child.stdin?.end()
  }

  /** Retires it and waits a moment for it to be gone; a sandbox whose commands still run is ended. */
  async close(): Promise<void> {
    if (this.commands.size > 0) this.kill()
    this.retire()
    let timer: NodeJS.Timeout | undefined
    await Promise.race([this.gone, new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS)))])
    clearTimeout(timer)
  }

  private kill() {
    try {
      if (this.initPid !== undefined) process.kill(this.initPid, "SIGKILL")
      else this.child.kill("SIGKILL")
    } catch {
      // Already gone.
    }
  }

  private end(reason: string) {
    if (this.state === "ended") return
    const wasTaking = this.state === "starting" || this.state === "ready"
    this.state = "ended"
    if (wasTaking) this.onRetired()
    if (this.idleTimer) clearTimeout(this.idleTimer)
    // Commands that were running can no longer be followed or stopped: end them with the sandbox.
    if (this.commands.size > 0) this.kill()
    const error = new Error(`the kept sandbox ended (${reason})`)
    for (const handlers of this.commands.values()) handlers.error(error)
    this.commands.clear()
    for (const waiting of this.stopping.values()) waiting.forEach((resolve) => resolve())
    this.stopping.clear()
    this.child.stdin?.end()
  }

  private dispatch(message: Exclude<SupervisorMessage, { readonly t: "ready" }>) {
    if (message.t === "stopped") {
      this.stopping.get(message.id)?.forEach((resolve) => resolve())
      this.stopping.delete(message.id)
      return
    }
    const handlers = this.commands.get(message.id)
    if (handlers === undefined) return
    if (message.t === "out") handlers.output(message.data)
    else if (message.t === "exit") handlers.exit(message.code, message.signal as NodeJS.Signals | null)
    else {
      this.commands.delete(message.id)
      if (message.t === "close") handlers.close()
      else handlers.error(new Error(message.message))
      this.scheduleIdle()
    }
  }

  private scheduleIdle() {
    if (this.state !== "ready" || this.commands.size > 0 || this.reserved > 0 || this.idleTimer !== undefined) return
    this.idleTimer = setTimeout(() => this.retire(), this.idleMs)
    this.idleTimer.unref()
  }

  private send(request: SupervisorRequest) {
    this.child.stdin?.write(encodeRequest(request))
  }

  private readLines(stream: Readable, onLine: (line: string) => void) {
    let pending = ""
    stream.setEncoding("utf8")
    stream.on("data", (chunk: string) => {
      pending += chunk
      for (let newline = pending.indexOf("\n"); newline !== -1; newline = pending.indexOf("\n")) {
        const line = pending.slice(0, newline)
        pending = pending.slice(newline + 1)
        onLine(line)
      }
    })
    stream.on("error", () => {})
  }
}

/** How long `retireHolders` waits for the sandboxes to end (a command of theirs may still run). */
const VACATE_WAIT_MS = 5_000

/**
 * Retires the kept sandboxes (with the placeholders each holds) that hold `file` and waits for them to
 * end, a few seconds at most: their placeholders are then let go (the Sandbox layer removes one unless
 * another process's sandbox holds it too).
 */
export const retireHolders = async (kept: ReadonlyMap<KeptSandbox, ReadonlyArray<string>>, file: string): Promise<void> => {
  const holders = [...kept].filter(([, paths]) => paths.includes(file)).map(([sandbox]) => sandbox)
  if (holders.length === 0) return
  holders.forEach((sandbox) => sandbox.retire())
  let timer: NodeJS.Timeout | undefined
  await Promise.race([
    Promise.all(holders.map((sandbox) => sandbox.gone)),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, VACATE_WAIT_MS)))
  ])
  clearTimeout(timer)
}
