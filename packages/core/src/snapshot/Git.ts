import { Data, Effect, type Scope } from "effect"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * Runs git against the snapshot store only: GIT_DIR is the store, GIT_WORK_TREE the project, and
 * nothing of the user's environment or configuration that could redirect git (GIT_INDEX_FILE,
 * GIT_OBJECT_DIRECTORY, global hooks or filters) gets through. The user's own repository is never
 * named, so its index, stash, refs and hooks cannot be touched.
 */
export interface GitContext {
  readonly gitDir: string
  readonly workTree: string
  readonly indexFile: string
  /** HOME and XDG_CONFIG_HOME, so the user's global ignore file still applies. */
  readonly home: string | undefined
  readonly xdgConfigHome: string | undefined
}

export class GitFailure extends Data.TaggedError("GitFailure")<{
  readonly args: ReadonlyArray<string>
  readonly code: number | null
  readonly stderr: string
}> {
  override get message() {
    const reason = this.code === null ? "could not run git" : `git exited with code ${this.code}`
    return `${reason} (git ${this.args.slice(0, 3).join(" ")}): ${this.stderr.trim().split("\n").slice(-3).join(" ")}`
  }
}

const environment = (context: GitContext): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    LANG: "C",
    LC_ALL: "C",
    GIT_DIR: context.gitDir,
    GIT_WORK_TREE: context.workTree,
    GIT_INDEX_FILE: context.indexFile,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    GIT_NO_REPLACE_OBJECTS: "1",
    GIT_AUTO_GC: "0"
  }
  if (context.home) env.HOME = context.home
  if (context.xdgConfigHome) env.XDG_CONFIG_HOME = context.xdgConfigHome
  return env
}

/** Settings on every call: no hooks, no fsmonitor, and the store may live anywhere. */
const GLOBAL_ARGS = ["-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"]

export interface RunOptions {
  readonly input?: string | Buffer
  /** Sees stdout as it arrives; return false to stop git early (the result is then what arrived). */
  readonly onStdout?: (chunk: Buffer) => boolean
  /** Another index file for this call. */
  readonly indexFile?: string
}

/** Runs one git command against the store; a non-zero exit is a GitFailure. */
export type Runner = (args: ReadonlyArray<string>, options?: RunOptions) => Effect.Effect<Buffer, GitFailure>

/** Runs one git command in the store and returns its stdout; a non-zero exit is a GitFailure. */
export const run = (context: GitContext, args: ReadonlyArray<string>, options: RunOptions = {}) =>
  Effect.async<Buffer, GitFailure>((resume) => {
    const child = spawn("git", [...GLOBAL_ARGS, ...args], {
      cwd: context.workTree,
      env: { ...environment(context), ...(options.indexFile ? { GIT_INDEX_FILE: options.indexFile } : {}) },
      stdio: ["pipe", "pipe", "pipe"]
    })
    const out: Array<Buffer> = []
    const err: Array<Buffer> = []
    let stopped = false
    let done = false
    const finish = (effect: Effect.Effect<Buffer, GitFailure>) => {
      if (done) return
      done = true
      resume(effect)
    }
    child.stdout.on("data", (chunk: Buffer) => {
      if (stopped) return
      out.push(chunk)
      if (options.onStdout && !options.onStdout(chunk)) {
        stopped = true
        child.kill("SIGKILL")
      }
    })
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk))
    child.on("error", (error) => finish(Effect.fail(new GitFailure({ args, code: null, stderr: error.message }))))
    child.on("close", (code) => {
      if (stopped || code === 0) finish(Effect.succeed(Buffer.concat(out)))
      else finish(Effect.fail(new GitFailure({ args, code, stderr: Buffer.concat(err).toString("utf8") })))
    })
    child.stdin.on("error", () => undefined)
    child.stdin.end(options.input ?? "")
    return Effect.sync(() => {
      if (!done) child.kill("SIGKILL")
    })
  })

/** Splits NUL-terminated output into strings. */
export const splitZ = (output: Buffer): Array<string> => {
  const text = output.toString("utf8")
  const parts = text.split("\0")
  if (parts.at(-1) === "") parts.pop()
  return parts
}

/**
 * Reads objects by id with one `git cat-file --batch` (loose and packed alike). Missing objects
 * are absent from the result.
 */
export const readObjects = (git: Runner, ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const result = new Map<string, Buffer>()
    const unique = [...new Set(ids)]
    if (unique.length === 0) return result
    const output = yield* git(["cat-file", "--batch"], { input: unique.join("\n") + "\n" })
    let offset = 0
    for (const id of unique) {
      const newline = output.indexOf(10, offset)
      if (newline < 0) break
      const header = output.subarray(offset, newline).toString("utf8")
      offset = newline + 1
      if (header.endsWith(" missing")) continue
      const size = Number.parseInt(header.split(" ")[2] ?? "", 10)
      if (!Number.isFinite(size)) break
      result.set(id, output.subarray(offset, offset + size))
      offset += size + 1
    }
    return result
  })

// --- a resident shell ---------------------------------------------------------------------------

const quote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`

/** One `sh` that runs git commands for us, one at a time. */
class Shell {
  private child: ChildProcessWithoutNullStreams | undefined
  private current:
    | {
      readonly token: Buffer
      readonly errToken: string
      readonly out: Array<Buffer>
      tail: Buffer
      err: string
      code: number | undefined
      errDone: boolean
      readonly onStdout: ((chunk: Buffer) => boolean) | undefined
      readonly done: (result: { readonly output: Buffer; readonly code: number | null; readonly stderr: string; readonly stopped: boolean }) => void
    }
    | undefined

  constructor(private readonly context: GitContext, private readonly scratch: string) {}

  private start(): ChildProcessWithoutNullStreams {
    if (this.child) return this.child
    // Its own process group, so a command stopped early dies with the shell.
    const child = spawn("/bin/sh", [], { cwd: this.context.workTree, env: environment(this.context), stdio: "pipe", detached: true })
    child.stdout.on("data", (chunk: Buffer) => this.onOut(chunk))
    child.stderr.on("data", (chunk: Buffer) => this.onErr(chunk))
    child.stdin.on("error", () => undefined)
    const gone = () => {
      if (this.child !== child) return
      this.child = undefined
      const pending = this.current
      this.current = undefined
      pending?.done({ output: Buffer.concat(pending.out), code: null, stderr: `${pending.err}\nthe git shell exited`, stopped: false })
    }
    child.on("exit", gone)
    child.on("error", gone)
    this.child = child
    return child
  }

  private onOut(chunk: Buffer) {
    const command = this.current
    if (!command || command.code !== undefined) return
    // The end marker is "\n<token> <code>\n" after git's output; look for it across chunk edges.
    const joined = Buffer.concat([command.tail, chunk])
    const at = joined.indexOf(command.token)
    if (at < 0) {
      const keep = Math.max(0, joined.length - command.token.length - 16)
      if (keep > 0) {
        const emitted = joined.subarray(0, keep)
        command.out.push(emitted)
        if (command.onStdout && !command.onStdout(emitted)) return this.stop()
      }
      command.tail = joined.subarray(keep)
      return
    }
    const end = joined.indexOf(10, at + command.token.length)
    if (end < 0) {
      command.tail = joined
      return
    }
    const emitted = joined.subarray(0, at)
    if (emitted.length > 0) {
      command.out.push(emitted)
      if (command.onStdout && !command.onStdout(emitted)) return this.stop()
    }
    command.code = Number(joined.subarray(at + command.token.length, end).toString("utf8").trim())
    this.settle()
  }

  private onErr(chunk: Buffer) {
    const command = this.current
    if (!command) return
    command.err += chunk.toString("utf8")
    const at = command.err.indexOf(command.errToken)
    if (at >= 0) {
      command.err = command.err.slice(0, at)
      command.errDone = true
      this.settle()
    }
  }

  private settle() {
    const command = this.current
    if (!command || command.code === undefined || !command.errDone) return
    this.current = undefined
    command.done({ output: Buffer.concat(command.out), code: command.code, stderr: command.err, stopped: false })
  }

  /** Kills the shell and whatever it runs; the next command starts a new one. */
  stop() {
    const child = this.child
    const command = this.current
    this.child = undefined
    this.current = undefined
    if (child?.pid) {
      try {
        process.kill(-child.pid, "SIGKILL")
      } catch {
        child.kill("SIGKILL")
      }
    }
    command?.done({ output: Buffer.concat(command.out), code: null, stderr: command.err, stopped: true })
  }

  run(args: ReadonlyArray<string>, options: RunOptions) {
    return Effect.async<Buffer, GitFailure>((resume) => {
      const id = randomBytes(12).toString("hex")
      const input = options.input !== undefined && options.input.length > 0 ? path.join(this.scratch, `shell-input-${process.pid}-${id}`) : undefined
      try {
        if (input) fs.writeFileSync(input, options.input!)
      } catch (error) {
        resume(Effect.fail(new GitFailure({ args, code: null, stderr: (error as Error).message })))
        return
      }
      const token = `@@agent-git-${id}@@`
      const errToken = `@@agent-git-err-${id}@@\n`
      const envPrefix = options.indexFile ? `GIT_INDEX_FILE=${quote(options.indexFile)} ` : ""
      const line = `${envPrefix}git ${[...GLOBAL_ARGS, ...args].map(quote).join(" ")} < ${input ? quote(input) : "/dev/null"}; ` +
        `printf '\\n%s %d\\n' ${quote(token)} $?; printf '%s\\n' ${quote(errToken.trimEnd())} >&2\n`
      let finished = false
      this.current = {
        token: Buffer.from(`\n${token} `),
        errToken,
        out: [],
        tail: Buffer.alloc(0),
        err: "",
        code: undefined,
        errDone: false,
        onStdout: options.onStdout,
        done: (result) => {
          finished = true
          if (input) fs.rmSync(input, { force: true })
          if (result.stopped || result.code === 0) resume(Effect.succeed(result.output))
          else resume(Effect.fail(new GitFailure({ args, code: result.code, stderr: result.stderr })))
        }
      }
      this.start().stdin.write(line)
      return Effect.sync(() => {
        if (!finished) this.stop()
      })
    })
  }
}

/**
 * Runs git through up to two resident shells instead of starting every git from this process:
 * forking a large Node process costs far more than git's own work on a small command.
 */
export const shellRunner = (context: GitContext, scratch: string): Effect.Effect<Runner, never, Scope.Scope> =>
  Effect.gen(function*() {
    const idle: Array<Shell> = []
    const all: Array<Shell> = []
    const permits = yield* Effect.makeSemaphore(2)
    yield* Effect.addFinalizer(() => Effect.sync(() => all.forEach((shell) => shell.stop())))
    const acquire = Effect.sync(() => {
      const shell = idle.pop() ?? new Shell(context, scratch)
      if (!all.includes(shell)) all.push(shell)
      return shell
    })
    return (args, options = {}) =>
      permits.withPermits(1)(
        Effect.acquireUseRelease(acquire, (shell) => shell.run(args, options), (shell) => Effect.sync(() => idle.push(shell)))
      )
  })
