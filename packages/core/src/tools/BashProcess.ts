/**
 * The bash tool's processes: a command started (a detached shell, or a command in a kept sandbox),
 * its output as it comes, its end, and stopping its whole process group.
 */
import { Deferred, Effect, Exit } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import type { Launch } from "../sandbox/Sandbox.js"
import type { KeptCommand } from "../sandbox/KeptSandbox.js"
import { readStatusLine, STATUS_FD, SYNC_FD } from "../sandbox/Bwrap.js"
import * as Tool from "../tool/Tool.js"

const TOOL = "bash"

/** Between SIGTERM and SIGKILL for a process group that will not stop. */
export const KILL_GRACE_MS = 3_000
/**
 * Output kept in memory. A command that prints more keeps only its most recent output; the
 * dropped part is noted at the top of what is saved.
 */
export const MAX_BUFFER_CHARS = 16 * 1024 * 1024
/** After the shell exits, how long to wait for background children to let go of its pipes. */
const DRAIN_MS = 200
const POLL_MS = 25
// ---------------------------------------------------------------------------------------------
// Output: stdout and stderr interleaved in arrival order.

export class OutputBuffer {
  private chunks: Array<string> = []
  private size = 0
  private dropped = 0
  /** Bumped on every append, so the publisher knows whether anything is new. */
  version = 0

  append = (chunk: string) => {
    if (chunk.length === 0) return
    this.chunks.push(chunk)
    this.size += chunk.length
    this.version++
    while (this.size > MAX_BUFFER_CHARS && this.chunks.length > 1) {
      const first = this.chunks.shift()!
      this.size -= first.length
      this.dropped += first.length
    }
  }

  /** The last `limit` characters. */
  tail(limit: number): string {
    const parts: Array<string> = []
    let length = 0
    for (let index = this.chunks.length - 1; index >= 0 && length < limit; index--) {
      const chunk = this.chunks[index]!
      parts.push(chunk)
      length += chunk.length
    }
    const joined = parts.reverse().join("")
    return joined.length > limit ? joined.slice(joined.length - limit) : joined
  }

  text(): string {
    const body = this.chunks.join("")
    return this.dropped > 0 ? `[${this.dropped} characters of earlier output were not kept]\n${body}` : body
  }
}

// ---------------------------------------------------------------------------------------------
// Process groups. The shell is started detached, so it leads its own group and every process
// it starts (pipes, background jobs, their children) can be signalled at once.

const signalGroup = (pgid: number, signal: NodeJS.Signals | 0): boolean => {
  try {
    process.kill(-pgid, signal)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const waitGroupGone = (pgid: number, ms: number) =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    while (signalGroup(pgid, 0)) {
      if (Date.now() >= deadline) return false
      yield* Effect.sleep(POLL_MS)
    }
    return true
  })

export interface ShellExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export interface Running {
  /** The shell (or bubblewrap around it); absent when it runs in a kept sandbox. */
  readonly child?: ChildProcess
  /** The command in a kept sandbox, whose supervisor signals its group. */
  readonly kept?: KeptCommand
  readonly output: OutputBuffer
  /** Completes when the shell has exited and its output has drained (or failed to start). */
  readonly done: Deferred.Deferred<ShellExit, Error>
  /** When SIGTERM went to the group, so a second termination does not restart the grace period. */
  terminatedAt?: number
  /** How it was started (sandboxed or not), and what to free when it has exited. */
  readonly launch: Launch
  /** The sandbox came up (always true unsandboxed). */
  ready: boolean
}

/**
 * SIGTERM to the whole group, SIGKILL once `KILL_GRACE_MS` have passed since the SIGTERM if
 * anything in it is still alive. Safe to call twice: an interrupted termination is resumed.
 */
export const terminate = (running: Running) =>
  Effect.gen(function*() {
    const kept = running.kept
    if (kept !== undefined) return yield* Effect.promise(() => kept.stop(KILL_GRACE_MS))
    const pgid = running.child?.pid
    if (pgid === undefined) return
    if (running.terminatedAt === undefined) {
      running.terminatedAt = Date.now()
      if (!signalGroup(pgid, "SIGTERM")) return
    }
    if (yield* waitGroupGone(pgid, running.terminatedAt + KILL_GRACE_MS - Date.now())) return
    signalGroup(pgid, "SIGKILL")
    yield* waitGroupGone(pgid, 1_000)
  })

/**
 * When the command has ended: once its output has closed, or `DRAIN_MS` after its shell exited
 * (background jobs may keep the pipes open; the command is not waited for them).
 */
const endings = (done: Deferred.Deferred<ShellExit, Error>) => {
  let exited: ShellExit | undefined
  let drain: NodeJS.Timeout | undefined
  const finish = (exit: Exit.Exit<ShellExit, Error>) => {
    if (drain) clearTimeout(drain)
    Deferred.unsafeDone(done, exit)
  }
  return {
    finish,
    closed: (fallback: ShellExit) => finish(Exit.succeed(exited ?? fallback)),
    shellExited: (exit: ShellExit) => {
      if (exited !== undefined) return
      exited = exit
      // The timer's callback runs before the loop's I/O phase, so output already in the pipes (a
      // busy process may not have read it yet) is read first: finish from the check phase that follows.
      drain = setTimeout(() => setImmediate(() => finish(Exit.succeed(exited!))), DRAIN_MS)
    }
  }
}

/** Starts the command in a kept sandbox: its supervisor reports what a child process would. */
const startKept = (launch: Launch, run: NonNullable<Launch["kept"]>["run"]): Effect.Effect<Running> =>
  Effect.gen(function*() {
    const done = yield* Deferred.make<ShellExit, Error>()
    const output = new OutputBuffer()
    const ending = endings(done)
    const kept = run({
      output: output.append,
      exit: (code, signal) => ending.shellExited({ code, signal }),
      close: () => ending.closed({ code: null, signal: null }),
      error: (error) => ending.finish(Exit.fail(error))
    })
    const running: Running = { kept, output, done, launch, ready: true }
    return running
  })

export const start = (launch: Launch, cwd: string) =>
  Effect.gen(function*() {
    if (launch.kept !== undefined) return yield* startKept(launch, launch.kept.run)
    const done = yield* Deferred.make<ShellExit, Error>()
    const running = yield* Effect.try({
      try: (): Running => {
        const output = new OutputBuffer()
        const child = spawn(launch.file, [...launch.args], {
          cwd,
          env: launch.env,
          detached: true,
          stdio: launch.syncFd
            ? ["ignore", "pipe", "pipe", "pipe", "pipe"]
            : launch.statusFd
            ? ["ignore", "pipe", "pipe", "pipe"]
            : ["ignore", "pipe", "pipe"]
        })
        child.stdout!.setEncoding("utf8")
        child.stderr!.setEncoding("utf8")
        child.stdout!.on("data", output.append)
        child.stderr!.on("data", output.append)
        const { closed, finish, shellExited } = endings(done)
        const running: Running = { child, output, done, launch, ready: !launch.statusFd }
        // The sandbox says when it is up and when the command's shell has exited; the sandbox
        // itself lives on while the command's background jobs do.
        const status = child.stdio[STATUS_FD] as NodeJS.ReadableStream | undefined
        if (launch.statusFd && status) {
          let pending = ""
          status.setEncoding("utf8")
          status.on("data", (chunk: string) => {
            pending += chunk
            for (let newline = pending.indexOf("\n"); newline !== -1; newline = pending.indexOf("\n")) {
              const line = readStatusLine(pending.slice(0, newline))
              pending = pending.slice(newline + 1)
              if (line === undefined) continue
              running.ready = true
              if (line.exit !== undefined) shellExited({ code: line.exit, signal: null })
            }
          })
          status.on("error", () => {})
        }
        child.once("error", (error) => finish(Exit.fail(error)))
        child.once("exit", (code, signal) => shellExited({ code, signal }))
        child.once("close", (code: number | null, signal: NodeJS.Signals | null) => closed({ code, signal }))
        return running
      },
      catch: (error) =>
        new Tool.ToolExecutionError({ tool: TOOL, detail: `Could not start ${launch.file}: ${String(error)}` })
    }).pipe(Effect.tapError(() => launch.release))
    yield* launch.started(running.child!)
    return running
  })

/** Stops reading; ends the group unless the shell finished on its own. */
export const release = (running: Running, killGroup: boolean) =>
  Effect.gen(function*() {
    if (killGroup) yield* terminate(running)
    running.kept?.detach()
    // Not the sandbox's sync fd: the launch watches it to free what the sandbox holds once it has ended.
    running.child?.stdio.forEach((stream, fd) => fd === SYNC_FD && running.launch.syncFd ? undefined : stream?.destroy())
  })

