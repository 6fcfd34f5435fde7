/**
 * One running launcher (LauncherProgram.ts) as the runtime sees it: started, fed requests, its replies
 * dispatched to the commands waiting for them, and ended. When it ends under a command, that command
 * learns whether it had started (its process group is then killed) or not (it can be run elsewhere).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { killGroup } from "./DirectCommand.js"
import { encodeLauncherRequest, LAUNCHER_SCRIPT, type LauncherMessage, type LauncherRequest, readLauncherLine, WARM_SHELL } from "./LauncherProgram.js"
import { readiness } from "./Readiness.js"

export interface LaunchHandlers {
  readonly exit: (code: number | null, signal: string | null, stdout: string, stderr: string) => void
  /** The shell could not be started. */
  readonly error: (message: string) => void
  /** The launcher ended first; `started`: the command had begun (its group is killed), so it must not run again. */
  readonly lost: (started: boolean) => void
}

export interface LaunchedCommand {
  /** SIGKILL to its process group; it reports nothing after. */
  readonly kill: () => void
}

export interface LauncherContext {
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  /** Shells kept started ahead of the commands (the most commands that run at once). */
  readonly warm: number
}

interface Pending {
  readonly handlers: LaunchHandlers
  pid: number | undefined
}

export class LauncherProcess {
  readonly child: ChildProcess
  /** Resolves once the launcher took its context; rejects when it ended before. */
  readonly ready: Promise<void>
  private readonly pending = new Map<number, Pending>()
  private nextId = 0
  private ended = false
  private stderr = ""

  constructor(context: LauncherContext, private readonly onEnded: (reason: string) => void) {
    // Its own environment: the runtime's, without NODE_OPTIONS (an inspector port, a preload).
    const { NODE_OPTIONS: _, ...env } = process.env
    this.child = spawn(process.execPath, ["-e", LAUNCHER_SCRIPT, WARM_SHELL], { env, detached: true, stdio: ["pipe", "pipe", "pipe"] })
    const { promise, resolve: readyResolve, reject: readyReject } = readiness()
    this.ready = promise
    this.child.once("error", (error) => {
      readyReject(error)
      this.end(`it could not start: ${error.message}`)
    })
    // "close", not "exit": its last replies are read first.
    this.child.once("close", (code, signal) => {
      const reason = this.stderr.trim() || `it exited (${signal ?? `code ${code}`})`
      readyReject(new Error(reason))
      this.end(reason)
    })
    this.child.stderr!.setEncoding("utf8")
    this.child.stderr!.on("data", (chunk: string) => {
      if (this.stderr.length < 4_000) this.stderr += chunk
    })
    this.child.stdin!.on("error", () => {})
    let buffered = ""
    this.child.stdout!.setEncoding("utf8")
    this.child.stdout!.on("data", (chunk: string) => {
      buffered += chunk
      for (let newline = buffered.indexOf("\n"); newline !== -1; newline = buffered.indexOf("\n")) {
        const message = readLauncherLine(buffered.slice(0, newline))
        buffered = buffered.slice(newline + 1)
        if (message?.t === "ready") readyResolve()
        else if (message !== undefined) this.dispatch(message)
      }
    })
    this.send({ t: "init", cwd: context.cwd, env: context.env, warm: context.warm })
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  run(command: { readonly head: string; readonly input: string; readonly maxOutput: number }, handlers: LaunchHandlers): LaunchedCommand {
    const id = this.nextId++
    if (this.ended) {
      handlers.lost(false)
      return { kill: () => {} }
    }
    const entry: Pending = { handlers, pid: undefined }
    this.pending.set(id, entry)
    this.send({ t: "run", id, ...command })
    return {
      kill: () => {
        if (!this.pending.delete(id)) return
        killGroup(entry.pid)
        this.send({ t: "kill", id })
      }
    }
  }

  /** Ends its stdin: it kills what still runs and exits. */
  close(): void {
    this.child.stdin?.end()
  }

  private dispatch(message: Exclude<LauncherMessage, { readonly t: "ready" }>) {
    const entry = this.pending.get(message.id)
    if (entry === undefined) return
    if (message.t === "started") {
      entry.pid = message.pid
      return
    }
    this.pending.delete(message.id)
    if (message.t === "exit") entry.handlers.exit(message.code, message.signal, message.stdout, message.stderr)
    else entry.handlers.error(message.message)
  }

  private end(reason: string) {
    if (this.ended) return
    this.ended = true
    const lost = [...this.pending.values()]
    this.pending.clear()
    for (const entry of lost) {
      killGroup(entry.pid)
      entry.handlers.lost(entry.pid !== undefined)
    }
    this.child.stdin?.end()
    this.onEnded(reason)
  }

  private send(request: LauncherRequest) {
    if (!this.ended) this.child.stdin?.write(encodeLauncherRequest(request))
  }
}
