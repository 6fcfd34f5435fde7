import { Data, Effect } from "effect"
import { spawn } from "node:child_process"

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
}

/** Runs one git command in the store and returns its stdout; a non-zero exit is a GitFailure. */
export const run = (context: GitContext, args: ReadonlyArray<string>, options: RunOptions = {}) =>
  Effect.async<Buffer, GitFailure>((resume) => {
    const child = spawn("git", [...GLOBAL_ARGS, ...args], {
      cwd: context.workTree,
      env: environment(context),
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
export const readObjects = (context: GitContext, ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const result = new Map<string, Buffer>()
    const unique = [...new Set(ids)]
    if (unique.length === 0) return result
    const output = yield* run(context, ["cat-file", "--batch"], { input: unique.join("\n") + "\n" })
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
