import { MockOpenAIServer, TestInstance } from "@agent/testing"
import { afterAll, beforeAll } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"

/** The built and bundled CLI, as a user runs it (`pnpm test` builds before testing). */
export const bin = fileURLToPath(new URL("../dist/bundle/bin.js", import.meta.url))

export interface Result {
  readonly code: number | null
  /** The signal that ended the process, when one did. */
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

export interface Served {
  readonly child: ChildProcess
  readonly url: string
  readonly stderr: () => string
  readonly exited: Promise<number | null>
}

/** `agent serve` as a user starts it; resolves once it printed its address. Killed when the scope ends. */
export const serve = (box: TestInstance.Sandbox, args: ReadonlyArray<string> = [], env: Record<string, string> = {}) =>
  Effect.acquireRelease(
    Effect.async<Served>((resume) => {
      const child = spawn(process.execPath, [bin, "serve", "--port", "0", ...args], {
        cwd: box.instance.directory,
        env: { ...box.instance.env, ...env } as NodeJS.ProcessEnv,
        stdio: ["ignore", "pipe", "pipe"]
      })
      let stdout = ""
      let stderr = ""
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
      child.stdout!.on("data", (chunk: Buffer) => {
        stdout += chunk.toString()
        const match = /listening on (http:\/\/\S+)/.exec(stdout)
        if (match) resume(Effect.succeed({ child, url: match[1]!, stderr: () => stderr, exited }))
      })
      child.on("exit", (code) => resume(Effect.die(new Error(`agent serve exited with ${code}: ${stderr}`))))
    }),
    (served) => Effect.sync(() => served.child.kill("SIGKILL"))
  )

export interface AgentOptions {
  /** Text to pipe in; "open" leaves stdin open and empty; default: closed at once. */
  readonly stdin?: string | "open"
  /** Written to stdin after the given delays (ms from spawn); stdin closes after the last one. */
  readonly stdinLater?: ReadonlyArray<{ readonly after: number; readonly text: string }>
  /** Sends `signal` once stdout satisfies this. */
  readonly signalAfter?: (stdout: string) => boolean
  /** Sends `signal` once this holds (checked every 50 ms), e.g. once a tool's command has started. */
  readonly signalWhen?: () => boolean
  /** The signal `signalAfter` and `signalWhen` send (default SIGINT). */
  readonly signal?: NodeJS.Signals
  /** Working directory (default: the sandbox's project). */
  readonly cwd?: string
  /** Extra environment variables. */
  readonly env?: Record<string, string>
}

/** Runs the built CLI in the sandbox (its own HOME, XDG dirs and database); killed if the test ends first. */
export const agent = (box: TestInstance.Sandbox, args: ReadonlyArray<string>, options: AgentOptions = {}) =>
  Effect.async<Result>((resume) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: options.cwd ?? box.instance.directory,
      env: { ...box.instance.env, ...options.env } as NodeJS.ProcessEnv,
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    let signalled = false
    const signal = () => {
      signalled = true
      child.kill(options.signal ?? "SIGINT")
    }
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString()
      if (!signalled && options.signalAfter?.(stdout)) signal()
    })
    const poll = options.signalWhen
      ? setInterval(() => (!signalled && options.signalWhen!() ? signal() : undefined), 50)
      : undefined
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    if (options.stdinLater !== undefined) {
      const last = options.stdinLater.length - 1
      options.stdinLater.forEach(({ after, text }, n) =>
        setTimeout(() => (n === last ? child.stdin.end(text) : child.stdin.write(text)), after)
      )
    } else if (options.stdin === undefined) child.stdin.end()
    else if (options.stdin !== "open") child.stdin.end(options.stdin)
    const timer = setTimeout(() => child.kill("SIGKILL"), 25_000)
    child.on("exit", (code, signal) => {
      clearTimeout(timer)
      clearInterval(poll)
      resume(Effect.succeed({ code, signal, stdout, stderr }))
    })
    return Effect.sync(() => {
      clearInterval(poll)
      child.kill("SIGKILL")
    })
  })

/** Runs a `sh -c` script in the sandbox's project, with `$AGENT` naming the built CLI (for real shell pipes). */
export const shell = (box: TestInstance.Sandbox, script: string) =>
  Effect.async<Result>((resume) => {
    const child = spawn("sh", ["-c", script], {
      cwd: box.instance.directory,
      env: { ...box.instance.env, AGENT: `${process.execPath} ${bin}` } as NodeJS.ProcessEnv,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    const timer = setTimeout(() => child.kill("SIGKILL"), 25_000)
    child.on("exit", (code, signal) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code, signal, stdout, stderr }))
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** The agent.json of a project whose model is the mock server at `url` (titles from a second one). */
export const mockConfig = (url: string, titlesUrl: string, extra: object = {}) => ({
  model: "mock/model-a",
  small_model: "titles/small",
  provider: {
    mock: { npm: "@ai-sdk/openai-compatible", options: { baseURL: url }, models: { "model-a": {} } },
    titles: { npm: "@ai-sdk/openai-compatible", options: { baseURL: titlesUrl }, models: { small: {} } }
  },
  ...extra
})

/** A sandbox whose config points at the mock server. */
export const project = (url: string, extra: object = {}, files: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const titles = yield* MockOpenAIServer.start(Array.from({ length: 10 }, () => "A title"))
    return yield* TestInstance.sandbox({ files: { "project/agent.json": mockConfig(url, titles.url, extra), ...files } })
  })

/** The JSON lines a `--format json` run printed. */
export const events = (stdout: string) =>
  stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line) as { type: string } & Record<string, any>)

/** A CLI process on a pseudo-terminal, driven like a user at the keyboard. */
export interface Terminal {
  /** Waits until the screen (escape sequences removed) matches, after what earlier waits consumed. */
  readonly waitFor: (pattern: RegExp) => Effect.Effect<string>
  /** Types text (include "\r" for Enter, "\x04" for Ctrl-D). */
  readonly type: (text: string) => Effect.Effect<void>
  /** Everything shown so far, escape sequences removed. */
  readonly screen: () => string
  /** Everything written to the terminal, escape sequences included. */
  readonly raw: () => string
  /** The exit code, once the process has ended. */
  readonly exited: Effect.Effect<number | null>
  /** Closes the terminal, as closing its window does: the pseudo-terminal hangs up (SIGHUP, EIO). */
  readonly close: Effect.Effect<void>
  /** The pid of `script`, which holds the terminal; the CLI runs below it. */
  readonly pid: number
}

const stripAnsi = (text: string) => text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r/g, "")

const shellQuote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`

/**
 * Runs the CLI under util-linux `script`, which gives it a real pseudo-terminal for stdin,
 * stdout and stderr, and passes what the test types to it. Killed when the test's scope ends.
 */
export const terminal = (box: TestInstance.Sandbox, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const command = [process.execPath, bin, ...args].map(shellQuote).join(" ")
      const child = spawn("script", ["-qfec", command, "/dev/null"], {
        cwd: box.instance.directory,
        env: { ...box.instance.env, TERM: "dumb", SHELL: "/bin/sh", ...env } as NodeJS.ProcessEnv,
        stdio: ["pipe", "pipe", "pipe"]
      })
      let raw = ""
      let consumed = 0
      const listeners = new Set<() => void>()
      const onData = (chunk: Buffer) => {
        raw += chunk.toString()
        for (const listener of listeners) listener()
      }
      child.stdout.on("data", onData)
      child.stderr.on("data", onData)
      const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      const screen = () => stripAnsi(raw)
      const waitFor = (pattern: RegExp) =>
        Effect.async<string>((resume) => {
          const check = () => {
            const rest = screen().slice(consumed)
            const match = pattern.exec(rest)
            if (!match) return false
            consumed += match.index + match[0].length
            listeners.delete(check)
            clearTimeout(timer)
            resume(Effect.succeed(match[0]))
            return true
          }
          // A guard against hanging forever, not a timing assertion.
          const timer = setTimeout(() => {
            listeners.delete(check)
            resume(Effect.die(new Error(`the terminal never showed ${pattern}; it shows:\n${screen()}`)))
          }, 40_000)
          if (!check()) listeners.add(check)
          return Effect.sync(() => {
            listeners.delete(check)
            clearTimeout(timer)
          })
        })
      const terminal: Terminal = {
        waitFor,
        type: (text) => Effect.sync(() => void child.stdin.write(text)),
        screen,
        raw: () => raw,
        exited: Effect.promise(() => exit),
        close: Effect.sync(() => void child.kill("SIGKILL")),
        pid: child.pid!
      }
      return { child, terminal }
    }),
    ({ child }) => Effect.sync(() => child.kill("SIGKILL"))
  ).pipe(Effect.map(({ terminal }) => terminal))

/**
 * Makes a directory or file read-only for the CLI until the scope closes. As root, whom
 * permissions do not stop (CI runs as root), a read-only bind mount of it onto itself; otherwise
 * its write permissions are taken away.
 */
export const readOnly = (target: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      if (process.getuid?.() === 0) {
        execFileSync("mount", ["--bind", target, target])
        execFileSync("mount", ["-o", "remount,bind,ro", target])
        return () => execFileSync("umount", ["-l", target])
      }
      const mode = fs.statSync(target).mode & 0o7777
      fs.chmodSync(target, mode & ~0o222)
      return () => fs.chmodSync(target, mode)
    }),
    (undo) => Effect.sync(undo)
  )

/**
 * What the tests of a file share (a model, a server), built before the first and closed after the last:
 * `const shared = forFile(build)` at the top, `shared()` in a test.
 */
export const forFile = <A, E>(build: Effect.Effect<A, E, Scope.Scope>, timeoutMs = 60_000): () => A => {
  const scope = Effect.runSync(Scope.make())
  let built: { readonly value: A } | undefined
  beforeAll(async () => {
    built = { value: await Effect.runPromise(build.pipe(Scope.extend(scope))) }
  }, timeoutMs)
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))
  return () => {
    if (built === undefined) throw new Error("the file's shared set-up was not built: see the beforeAll failure")
    return built.value
  }
}
