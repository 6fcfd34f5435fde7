import { DeniedError, type PermissionConfig, type ToolPart } from "@agent/domain"
import { ScriptedModel, TestInstance, TestRuntime, TestToolContext } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Bus } from "../../src/runtime/Bus.js"
import { ConfigService } from "../../src/config/ConfigService.js"
import { PermissionService } from "../../src/permission/PermissionService.js"
import { Sandbox } from "../../src/sandbox/Sandbox.js"
import { which } from "../../src/sandbox/Probe.js"
import { Instance } from "../../src/runtime/Instance.js"

import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import type * as Tool from "../../src/tool/Tool.js"
import * as ToolModule from "../../src/tool/Tool.js"
import { ToolExecutionError } from "../../src/tool/Tool.js"
import * as Bash from "../../src/tools/Bash.js"
import { Truncation } from "../../src/tool/Truncation.js"

/** The sandbox these tests run in: bubblewrap's wherever it is installed, and always in CI. */
const SANDBOX_EXPECTED = process.env.CI || which("bwrap", process.env.PATH) ? "workspace-write" : "unavailable"

interface Update {
  readonly at: number
  readonly metadata: Record<string, unknown>
}

/** The bash tool over a fresh sandbox, with a live Truncation writing into the sandbox. */
const setup = (options: { readonly env?: Record<string, string> } = {}) =>
  Effect.gen(function*() {
    const box = yield* TestInstance.sandbox(options.env ? { env: options.env } : {})
    const instance = Layer.succeed(Instance, box.instance)
    const config = ConfigService.layerFromInfo({ config: {}, sources: [], warnings: [], directories: [], origin: () => undefined })
    const sandbox = Sandbox.layer.pipe(Layer.provide(Layer.merge(instance, Bus.layer)))
    const deps = yield* Layer.build(Layer.mergeAll(instance, sandbox, Truncation.layer.pipe(Layer.provide(Layer.merge(instance, config)))))
    const tool = yield* Effect.provide(Bash.make, deps)
    return { box, tool, truncation: Context.get(deps, Truncation) }
  })

/**
 * A ToolContext that records asks and metadata updates. Asks are decided by `permission`
 * rules the way PermissionService decides them: any denied pattern fails the call.
 */
const makeContext = (permission: PermissionConfig = { "*": "allow" }) => TestToolContext.make({ permission, sessionID: "ses_test" })

const run = (tool: Tool.AnyTool, params: Record<string, unknown>, context: Tool.ToolContext) =>
  tool.execute({ description: "Runs a test command", ...params }, context)

/** Gone: no such process, or a zombie nobody has reaped yet (it runs nothing). */
const isGone = (pid: number) => {
  try {
    process.kill(pid, 0)
  } catch {
    return true
  }
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z") ?? false
  } catch {
    return true
  }
}

const pidsIn = (text: string) => [...new Set([...text.matchAll(/pid (\d+)/g)].map((match) => Number(match[1])))]

/**
 * Host pids of the live processes whose command line holds `marker`. A sandboxed command runs in
 * a pid namespace of its own, where `$$` is not the host's pid, so the tests find the processes
 * from outside, by a sleep duration no other process uses.
 */
const processesWith = (marker: string): Array<number> =>
  fs.readdirSync("/proc").flatMap((entry) => {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) return []
    try {
      return fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(marker) && !isGone(Number(entry)) ? [Number(entry)] : []
    } catch {
      return []
    }
  })

let markers = 0
/** A sleep duration unique to one test, e.g. `30.000417`. */
const uniqueSleep = (seconds: number) => `${seconds}.${String(process.pid % 1000).padStart(3, "0")}${String(++markers).padStart(3, "0")}`

/** Waits in real time until `check` holds. */
const until = (check: () => boolean, ms = 10_000) =>
  Effect.promise(async () => {
    const deadline = Date.now() + ms
    while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
    return check()
  })

const latestOutput = (updates: ReadonlyArray<Update>) => String(updates.at(-1)?.metadata.output ?? "")

/** A background child that ignores SIGTERM (its sleep inherits that), plus a plain one. */
const stubbornTree = (sleep: string) =>
  `sh -c 'trap "" TERM; sleep ${sleep} & echo "pid $!"; echo "pid $$"; wait' & ` +
  `sleep ${sleep} & echo "pid $!"; echo "pid $$"; wait`

describe("bash: running commands", () => {
  it.scopedLive("returns stdout and stderr interleaved in arrival order, with the exit code", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      const { context } = makeContext()
      const result = yield* run(tool, {
        command: "echo out; sleep 0.05; echo err >&2; sleep 0.05; echo \"$XDG_CONFIG_HOME\"; exit 3",
        description: "Prints to both streams"
      }, context)
      // the environment is the instance's, not the test process's
      expect(result.output).toBe(`out\nerr\n${path.join(box.instance.home, ".config")}\n`)
      expect(result.title).toBe("Prints to both streams")
      expect(result.metadata).toMatchObject({ exit: 3, description: "Prints to both streams", output: result.output })
      expect(result.truncated).toBe(false)
      // These tests run in the sandbox wherever it works, and CI installs bubblewrap.
      expect(result.metadata?.sandbox).toBe(SANDBOX_EXPECTED)
    }))

  it.scopedLive("an empty output reads \"(no output)\"", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup()
      const result = yield* run(tool, { command: "true" }, makeContext().context)
      expect(result.output).toBe("(no output)")
      expect(result.metadata?.exit).toBe(0)
    }))

  it.scopedLive("runs in the project directory, or in workdir relative to it", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      fs.mkdirSync(box.path("project/sub/deeper"), { recursive: true })
      const { context } = makeContext()
      expect((yield* run(tool, { command: "pwd" }, context)).output).toBe(`${box.instance.directory}\n`)
      expect((yield* run(tool, { command: "pwd", workdir: "sub/deeper" }, context)).output).toBe(`${box.path("project/sub/deeper")}\n`)
      expect((yield* run(tool, { command: "pwd", workdir: box.path("project/sub") }, context)).output).toBe(`${box.path("project/sub")}\n`)
    }))

  it.scopedLive("a missing workdir is a clear error and nothing runs", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      const { context, asks } = makeContext()
      const error = yield* Effect.flip(run(tool, { command: "touch made", workdir: "nope" }, context))
      expect(error).toBeInstanceOf(ToolExecutionError)
      expect(error.message).toContain(`${box.path("project/nope")} does not exist`)
      expect(asks).toEqual([])
      fs.writeFileSync(box.path("project/file"), "")
      const notDir = yield* Effect.flip(run(tool, { command: "ls", workdir: "file" }, context))
      expect(notDir.message).toMatch(/is not a directory/)
    }))

  it.scopedLive("an empty command is refused", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup()
      const error = yield* Effect.flip(run(tool, { command: "  " }, makeContext().context))
      expect(error.message).toMatch(/empty/)
    }))

  it.scopedLive("long output keeps the tail and saves the full text", () =>
    Effect.gen(function*() {
      const { tool, truncation } = yield* setup()
      const result = yield* run(tool, { command: "seq 1 100000" }, makeContext().context)
      const full = Array.from({ length: 100000 }, (_, index) => `${index + 1}\n`).join("")
      expect(result.truncated).toBe(true)
      expect(result.output.startsWith("...output truncated...")).toBe(true)
      expect(result.output.endsWith("\n99999\n100000")).toBe(true)
      expect(result.output).not.toContain("\n50000\n")
      const outputPath = result.metadata?.outputPath as string
      expect(path.dirname(outputPath)).toBe(truncation.directory)
      expect(result.output).toContain(`Full output saved to: ${outputPath}`)
      expect(fs.readFileSync(outputPath, "utf8")).toBe(full)
      expect(result.metadata).toMatchObject({ truncated: true, exit: 0 })
      const preview = result.metadata?.output as string
      expect(preview.length).toBe(Bash.PREVIEW_CHARS)
      expect(full.endsWith(preview)).toBe(true)
    }))

  it.scopedLive("takes OpenCode's parameters, plus unsandboxed; a timeout must be 1..600000 ms", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup()
      const schema = ToolModule.jsonSchemaOf(tool) as { required: Array<string>; properties: Record<string, unknown> }
      expect(Object.keys(schema.properties)).toEqual(["command", "timeout", "workdir", "description", "unsandboxed"])
      expect(schema.required).toEqual(["command", "description"])
      expect(schema.properties.timeout).toMatchObject({ type: "integer", exclusiveMinimum: 0, maximum: 600_000 })
      for (const timeout of [600_001, 0, -5, 1.5, "5000"]) {
        const bad = yield* Effect.flip(ToolModule.decodeInput(tool, { command: "ls", description: "Lists", timeout }))
        expect(bad.message).toBe(
          "The bash tool was called with invalid arguments: timeout: expected a whole number of milliseconds from 1 to 600000.\n" +
            "Please rewrite the input so it satisfies the expected schema."
        )
      }
      const fine = yield* ToolModule.decodeInput(tool, { command: "ls", description: "Lists", timeout: 600_000 })
      expect(fine).toMatchObject({ timeout: 600_000 })
    }))

  it.scopedLive("uses $SHELL when it is sh-like, else bash", () =>
    Effect.gen(function*() {
      const { box } = yield* setup()
      const withShell = (shell: string | undefined) => ({ ...box.instance, env: { ...box.instance.env, SHELL: shell } })
      expect(Bash.shellFor(withShell("/bin/sh"))).toBe("/bin/sh")
      expect(Bash.shellFor(withShell("/usr/bin/fish"))).toBe("/bin/bash")
      expect(Bash.shellFor(withShell("/no/such/zsh"))).toBe("/bin/bash")
      expect(Bash.shellFor(withShell(undefined))).toBe("/bin/bash")
    }))
})

describe("bash: live output", () => {
  it.scopedLive("metadata updates carry the output while the command runs", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      const { context, updates } = makeContext()
      // The command waits for a file that the test creates only once it has seen the first line
      // in a live update: without live updates it would run into its timeout.
      const go = box.path("project/go")
      const fiber = yield* Effect.fork(run(tool, {
        command: `echo "tick 1"; while [ ! -f "${go}" ]; do sleep 0.02; done; echo "tick 2"`,
        timeout: 60_000
      }, context))
      expect(yield* until(() => latestOutput(updates).includes("tick 1"), 30_000)).toBe(true)
      const midway = updates.at(-1)!
      expect(midway.metadata).toEqual({ output: "tick 1\n", description: "Runs a test command" })
      fs.writeFileSync(go, "")
      const result = yield* Fiber.join(fiber)
      expect(result.output).toBe("tick 1\ntick 2\n")
    }))

  it.scopedLive("a burst of output is coalesced into updates at most every ~100 ms", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup()
      const { context, updates } = makeContext()
      const result = yield* run(tool, { command: "for i in $(seq 1 200); do echo $i; sleep 0.005; done" }, context)
      expect(result.output.split("\n")).toHaveLength(201)
      const live = updates.slice(1) // the first one announces the start, with empty output
      expect(updates[0]!.metadata.output).toBe("")
      expect(live.length).toBeGreaterThan(0)
      expect(live.length).toBeLessThan(100)
      for (let index = 1; index < live.length; index++) expect(live[index]!.at - live[index - 1]!.at).toBeGreaterThanOrEqual(80)
    }))
})

describe("bash: stopping commands", () => {
  it.scopedLive("a timeout kills the whole process tree, including a child that ignores SIGTERM", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup()
      const started = Date.now()
      const sleep = uniqueSleep(30)
      const { context, updates } = makeContext()
      const fiber = yield* Effect.fork(run(tool, { command: stubbornTree(sleep), timeout: 500 }, context))
      expect(yield* until(() => pidsIn(latestOutput(updates)).length === 4)).toBe(true)
      expect(processesWith(sleep).length).toBeGreaterThanOrEqual(4)
      const result = yield* Fiber.join(fiber)
      expect(pidsIn(result.output)).toHaveLength(4)
      expect(processesWith(sleep)).toEqual([])
      // SIGTERM did not stop the stubborn child; SIGKILL came after the grace period
      expect(Date.now() - started).toBeGreaterThanOrEqual(500 + Bash.KILL_GRACE_MS - 100)
      expect(result.output).toContain("<shell_metadata>")
      expect(result.output).toContain("exceeded the timeout of 500 ms")
      expect(result.metadata?.exit).toBeNull()
    }), 20_000)

  it.scopedLive("the default timeout comes from AGENT_BASH_DEFAULT_TIMEOUT_MS", () =>
    Effect.gen(function*() {
      // unset (or not a positive whole number): 120 s, as the tool tells the model
      const plain = yield* setup({ env: { AGENT_BASH_DEFAULT_TIMEOUT_MS: "soon" } })
      expect(Bash.defaultTimeout(plain.box.instance)).toBe(120_000)
      expect(plain.tool.description).toContain("default 120000")
      const { tool } = yield* setup({ env: { AGENT_BASH_DEFAULT_TIMEOUT_MS: "300" } })
      expect(tool.description).toContain("default 300")
      const sleep = uniqueSleep(20)
      const result = yield* run(tool, { command: `echo "pid $$"; sleep ${sleep}` }, makeContext().context)
      expect(result.output).toContain("exceeded the timeout of 300 ms")
      expect(pidsIn(result.output)).toHaveLength(1)
      expect(processesWith(sleep)).toEqual([])
    }))

  it.scopedLive("aborting through ctx.abort stops the command and says so", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup()
      const { context, updates, controller } = makeContext()
      const sleep = uniqueSleep(30)
      const fiber = yield* Effect.fork(run(tool, { command: `sleep ${sleep} & echo "pid $!"; echo "pid $$"; wait` }, context))
      expect(yield* until(() => pidsIn(latestOutput(updates)).length === 2)).toBe(true)
      expect(processesWith(sleep).length).toBeGreaterThanOrEqual(2)
      controller.abort()
      const result = yield* Fiber.join(fiber)
      expect(processesWith(sleep)).toEqual([])
      expect(result.output).toMatch(/<shell_metadata>\nThe user aborted the command/)
      expect(result.output).not.toContain("timeout")
    }))

  it.scopedLive("interrupting the tool's fiber kills the process tree before the interruption completes", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup()
      const { context, updates } = makeContext()
      const sleep = uniqueSleep(30)
      const fiber = yield* Effect.fork(run(tool, { command: stubbornTree(sleep) }, context))
      expect(yield* until(() => pidsIn(latestOutput(updates)).length === 4)).toBe(true)
      const pids = processesWith(sleep)
      expect(pids.length).toBeGreaterThanOrEqual(4)
      yield* Fiber.interrupt(fiber)
      for (const pid of pids) expect(isGone(pid)).toBe(true)
    }), 20_000)
})

describe("bash: permissions", () => {
  it.scopedLive("asks external_directory for outside paths first, then bash for every command", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      fs.mkdirSync(box.path("outside"))
      fs.writeFileSync(box.path("outside/file"), "x")
      const { context, asks } = makeContext()
      const command = "ls && rm -rf ../outside/file && cat /etc/passwd > /dev/null"
      yield* run(tool, { command }, context)
      const etc = path.join(fs.realpathSync("/etc"), "*")
      const outside = path.join(box.path("outside"), "*")
      expect(asks.map(({ permission, patterns, always }) => ({ permission, patterns, always }))).toEqual([
        { permission: "external_directory", patterns: [outside, etc], always: [outside, etc] },
        {
          permission: "bash",
          patterns: ["ls", "rm -rf ../outside/file", "cat /etc/passwd > /dev/null"],
          always: ["ls *", "rm *", "cat *"]
        }
      ])
      expect(fs.existsSync(box.path("outside/file"))).toBe(false) // allowed, so it ran
    }))

  it.scopedLive("a workdir outside the project is asked for", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      fs.mkdirSync(box.path("elsewhere"))
      const { context, asks } = makeContext()
      yield* run(tool, { command: "ls", workdir: "../elsewhere" }, context)
      expect(asks[0]).toMatchObject({ permission: "external_directory", patterns: [path.join(box.path("elsewhere"), "*")] })
      expect(asks[1]).toMatchObject({ permission: "bash", patterns: ["ls"] })
    }))

  it.scopedLive("a deny on `rm *` denies a chain that hides an rm, and nothing runs", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      fs.mkdirSync(box.path("project/x"))
      const { context, asks } = makeContext({ bash: { "*": "allow", "rm *": "deny" } })
      const error = yield* Effect.flip(run(tool, { command: "touch marker && ls && rm -rf x" }, context))
      expect(error).toBeInstanceOf(DeniedError)
      expect(error).toMatchObject({ pattern: "rm -rf x" })
      expect(fs.existsSync(box.path("project/x"))).toBe(true)
      expect(fs.existsSync(box.path("project/marker"))).toBe(false)
      expect(asks.map((ask) => ask.permission)).toEqual(["bash"])
    }))

  it.scopedLive("a deny is not dodged by spelling (an environment prefix, quotes, a backslash) or a wrapper", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      fs.mkdirSync(box.path("project/x"))
      const commands = [
        "X=1 rm -rf x",
        "\\rm -rf x",
        "'rm' -rf x",
        "ls && r\"m\" -rf x",
        "env -i; \"rm\" -r\\f x",
        "env A=1 rm -rf x",
        "nohup rm -rf x",
        "echo x | xargs rm -rf",
        "timeout 5 rm -rf x",
        "command rm -rf x",
        "bash -c 'rm -rf x'",
        "eval rm -rf x",
        "find . -name x -exec rm -rf {} +"
      ]
      for (const command of commands) {
        const { context } = makeContext({ bash: { "*": "allow", "rm *": "deny" } })
        const error = yield* Effect.flip(run(tool, { command }, context))
        expect(error, command).toBeInstanceOf(DeniedError)
        expect(fs.existsSync(box.path("project/x")), command).toBe(true)
      }
      const { context } = makeContext({ bash: { "*": "allow", "git push --force *": "deny" } })
      const error = yield* Effect.flip(run(tool, { command: "git push \"--force\" origin main" }, context))
      expect(error).toMatchObject({ _tag: "DeniedError", pattern: "git push --force origin main" })
    }))

  it.scopedLive("answering always for an env-prefixed command covers it next time", () =>
    Effect.gen(function*() {
      const command = "GREETING=hi sh -c 'echo $GREETING'"
      const model = ScriptedModel.make([
        [ScriptedModel.toolCall("bash", { command, description: "Greets" })],
        [ScriptedModel.toolCall("bash", { command, description: "Greets again" })],
        "Greeted twice."
      ])
      const runtime = yield* TestRuntime.make({ model, files: { "project/agent.json": { permission: { bash: "ask" } } } })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const permissions = yield* PermissionService
        const session = yield* store.create({ title: "always" })
        const running = yield* Effect.fork(
          (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "greet twice" }] })
        )
        let request = (yield* permissions.list())[0]
        while (request === undefined) {
          yield* Effect.sleep("5 millis")
          request = (yield* permissions.list())[0]
        }
        expect(request).toMatchObject({ permission: "bash", patterns: [command, "sh -c echo $GREETING", "echo $GREETING"] })
        expect(request.always).toEqual(["sh *", "GREETING=hi sh *", "echo *"])
        yield* permissions.reply({ requestID: request.id, reply: "always" })
        // the second, identical call is not asked again
        expect((yield* Fiber.join(running)).reason).toBe("completed")
        const outputs = (yield* store.messages(session.id))
          .flatMap((message) => message.parts)
          .filter((part): part is ToolPart => part.type === "tool")
          .map((part) => (part.state.status === "completed" ? part.state.output : part.state.status))
        expect(outputs).toEqual(["hi\n", "hi\n"])
      }).pipe(Effect.provide(runtime.layer))
    }), 30_000)

  it.scopedLive("a denied external directory stops before bash is asked", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup()
      const { context, asks } = makeContext({ "*": "allow", external_directory: "deny" })
      const error = yield* Effect.flip(run(tool, { command: "rm /etc/passwd" }, context))
      expect(error).toBeInstanceOf(DeniedError)
      expect(asks.map((ask) => ask.permission)).toEqual(["external_directory"])
    }))
})

describe("bash in the loop", () => {
  const toolParts = (parts: ReadonlyArray<{ type: string }>) => parts.filter((part): part is ToolPart => part.type === "tool")

  it.scopedLive("with bash {\"*\": allow, \"rm *\": deny} the model receives the deny message", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      fs.mkdirSync(box.path("project/build"))
      const model = ScriptedModel.make([
        [ScriptedModel.toolCall("bash", { command: "ls && rm -rf build", description: "Removes the build directory" })],
        "I am not allowed to remove it."
      ])
      const runtime = yield* TestRuntime.make({
        model,
        tools: [tool],
        files: { "project/agent.json": { permission: { bash: { "*": "allow", "rm *": "deny" } } } }
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const loop = yield* SessionLoop
        const session = yield* store.create({ title: "bash deny" })
        const outcome = yield* loop.prompt({ sessionID: session.id, parts: [{ type: "text", text: "clean the build" }] })
        expect(outcome.reason).toBe("completed")
        const [, step] = yield* store.messages(session.id)
        const state = toolParts(step!.parts)[0]!.state
        expect(state.status).toBe("error")
        const results = model.calls[1]!.prompt.filter((entry) => entry.role === "tool").flatMap((entry) => entry.content)
        expect(results[0]).toMatchObject({
          output: {
            type: "error-text",
            value: expect.stringMatching(/Blocked by the user's permission rules.*"rm \*"/s)
          }
        })
      }).pipe(Effect.provide(runtime.layer))
      expect(fs.existsSync(box.path("project/build"))).toBe(true)
    }))
})
