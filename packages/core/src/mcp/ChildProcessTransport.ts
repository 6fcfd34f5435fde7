import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { type ChildProcess, spawn } from "node:child_process"
import * as McpSdkLoader from "./McpSdkLoader.js"
import { answerId, megabytes, StdioLines } from "./StdioLines.js"

/** How to start a stdio server. */
export interface StdioSpec {
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly cwd: string
  readonly env: Record<string, string>
}

/** A line over the size limit that answered no request of ours was skipped (reported through `onerror`). */
export class SkippedLineError extends Error {
  override readonly name = "SkippedLineError"
}

type Id = string | number

/**
 * Newline-delimited JSON-RPC over a child's stdin/stdout, like the SDK's stdio transport, but
 * the server runs in its own process group so closing kills wrapper scripts' children too,
 * the tail of its stderr is kept to say why it died, and nothing the server writes can throw
 * out of the stream handlers (an exception there would end the whole process):
 * - a line that is not a JSON-RPC message is reported through `onerror` and skipped;
 * - a line over 10 MB is skipped; when it was the answer to a request, that request gets an
 *   error answer instead; before the server has answered `initialize` it ends the connection
 *   (`fault` says why), since no MCP server starts that way.
 */
export class ChildProcessTransport implements Transport {
  onclose?: (() => void) | undefined
  onerror?: ((error: Error) => void) | undefined
  onmessage?: ((message: JSONRPCMessage) => void) | undefined

  spawnError: Error | undefined
  /** Why the transport gave up on the server before it answered `initialize`. */
  fault: string | undefined
  private child: ChildProcess | undefined
  private readonly lines = new StdioLines()
  /** The ids of our requests still waiting for an answer. */
  private readonly pending = new Set<Id>()
  private answered = false
  private stderrTail = ""
  private exit: { readonly code: number | null; readonly signal: NodeJS.Signals | null } | undefined
  private finished = false
  private closing: Promise<void> | undefined
  private readonly done: Promise<void>
  private markDone: () => void = () => {}
  private readonly group = process.platform !== "win32"

  constructor(private readonly spec: StdioSpec) {
    this.done = new Promise((resolve) => (this.markDone = resolve))
  }

  get pid(): number | undefined {
    return this.child?.pid
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.spec.command, [...this.spec.args], {
        cwd: this.spec.cwd,
        env: this.spec.env,
        stdio: ["pipe", "pipe", "pipe"],
        detached: this.group,
        windowsHide: true
      })
      this.child = child
      let started = false
      child.once("spawn", () => {
        started = true
        resolve()
      })
      child.on("error", (error) => {
        if (!started) {
          this.spawnError = error
          reject(error)
        } else {
          this.report(error)
        }
      })
      child.once("exit", (code, signal) => {
        this.exit = { code, signal }
        // A grandchild may keep stdout open; do not wait for it to report the death.
        setTimeout(() => this.finish(), 100).unref()
      })
      child.once("close", (code, signal) => {
        this.exit ??= { code, signal }
        this.finish()
      })
      child.stdin?.on("error", (error) => this.report(error))
      child.stdout?.on("data", (chunk: Buffer) => this.guard(() => this.read(chunk)))
      child.stderr?.on("data", (chunk: Buffer) => {
        this.stderrTail = (this.stderrTail + chunk.toString("utf8")).slice(-2_000)
      })
    })
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin
      if (!stdin || this.finished || this.fault !== undefined) return reject(new Error("Not connected"))
      if ("method" in message) {
        if ("id" in message) this.pending.add(message.id)
        else if (message.method === "notifications/cancelled") {
          const cancelled = cancelledId(message.params)
          if (cancelled !== undefined) this.pending.delete(cancelled)
        }
      }
      if (stdin.write(McpSdkLoader.sdk().serializeMessage(message))) resolve()
      else stdin.once("drain", resolve)
    })
  }

  /** Why the process ended, with the end of what it wrote to stderr. */
  describeExit(): string {
    const exit = this.exit
    const how = exit === undefined
      ? "the server closed the connection"
      : exit.signal
      ? `the server process was killed by ${exit.signal}`
      : `the server process exited with code ${exit.code}`
    const stderr = this.stderrTail.trim()
    return stderr ? `${how}: ${stderr.split("\n").slice(-5).join("\n")}` : how
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown()
    return this.closing
  }

  private read(chunk: Buffer) {
    for (const event of this.lines.push(chunk)) {
      if (this.fault !== undefined || this.finished) return
      switch (event._tag) {
        case "Line":
          this.receive(event.text)
          break
        case "Overflow":
          if (!this.answered) {
            this.fault = `the server wrote more than ${megabytes(event.limit)} to stdout without a line break ` +
              "before answering initialize (stdout must carry only JSON-RPC messages, one per line)"
            void this.close()
          }
          break
        case "Oversized":
          this.oversized(event.bytes, answerId(event.head, event.tail))
          break
      }
    }
  }

  private receive(line: string) {
    let message: JSONRPCMessage
    try {
      message = McpSdkLoader.sdk().deserializeMessage(line)
    } catch (error) {
      return this.report(error)
    }
    this.deliver(message)
  }

  /** An oversized line: the error answer to the request it answered, else a report. */
  private oversized(bytes: number, id: Id | undefined) {
    if (id !== undefined && this.pending.has(id)) {
      const sdk = McpSdkLoader.sdk()
      this.deliver({
        jsonrpc: "2.0",
        id,
        error: {
          code: sdk.ErrorCode.InternalError,
          message: `the answer was ${megabytes(bytes)} on one line, more than the ${
            megabytes(this.lines.limit)
          } one message may take; it was dropped`
        }
      })
    } else {
      this.report(
        new SkippedLineError(
          `skipped a line of ${megabytes(bytes)} on stdout, more than the ${megabytes(this.lines.limit)} one message may take`
        )
      )
    }
  }

  /**
   * The SDK runs notification handlers a microtask later but settles a request at once, so a
   * progress report read in the same chunk as its result would find the request gone. A
   * response is delivered after the handlers of what came before it have run.
   */
  private deliver(message: JSONRPCMessage) {
    if ("id" in message && ("result" in message || "error" in message)) {
      if (message.id !== undefined) this.pending.delete(message.id)
      this.answered = true
      setImmediate(() => this.guard(() => this.onmessage?.(message)))
    } else {
      this.guard(() => this.onmessage?.(message))
    }
  }

  /** Runs a handler of the stream; what it throws goes to `onerror`, never up the event loop. */
  private guard(run: () => void) {
    try {
      run()
    } catch (error) {
      this.report(error)
    }
  }

  private report(error: unknown) {
    try {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)))
    } catch {
      // An error handler that throws has nowhere left to report to.
    }
  }

  private finish() {
    if (this.finished) return
    this.finished = true
    this.lines.clear()
    this.markDone()
    // After the responses still on their way to the client (see `deliver`).
    setImmediate(() => this.guard(() => this.onclose?.()))
  }

  private async shutdown() {
    const child = this.child
    if (!child || child.pid === undefined) return
    const pid = child.pid
    const wait = (ms: number) =>
      Promise.race([this.done.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref())])
    const kill = (signal: NodeJS.Signals) => {
      try {
        if (this.group) process.kill(-pid, signal)
        else child.kill(signal)
      } catch {
        // already gone
      }
    }
    try {
      child.stdin?.end()
    } catch {
      // ignore
    }
    if (this.exit === undefined && !(await wait(200))) {
      kill("SIGTERM")
      if (!(await wait(2_000))) {
        kill("SIGKILL")
        await wait(1_000)
      }
    }
    // Whatever the server left behind in its process group (children of a wrapper script).
    if (this.group && groupAlive(pid)) {
      kill("SIGTERM")
      await new Promise((resolve) => setTimeout(resolve, 200))
      if (groupAlive(pid)) kill("SIGKILL")
    }
    this.finish()
  }
}

const cancelledId = (params: unknown): Id | undefined => {
  if (typeof params !== "object" || params === null || !("requestId" in params)) return undefined
  const id = params.requestId
  return typeof id === "string" || typeof id === "number" ? id : undefined
}

const groupAlive = (pgid: number) => {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}
