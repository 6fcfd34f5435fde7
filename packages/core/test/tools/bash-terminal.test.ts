// The bash tool's side of an editor terminal (tools/BashTerminal.ts), against a terminal that
// runs real processes the way an editor does (a shell runs the command line, output kept up to a
// byte limit, earliest dropped). The ACP end to end tests are in packages/acp/test/AcpTerminal.test.ts.
import { TestToolContext } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Fiber, TestClock } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as os from "node:os"
import type { EditorTerminalShape, TerminalCommand, TerminalExit } from "../../src/tool/EditorTerminal.js"
import { runInTerminal, type TerminalRun } from "../../src/tools/BashTerminal.js"

interface Started {
  readonly id: string
  readonly command: TerminalCommand
  readonly child: ChildProcess
  output: string
  truncated: boolean
  exit: TerminalExit | undefined
  killed: boolean
  released: boolean
}

/** An editor's terminals over child processes; `broken` makes one method fail as a gone editor's would. */
const editorTerminals = (broken?: "create" | "waitForExit") => {
  const started: Array<Started> = []
  const port: EditorTerminalShape = {
    available: () => true,
    create: (_sessionID, command) =>
      Effect.gen(function*() {
        if (broken === "create") return yield* Effect.fail(new Error("ACP connection closed"))
        const child = spawn("/bin/sh", ["-c", command.commandLine], { cwd: command.cwd, env: { ...command.env }, detached: true, stdio: ["ignore", "pipe", "pipe"] })
        const terminal: Started = { id: `term_${started.length + 1}`, command, child, output: "", truncated: false, exit: undefined, killed: false, released: false }
        const exited = new Promise<TerminalExit>((resolve) =>
          child.on("close", (code, signal) => {
            terminal.exit = { code, signal }
            resolve(terminal.exit)
          })
        )
        const append = (chunk: Buffer) => {
          terminal.output += chunk.toString()
          if (terminal.output.length > command.outputByteLimit) {
            terminal.output = terminal.output.slice(-command.outputByteLimit)
            terminal.truncated = true
          }
        }
        child.stdout!.on("data", append)
        child.stderr!.on("data", append)
        started.push(terminal)
        const kill = () => {
          if (terminal.exit === undefined) process.kill(-child.pid!, "SIGKILL")
        }
        return {
          id: terminal.id,
          output: Effect.sync(() => ({ output: terminal.output, truncated: terminal.truncated, exit: terminal.exit })),
          waitForExit: broken === "waitForExit" ? Effect.fail(new Error("ACP connection closed")) : Effect.promise(() => exited),
          kill: Effect.sync(() => {
            terminal.killed = true
            kill()
          }),
          release: Effect.sync(() => {
            kill()
            terminal.released = true
          })
        }
      })
  }
  return { port, started }
}

const run = (command: string, extra: Partial<TerminalRun> = {}): TerminalRun => ({
  command,
  cwd: os.tmpdir(),
  env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
  description: "A test command",
  timeout: 20_000,
  outputByteLimit: 1024 * 1024,
  killGraceMs: 3_000,
  ...extra
})

describe("bash in an editor's terminal", () => {
  it.live("shows the terminal first, then returns the command's output and exit code; the terminal is released", () =>
    Effect.gen(function*() {
      const { port, started } = editorTerminals()
      const { context, updates } = TestToolContext.make()
      const result = yield* runInTerminal(port, context, run("echo out; echo err >&2; exit 4"))
      expect(result).toMatchObject({ ending: "exit", exit: { code: 4 }, terminalId: "term_1" })
      expect(result.text).toContain("out\n")
      expect(result.text).toContain("err\n")
      expect(updates[0]?.metadata).toEqual({ output: "", description: "A test command", terminalId: "term_1" })
      expect(started[0]).toMatchObject({ released: true, killed: false, command: { commandLine: "echo out; echo err >&2; exit 4", cwd: os.tmpdir() } })
    }))

  it.live("the editor gets the environment without credentials: the command sees plain variables, not provider keys", () =>
    Effect.gen(function*() {
      const { port, started } = editorTerminals()
      const { context } = TestToolContext.make()
      const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", PROJECT_FLAVOUR: "plain", OPENAI_API_KEY: "sk-test-0123456789", GH_TOKEN: "ghp_x", DB_PASSWORD: "pw" }
      const result = yield* runInTerminal(port, context, run("echo \"flavour=$PROJECT_FLAVOUR key=$OPENAI_API_KEY gh=$GH_TOKEN pw=$DB_PASSWORD\"", { env }))
      expect(result.text).toBe("flavour=plain key= gh= pw=\n")
      expect(Object.keys(started[0]!.command.env).sort()).toEqual(["PATH", "PROJECT_FLAVOUR"])
    }))

  it.live("output the editor dropped is said to be missing; what is left is the end", () =>
    Effect.gen(function*() {
      const { port } = editorTerminals()
      const { context } = TestToolContext.make()
      const result = yield* runInTerminal(port, context, run("printf '0123456789abcdefghij'", { outputByteLimit: 10 }))
      expect(result.text).toBe("[earlier output was not kept: the editor keeps the last 10 bytes]\nabcdefghij")
    }))

  it.live("a timeout kills the command and returns what it printed", () =>
    Effect.gen(function*() {
      const { port, started } = editorTerminals()
      const { context } = TestToolContext.make()
      const result = yield* runInTerminal(port, context, run("echo begun; sleep 30; echo never", { timeout: 300 }))
      expect(result.ending).toBe("timeout")
      expect(result.text).toBe("begun\n")
      expect(result.exit.signal).toBe("SIGKILL")
      expect(started[0]).toMatchObject({ killed: true, released: true })
    }))

  it.live("an abort kills the command", () =>
    Effect.gen(function*() {
      const { port, started } = editorTerminals()
      const { context, controller } = TestToolContext.make()
      setTimeout(() => controller.abort(), 300)
      const result = yield* runInTerminal(port, context, run("echo begun; sleep 30"))
      expect(result.ending).toBe("aborted")
      expect(result.text).toBe("begun\n")
      expect(started[0]).toMatchObject({ killed: true, released: true })
    }))

  it.live("an editor that cannot start the command, or stops answering, is a clear tool error", () =>
    Effect.gen(function*() {
      const notStarted = yield* Effect.either(runInTerminal(editorTerminals("create").port, TestToolContext.make().context, run("echo hi")))
      expect(Either.getLeft(notStarted).pipe((left) => left._tag === "Some" ? left.value.message : "")).toMatch(
        /Could not start the command in the editor's terminal: ACP connection closed/
      )
      const gone = editorTerminals("waitForExit")
      const failed = yield* Effect.either(runInTerminal(gone.port, TestToolContext.make().context, run("echo hi")))
      expect(Either.getLeft(failed).pipe((left) => left._tag === "Some" ? left.value.message : "")).toMatch(
        /The editor's terminal failed while running the command: ACP connection closed/
      )
      expect(gone.started[0]?.released).toBe(true)
    }))

  it.effect("an editor that never answers terminal/create fails the call after 10 s instead of holding it", () =>
    Effect.gen(function*() {
      const silent: EditorTerminalShape = { available: () => true, create: () => Effect.never }
      const fiber = yield* Effect.fork(Effect.either(runInTerminal(silent, TestToolContext.make().context, run("echo hi"))))
      yield* TestClock.adjust("10 seconds")
      const result = yield* Fiber.join(fiber)
      expect(Either.getLeft(result).pipe((left) => left._tag === "Some" ? left.value.message : "")).toMatch(
        /Could not start the command in the editor's terminal: no answer in 10000 ms/
      )
    }))

  it.effect("an editor that never answers terminal/release does not hold the call: its result comes after 10 s", () =>
    Effect.gen(function*() {
      const stuck: EditorTerminalShape = {
        available: () => true,
        create: () =>
          Effect.succeed({
            id: "term_1",
            output: Effect.succeed({ output: "hi\n", truncated: false, exit: { code: 0, signal: null } }),
            waitForExit: Effect.succeed({ code: 0, signal: null }),
            kill: Effect.void,
            release: Effect.never
          })
      }
      const fiber = yield* Effect.fork(runInTerminal(stuck, TestToolContext.make().context, run("echo hi")))
      yield* TestClock.adjust("10 seconds")
      expect(yield* Fiber.join(fiber)).toMatchObject({ ending: "exit", text: "hi\n", exit: { code: 0 } })
    }))
})
