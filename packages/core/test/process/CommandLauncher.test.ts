import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type CommandLauncher, type LauncherState, make, routeOf } from "../../src/process/CommandLauncher.js"
import { runDirect } from "../../src/process/DirectCommand.js"

const options = { timeoutMs: 10_000, maxOutput: 1024 * 1024 }

const fixture = () => {
  const cwd = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "launcher-")))
  return { cwd, env: { PATH: process.env.PATH, GREETING: "hello" } }
}

/** Whether a process runs (a zombie waiting to be reaped does not). */
const alive = (pid: number) => {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[0] !== "Z"
  } catch {
    return false
  }
}

/** The pid of the process that started the command: this one (a direct start) or a launcher. */
const parentOf = (launcher: CommandLauncher) =>
  launcher.run("echo $PPID", "", options).pipe(Effect.map((result) => (result._tag === "Exited" ? Number(result.stdout.trim()) : -1)))

/** Runs commands until one starts through a launcher (the first starts directly while it comes up); its pid. */
const launcherUp = (launcher: CommandLauncher, not?: number) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 200; attempt++) {
      const parent = yield* parentOf(launcher)
      if (parent !== process.pid && parent !== not && parent > 0) return parent
      yield* Effect.sleep("25 millis")
    }
    throw new Error("no launcher came up within 5 s")
  })

const waitUntil = (check: () => boolean) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 200 && !check(); attempt++) yield* Effect.sleep("25 millis")
    return check()
  })

describe("CommandLauncher.routeOf", () => {
  const launcher = {} as never
  const cases: ReadonlyArray<readonly [LauncherState, ReturnType<typeof routeOf>]> = [
    [{ _tag: "Off" }, "start-and-direct"],
    [{ _tag: "Starting", launcher }, "direct"],
    [{ _tag: "Ready", launcher }, "launcher"],
    [{ _tag: "Unavailable", reason: "x", reported: false }, "direct"],
    [{ _tag: "Closed" }, "direct"]
  ]
  for (const [state, route] of cases) it(`${state._tag}: ${route}`, () => expect(routeOf(state)).toBe(route))
})

describe("CommandLauncher (real processes)", () => {
  it.live("a command started through the launcher behaves as one started directly", () =>
    Effect.scoped(Effect.gen(function*() {
      const context = fixture()
      const launcher = yield* make({ ...context, warm: 1 })
      const first = yield* parentOf(launcher)
      // Nothing waited for the launcher: the first command started from this process.
      expect(first).toBe(process.pid)
      const launcherPid = yield* launcherUp(launcher)
      const commands: ReadonlyArray<readonly [string, string]> = [
        ["read line; echo \"$GREETING $line\"; echo warn >&2; exit 3", "world\n"],
        ["pwd; echo \"$0\" $#", ""],
        ["cat", "{\"a\": \"é\\n'quoted'\"}"],
        ["echo one\necho 'two\nlines'\n  printf '%s' \"  three\"", ""],
        ["echo 'back\\slash' \"$GREETING\"", ""],
        ["nosuchcommand-xyz", ""],
        ["if", ""],
        ["kill -TERM $$", ""],
        ["echo trailing \\", ""]
      ]
      for (const [command, input] of commands) {
        const direct = yield* runDirect(command, input, context, options)
        const launched = yield* launcher.run(command, input, options)
        expect(launched, command).toEqual(direct)
      }
      // They did go through the launcher.
      expect(yield* parentOf(launcher)).toBe(launcherPid)
    })), 30_000)

  it.live("a command that reads a big input gets all of it; big output is cut at the limit", () =>
    Effect.scoped(Effect.gen(function*() {
      const launcher = yield* make({ ...fixture(), warm: 1 })
      yield* launcherUp(launcher)
      const input = "x".repeat(3 * 1024 * 1024)
      const result = yield* launcher.run("wc -c; head -c 2000000 /dev/zero | tr '\\0' y", input, { timeoutMs: 10_000, maxOutput: 1024 * 1024 })
      expect(result._tag).toBe("Exited")
      if (result._tag !== "Exited") return
      expect(result.code).toBe(0)
      expect(result.stdout.startsWith(`${3 * 1024 * 1024}\n`)).toBe(true)
      expect(result.stdout.length).toBe(1024 * 1024)
      // One that does not read its input still answers.
      expect(yield* launcher.run("echo '{}'", input, options)).toMatchObject({ _tag: "Exited", code: 0, stdout: "{}\n" })
    })), 30_000)

  it.live("a command past its timeout is killed with what it started", () =>
    Effect.scoped(Effect.gen(function*() {
      const context = fixture()
      const launcher = yield* make({ ...context, warm: 1 })
      yield* launcherUp(launcher)
      const marker = path.join(context.cwd, "late")
      const started = Date.now()
      const result = yield* launcher.run(`(sleep 2; touch ${marker}) & echo $! > child.pid; wait`, "", { timeoutMs: 300, maxOutput: 1000 })
      expect(result).toEqual({ _tag: "TimedOut" })
      expect(Date.now() - started).toBeLessThan(1500)
      const child = Number(fs.readFileSync(path.join(context.cwd, "child.pid"), "utf8"))
      expect(yield* waitUntil(() => !alive(child))).toBe(true)
      yield* Effect.sleep("2500 millis")
      expect(fs.existsSync(marker)).toBe(false)
      // The launcher goes on serving.
      expect(yield* launcher.run("echo after", "", options)).toMatchObject({ _tag: "Exited", code: 0, stdout: "after\n" })
    })), 30_000)

  it.live("commands run at once each get their own shell", () =>
    Effect.scoped(Effect.gen(function*() {
      const launcher = yield* make({ ...fixture(), warm: 2 })
      const launcherPid = yield* launcherUp(launcher)
      const results = yield* Effect.forEach([1, 2, 3, 4], (n) => launcher.run(`sleep 0.2; echo $n $PPID; exit ${n}`.replace("$n", String(n)), "", options), {
        concurrency: "unbounded"
      })
      expect(results).toEqual([1, 2, 3, 4].map((n) => ({ _tag: "Exited", code: n, signal: null, stdout: `${n} ${launcherPid}\n`, stderr: "" })))
    })), 30_000)

  it.live("a launcher killed between commands: the next command still runs, and a new launcher takes over", () =>
    Effect.scoped(Effect.gen(function*() {
      const launcher = yield* make({ ...fixture(), warm: 1 })
      const first = yield* launcherUp(launcher)
      process.kill(first, "SIGKILL")
      // Straight after the kill, before or after the runtime noticed: it runs.
      expect(yield* launcher.run("echo still", "", options)).toMatchObject({ _tag: "Exited", code: 0, stdout: "still\n" })
      expect(yield* waitUntil(() => !alive(first))).toBe(true)
      const second = yield* launcherUp(launcher, first)
      expect(second).not.toBe(first)
    })), 30_000)

  it.live("a launcher that dies under a running command: it is reported, and the command's group is killed", () =>
    Effect.scoped(Effect.gen(function*() {
      const context = fixture()
      const launcher = yield* make({ ...context, warm: 1 })
      const launcherPid = yield* launcherUp(launcher)
      const marker = path.join(context.cwd, "late")
      yield* Effect.fork(Effect.sleep("300 millis").pipe(Effect.andThen(Effect.sync(() => process.kill(launcherPid, "SIGKILL")))))
      const result = yield* launcher.run(`(sleep 1.5; touch ${marker}) & wait`, "", options)
      expect(result).toEqual({ _tag: "Failed", error: "the command launcher ended while the command ran" })
      yield* Effect.sleep("2000 millis")
      expect(fs.existsSync(marker)).toBe(false)
    })), 30_000)

  it.live("the launcher and its waiting shells end with the scope; commands after it start directly", () =>
    Effect.gen(function*() {
      const context = fixture()
      const scope = yield* Scope.make()
      const launcher = yield* make({ ...context, warm: 2 }).pipe(Scope.extend(scope))
      const launcherPid = yield* launcherUp(launcher)
      const shells = () => fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).filter((pid) => {
        try {
          return fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[1] === String(launcherPid)
        } catch {
          return false
        }
      })
      expect(yield* waitUntil(() => shells().length === 2)).toBe(true)
      const waiting = shells().map(Number)
      yield* Scope.close(scope, Exit.void)
      expect(yield* waitUntil(() => !alive(launcherPid) && waiting.every((pid) => !alive(pid)))).toBe(true)
      // After its scope: commands still run (directly).
      expect(yield* launcher.run("echo $PPID", "", options)).toMatchObject({ _tag: "Exited", stdout: `${process.pid}\n` })
    }), 30_000)
})
