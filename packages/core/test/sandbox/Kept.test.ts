import type { SandboxConfig } from "@agent/domain"
import { TestInstance, TestToolContext } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Logger } from "effect"
import * as path from "node:path"
import * as fs from "node:fs"
import { Bus } from "../../src/runtime/Bus.js"
import { ConfigService } from "../../src/config/ConfigService.js"
import { Instance } from "../../src/runtime/Instance.js"
import { Sandbox } from "../../src/sandbox/Sandbox.js"
import { which } from "../../src/sandbox/Probe.js"
import type * as Tool from "../../src/tool/Tool.js"
import * as Bash from "../../src/tools/Bash.js"
import * as Write from "../../src/tools/Write.js"
import { Truncation } from "../../src/tool/Truncation.js"

/**
 * The kept sandbox (`keepIdleMs`): one bubblewrap per sandbox shape, commands started inside it by
 * its supervisor. Real bubblewrap, real processes; skipped where bubblewrap is missing (CI has it).
 */
const real = which("bwrap", process.env.PATH) !== undefined || process.env.CI !== undefined

const setup = (keepIdleMs = 60_000, env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const box = yield* TestInstance.sandbox({})
    fs.mkdirSync(box.path("tmp"))
    fs.mkdirSync(box.path("outside"))
    const instance = Layer.succeed(Instance, { ...box.instance, env: { ...box.instance.env, TMPDIR: box.path("tmp"), ...env } })
    const config = ConfigService.layerFromInfo({ config: {}, sources: [], warnings: [], directories: [], origin: () => undefined })
    const deps = yield* Layer.build(
      Layer.mergeAll(
        Sandbox.layerWith({ temporary: [box.path("tmp")], keepIdleMs }),
        Truncation.layer.pipe(Layer.provide(config))
      ).pipe(Layer.provideMerge(Layer.merge(instance, Bus.layer)))
    )
    const tool = yield* Effect.provide(Bash.make, deps)
    return { box, tool, deps }
  })

const run = (tool: Tool.AnyTool, command: string, extra: Record<string, unknown> = {}, sandbox?: SandboxConfig) =>
  tool.execute(
    { command, description: "Runs a kept sandbox test", ...extra },
    TestToolContext.make({ sessionID: "ses_kept", ...(sandbox ? { sandbox } : {}) }).context
  )

/** Host processes whose command line names `text` (the test's own directory): the sandbox's bwrap and what runs in it. */
/** Which sandbox ran a command: the start time of its supervisor (namespace ids are reused once freed). */
const WHICH = "cut -d' ' -f22 /proc/$PPID/stat"

const processesNaming = (text: string): Array<string> =>
  fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).flatMap((pid) => {
    try {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ")
      return cmdline.includes(text) ? [`${pid} ${cmdline.slice(0, 120)}`] : []
    } catch {
      return []
    }
  })

const waitFor = (check: () => boolean, ms = 5_000) =>
  Effect.gen(function*() {
    for (let waited = 0; waited < ms && !check(); waited += 50) yield* Effect.sleep("50 millis")
    return check()
  })

describe.runIf(real)("kept sandbox", () => {
  it.scopedLive("commands run in one kept sandbox, with the same bounds, exit codes and output", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      const first = yield* run(tool, "readlink /proc/self/ns/mnt; echo out; echo err >&2; exit 3")
      const second = yield* run(tool, "readlink /proc/self/ns/mnt")
      const namespace = first.output.split("\n")[0]
      expect(namespace).toMatch(/^mnt:\[\d+\]$/)
      expect(second.output.trim()).toBe(namespace)
      expect(first.output).toContain("out\n")
      expect(first.output).toContain("err\n")
      expect(first.metadata).toMatchObject({ exit: 3, sandbox: "workspace-write" })
      // The same bounds: outside and the protected config cannot be written, the project can.
      const target = box.path("outside/escaped.txt")
      const blocked = yield* run(tool, `echo x > "${target}"; echo '{}' > agent.json; echo ok > made.txt; echo done`)
      expect(blocked.output).toContain("done")
      expect(fs.existsSync(target)).toBe(false)
      // agent.json is absent: while the sandbox is kept, an empty read-only directory holds its place.
      expect(fs.readdirSync(box.path("project/agent.json"))).toEqual([])
      expect(fs.readFileSync(box.path("project/made.txt"), "utf8")).toBe("ok\n")
      expect((blocked.metadata?.blocked as Array<{ target: string }>).map((entry) => entry.target)).toContain(target)
      // The network is still off.
      const network = yield* run(tool, "cat /proc/net/dev | grep -c :")
      expect(network.output.trim()).toBe("1")
    }))

  it.scopedLive("commands run side by side, each with its own output; a shell killed by a signal reports no code, as unsandboxed", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup()
      const [slow, fast] = yield* Effect.all([run(tool, "sleep 0.4; echo slow"), run(tool, "echo fast")], { concurrency: 2 })
      expect(slow.output).toBe("slow\n")
      expect(fast.output).toBe("fast\n")
      const killed = yield* run(tool, "echo before; kill -TERM $$; echo after")
      expect(killed.output).toBe("before\n")
      expect(killed.metadata?.exit).toBeNull()
      const unsandboxed = yield* run(tool, "kill -TERM $$", {}, { mode: "off" })
      expect(unsandboxed.metadata?.exit).toBeNull()
    }))

  it.scopedLive("a command sees nothing of the one before: environment, working directory, leftover processes", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      yield* run(tool, "export KEPT_SECRET=1; cd /tmp; sleep 7 & echo started")
      const next = yield* run(tool, "echo \"${KEPT_SECRET:-unset}\"; pwd")
      expect(next.output).toBe(`unset\n${box.path("project")}\n`)
      // A command that runs out of time is ended with its whole tree, background jobs included.
      const timedOut = yield* run(tool, "sleep 31 & (sleep 32 &); sleep 33", { timeout: 300 })
      expect(timedOut.output).toContain("exceeded the timeout")
      const left = yield* run(tool, "for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr '\\0' ' '; echo; done")
      expect(left.output).not.toMatch(/sleep 3[123]/)
    }))

  it.scopedLive("a command that ignores SIGTERM is killed with its tree after the grace period", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup()
      const started = Date.now()
      const result = yield* run(tool, "trap '' TERM; sleep 34 & sleep 35", { timeout: 200 })
      expect(result.output).toContain("exceeded the timeout")
      expect(Date.now() - started).toBeGreaterThanOrEqual(200 + Bash.KILL_GRACE_MS - 100)
      const left = yield* run(tool, "for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr '\\0' ' '; echo; done")
      expect(left.output).not.toMatch(/sleep 3[45]/)
    }))

  it.scopedLive("a command cannot stop the supervisor with pkill; a kept sandbox that dies is replaced", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup()
      const before = (yield* run(tool, WHICH)).output.trim()
      const survived = yield* run(tool, "pkill node; pkill -f 'agent-sandbo[x]'; kill $PPID; echo still here")
      expect(survived.output).toContain("still here")
      expect((yield* run(tool, WHICH)).output.trim()).toBe(before)
      // SIGKILL cannot be ignored: the command that sent it fails, and the next one gets a new sandbox.
      const killed = yield* Effect.either(run(tool, "kill -9 $PPID; sleep 1"))
      expect(killed._tag === "Left" ? killed.left.message : killed.right.output).toMatch(/kept sandbox ended/)
      const after = yield* run(tool, `${WHICH}; echo fine`)
      expect(after.output).toContain("fine")
      expect(after.output.split("\n")[0]).not.toBe(before)
    }))

  it.live("the kept sandbox ends with its layer: no bubblewrap is left, nor its placeholders", () =>
    Effect.gen(function*() {
      const marker = yield* Effect.scoped(
        Effect.gen(function*() {
          const { box, tool } = yield* setup()
          const result = yield* run(tool, "echo hi")
          expect(result.output).toBe("hi\n")
          // While it is kept, it holds the absent config names.
          expect(fs.statSync(box.path("project/.agent")).isDirectory()).toBe(true)
          expect(processesNaming(box.path("project")).length).toBeGreaterThan(0)
          return box.path("project")
        })
      )
      expect(yield* waitFor(() => processesNaming(marker).length === 0)).toBe(true)
      expect(fs.existsSync(`${marker}/.agent`)).toBe(false)
    }))

  it.scopedLive("the write tool creates agent.json where a kept sandbox held the name; commands still cannot change it", () =>
    Effect.gen(function*() {
      const { box, tool, deps } = yield* setup()
      expect((yield* run(tool, "echo hi")).output).toBe("hi\n")
      const config = box.path("project/agent.json")
      // The kept sandbox holds the absent name with an empty directory.
      expect(fs.statSync(config).isDirectory()).toBe(true)
      const write = yield* Effect.provide(Write.make, deps)
      const context = TestToolContext.make({ sessionID: "ses_kept" }).context
      const result = yield* write.execute({ filePath: config, content: '{ "model": "test/x" }\n' }, context)
      expect(result.output).toContain("Wrote file successfully")
      expect(fs.readFileSync(config, "utf8")).toBe('{ "model": "test/x" }\n')
      // The next command gets a sandbox that protects the file as it now is.
      const changed = yield* run(tool, `echo '{}' > agent.json; cat agent.json`)
      expect(changed.output).toContain('{ "model": "test/x" }')
      expect(fs.readFileSync(config, "utf8")).toBe('{ "model": "test/x" }\n')
    }))

  it.scopedLive("an idle kept sandbox is closed; the next command starts another", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup(300)
      const first = (yield* run(tool, WHICH)).output.trim()
      expect(yield* waitFor(() => processesNaming(box.path("project")).length === 0)).toBe(true)
      expect(yield* waitFor(() => !fs.existsSync(box.path("project/.agent")))).toBe(true)
      const second = (yield* run(tool, WHICH)).output.trim()
      expect(second).toMatch(/^\d+$/)
      expect(second).not.toBe(first)
    }))

  it.scopedLive("a background job outlives its command and keeps the sandbox until it ends", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup(200)
      const result = yield* run(tool, "(sleep 0.6; echo later > bg.txt) > /dev/null 2>&1 & echo started")
      expect(result.output).toBe("started\n")
      expect(yield* waitFor(() => fs.existsSync(box.path("project/bg.txt")))).toBe(true)
      expect(fs.readFileSync(box.path("project/bg.txt"), "utf8")).toBe("later\n")
      expect(yield* waitFor(() => processesNaming(box.path("project")).length === 0)).toBe(true)
      expect(yield* waitFor(() => !fs.existsSync(box.path("project/.agent")))).toBe(true)
    }))

  it.scopedLive("a kept sandbox that cannot start: each command gets its own bubblewrap, with one warning", () =>
    Effect.gen(function*() {
      // A bubblewrap that refuses to run the supervisor, and only it.
      const bin = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? "/tmp"), "kept-bin-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(bin, { recursive: true, force: true })))
      const bwrap = which("bwrap", process.env.PATH) ?? "/usr/bin/bwrap"
      fs.writeFileSync(path.join(bin, "bwrap"), `#!/bin/sh\ncase "$*" in *process.title*) echo "no supervisor here" >&2; exit 1;; esac\nexec ${bwrap} "$@"\n`, { mode: 0o755 })
      const warnings: Array<string> = []
      const logger = Logger.make(({ logLevel, message }) => {
        if (logLevel._tag === "Warning") warnings.push(String(message))
      })
      const { box, tool } = yield* setup(60_000, { PATH: `${bin}:${process.env.PATH}` }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
      for (const command of ["echo one > one.txt; echo one", "echo two"]) {
        const result = yield* run(tool, command).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
        expect(result.metadata).toMatchObject({ exit: 0, sandbox: "workspace-write" })
      }
      expect(fs.readFileSync(box.path("project/one.txt"), "utf8")).toBe("one\n")
      expect(warnings.filter((warning) => warning.includes("a kept sandbox could not start"))).toHaveLength(1)
      expect(warnings[0]).toContain("no supervisor here")
      // Each command had its own sandbox, gone with it: no placeholders are left.
      expect(fs.existsSync(box.path("project/.agent"))).toBe(false)
    }))

  it.scopedLive("a sandbox of another shape gets its own kept sandbox: read-only, the host network", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup()
      const workspace = (yield* run(tool, "readlink /proc/self/ns/mnt")).output.trim()
      const readOnly = yield* run(tool, "readlink /proc/self/ns/mnt; touch x; echo $?", {}, { mode: "read-only" })
      expect(readOnly.output.split("\n")[0]).not.toBe(workspace)
      expect(readOnly.output).toContain("Read-only file system")
      const network = yield* run(tool, "readlink /proc/self/ns/net", {}, { network: true })
      expect(network.output.trim()).toBe(fs.readlinkSync("/proc/self/ns/net"))
    }))
})
