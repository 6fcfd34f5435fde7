import type { BusEventOf, PermissionRequest, SandboxConfig, ToolPart } from "@agent/domain"
import { ScriptedModel, TestInstance, TestRuntime, TestToolContext } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Logger, Scope, Stream } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { spawn } from "node:child_process"
import { Bus } from "../../src/runtime/Bus.js"
import { CommandRegistry } from "../../src/session/CommandRegistry.js"
import { ConfigService } from "../../src/config/ConfigService.js"
import { Instance } from "../../src/runtime/Instance.js"
import { Mcp } from "../../src/mcp/Mcp.js"
import { PermissionService } from "../../src/permission/PermissionService.js"
import { Sandbox } from "../../src/sandbox/Sandbox.js"
import { which } from "../../src/sandbox/Probe.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import type * as Tool from "../../src/tool/Tool.js"
import { ToolExecutionError } from "../../src/tool/Tool.js"
import * as Bash from "../../src/tools/Bash.js"
import { Truncation, toolOutputDirectory } from "../../src/tool/Truncation.js"
import { fixture } from "../mcp/helpers.js"

/**
 * The real sandbox (bubblewrap) around the real bash tool. CI installs bubblewrap, so these
 * run there; on a machine without it they are skipped, and the last test says why.
 */
const BWRAP = which("bwrap", process.env.PATH)
const real = BWRAP !== undefined || process.env.CI !== undefined

/**
 * The bash tool in a fresh test dir whose own `tmp/` is the system temp dir of the sandbox, so
 * that the rest of the test dir (under /tmp) is outside everything writable. `keepIdleMs` as the
 * layer takes it (unset: the default, a kept sandbox); `close` ends the runtime's sandbox layer.
 */
const setup = (
  options: { readonly files?: Record<string, string | object>; readonly env?: Record<string, string>; readonly keepIdleMs?: number } = {}
) =>
  Effect.gen(function*() {
    const box = yield* TestInstance.sandbox({
      ...(options.files ? { files: options.files } : {}),
      ...(options.env ? { env: options.env } : {})
    })
    fs.mkdirSync(box.path("tmp"))
    fs.mkdirSync(box.path("outside"))
    const instance = Layer.succeed(Instance, { ...box.instance, env: { ...box.instance.env, TMPDIR: box.path("tmp") } })
    const config = ConfigService.layerFromInfo({ config: {}, sources: [], warnings: [], directories: [], origin: () => undefined })
    const base = Layer.merge(instance, Bus.layer)
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const keep = options.keepIdleMs === undefined ? {} : { keepIdleMs: options.keepIdleMs }
    const deps = yield* Layer.buildWithScope(
      Layer.mergeAll(
        Sandbox.layerWith({ temporary: [box.path("tmp")], ...keep }),
        Truncation.layer.pipe(Layer.provide(config))
      ).pipe(Layer.provideMerge(base)),
      scope
    )
    const tool = yield* Effect.provide(Bash.make, deps)
    const bus = Context.get(deps, Bus)
    const blocked: Array<BusEventOf<"sandbox.blocked">["properties"]> = []
    yield* (yield* bus.subscribe({ types: ["sandbox.blocked"] })).pipe(
      Stream.runForEach((event) => Effect.sync(() => blocked.push(event.properties))),
      Effect.forkScoped
    )
    return { box, tool, blocked, close: Scope.close(scope, Exit.void) }
  })

/** The absent config names of a project with none: each is held by a placeholder while a sandbox relies on it. */
const ABSENT = ["opencode.json", ".agent", ".opencode", ".claude", ".agents", "agent.jsonc", "opencode.jsonc"]

const run = (tool: Tool.AnyTool, command: string, sandbox?: SandboxConfig, extra: Record<string, unknown> = {}) =>
  tool.execute(
    { command, description: "Runs a sandbox test", ...extra },
    TestToolContext.make({ sessionID: "ses_sandbox", ...(sandbox ? { sandbox } : {}) }).context
  )

const read = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined)

describe.runIf(real)("sandbox: files", () => {
  it.scopedLive("a write outside the project fails, the file does not appear, and the model and the bus are told", () =>
    Effect.gen(function*() {
      const { blocked, box, tool } = yield* setup()
      const target = box.path("outside/escaped.txt")
      const result = yield* run(tool, `echo data > "${target}"; echo "exit $?"`)
      expect(fs.existsSync(target)).toBe(false)
      expect(result.output).toContain("Read-only file system")
      expect(result.output).toContain("exit 1")
      expect(result.output).toContain(`<sandbox>\nThe sandbox blocked writing to ${target}`)
      expect(result.output).toContain("`unsandboxed: true`")
      expect(result.metadata).toMatchObject({ exit: 0, sandbox: "workspace-write", blocked: [{ kind: "write", target }] })
      yield* Effect.sleep("50 millis")
      expect(blocked).toEqual([{ tool: "bash", kind: "write", target, sessionID: "ses_sandbox", callID: "call_test" }])
      // The home directory is outside too.
      yield* run(tool, `touch "${box.instance.home}/x"`)
      expect(fs.existsSync(path.join(box.instance.home, "x"))).toBe(false)
    }))

  it.scopedLive("writes inside work: the project, the temp dirs, the session temp dir and the tool-output dir", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup()
      const instance = box.instance
      const scratch = path.join(instance.paths.tmp, `sandbox-test-${process.pid}-${Date.now()}`)
      const output = path.join(toolOutputDirectory(instance), "from-sandbox.txt")
      const result = yield* run(
        tool,
        `mkdir -p src/deep && echo a > src/deep/a.txt && echo b > "$TMPDIR/b.txt" && echo c > "${scratch}" && echo d > "${output}" && echo ok`
      )
      expect(result.output).toBe("ok\n")
      expect(result.metadata).toMatchObject({ exit: 0, sandbox: "workspace-write" })
      expect(result.metadata?.blocked).toBeUndefined()
      expect(read(box.path("project/src/deep/a.txt"))).toBe("a\n")
      expect(read(box.path("tmp/b.txt"))).toBe("b\n")
      expect(read(scratch)).toBe("c\n")
      expect(read(output)).toBe("d\n")
      fs.rmSync(scratch)
    }))

  it.scopedLive.each([
    ["a sandbox per command", 0],
    ["a kept sandbox (the default)", undefined]
  ] as const)(".git and the agent's config and instructions cannot be changed or created from bash; nothing is left behind (%s)", ([, keepIdleMs]) =>
    Effect.gen(function*() {
      const { box, close, tool } = yield* setup({
        ...(keepIdleMs === undefined ? {} : { keepIdleMs }),
        files: {
          "project/.git/config": "[core]\n",
          "project/agent.json": { permission: { bash: "ask" } },
          "project/AGENTS.md": "Be careful.\n"
        }
      })
      const result = yield* run(
        tool,
        [
          `echo "[alias]" >> .git/config`,
          `echo '{"permission":"allow"}' > agent.json`,
          "rm -f agent.json",
          "mv agent.json moved.json",
          "echo more >> AGENTS.md",
          "echo '{}' > opencode.json",
          "mkdir -p .agent/tools && echo 'export default {}' > .agent/tools/evil.js",
          "ls -a",
          "echo done"
        ].join("; ")
      )
      expect(result.output).toContain("done")
      expect(read(box.path("project/.git/config"))).toBe("[core]\n")
      expect(JSON.parse(read(box.path("project/agent.json"))!)).toEqual({ permission: { bash: "ask" } })
      expect(read(box.path("project/AGENTS.md"))).toBe("Be careful.\n")
      expect(fs.existsSync(box.path("project/moved.json"))).toBe(false)
      const targets = (result.metadata?.blocked as Array<{ target: string }>).map((entry) => entry.target)
      for (const file of [".git/config", "agent.json", "AGENTS.md", "opencode.json"]) expect(targets).toContain(box.path(`project/${file}`))
      expect(targets.some((target) => target.startsWith(box.path("project/.agent")))).toBe(true)
      if (keepIdleMs === 0) {
        // Held while the command ran, gone once it ended.
        for (const absent of ABSENT) expect(fs.existsSync(box.path(`project/${absent}`)), absent).toBe(false)
      } else {
        // Held while the kept sandbox lives (empty, so the config loader ignores them), and still not creatable
        // by the next command in it.
        for (const absent of ABSENT) expect(fs.readdirSync(box.path(`project/${absent}`)), absent).toEqual([])
        const again = yield* run(tool, "echo '{}' > opencode.json; mkdir -p .agent/tools; echo done")
        expect(again.output).toContain("done")
        expect(fs.readdirSync(box.path("project/.agent"))).toEqual([])
        expect(fs.statSync(box.path("project/opencode.json")).isDirectory()).toBe(true)
        // Gone with the runtime's sandbox.
        yield* close
        for (const absent of ABSENT) expect(fs.existsSync(box.path(`project/${absent}`)), absent).toBe(false)
      }
    }))

  it.scopedLive("a protected path listed in `writable` can be changed: configured otherwise", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup({ files: { "project/.git/config": "[core]\n" } })
      const result = yield* run(tool, `echo "[user]" >> .git/config && echo ok`, { writable: [".git"] })
      expect(result.output).toBe("ok\n")
      expect(read(box.path("project/.git/config"))).toBe("[core]\n[user]\n")
    }))

  it.scopedLive("read-only writes nothing; `readonly` paths stay read-only inside the project; `writable` adds paths", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup({ files: { "project/vendor/lib.js": "lib\n" } })
      yield* run(tool, "touch made-read-only", { mode: "read-only" })
      expect(fs.existsSync(box.path("project/made-read-only"))).toBe(false)
      yield* run(tool, `touch vendor/new made-here "${box.path("outside")}/cache-file"`, { readonly: ["vendor"], writable: [box.path("outside")] })
      expect(fs.existsSync(box.path("project/vendor/new"))).toBe(false)
      expect(fs.existsSync(box.path("project/made-here"))).toBe(true)
      expect(fs.existsSync(box.path("outside/cache-file"))).toBe(true)
    }))
})

/** A local HTTP server on the host that counts the requests it gets. */
const localServer = Effect.acquireRelease(
  Effect.async<{ readonly server: http.Server; readonly port: number; readonly requests: Array<string> }>((resume) => {
    const requests: Array<string> = []
    const server = http.createServer((request, response) => {
      requests.push(request.url ?? "")
      response.end("hello from the host\n")
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, port: (server.address() as { port: number }).port, requests })))
  }),
  ({ server }) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
)

/** A client that uses the proxy the environment names, as curl, git, npm and pip do. */
const fetchThroughEnv = (url: string) =>
  `node -e '
const http = require("http"); const proxy = process.env.HTTP_PROXY ? new URL(process.env.HTTP_PROXY) : undefined
const target = new URL(${JSON.stringify(url)})
const request = proxy
  ? http.request({ host: proxy.hostname, port: proxy.port, path: target.href, headers: { host: target.host } })
  : http.request(target)
request.on("response", (response) => { let body = ""; response.on("data", (c) => body += c); response.on("end", () => { console.log(response.statusCode, body.trim()); process.exit(response.statusCode === 200 ? 0 : 8) }) })
request.on("error", (error) => { console.log(error.message); process.exit(7) })
request.end()'`

describe.runIf(real)("sandbox: network", () => {
  it.scopedLive("network false: a connection to a server on this machine fails, and the model is told", () =>
    Effect.gen(function*() {
      const { blocked, tool } = yield* setup()
      const { port, requests } = yield* localServer
      const result = yield* run(tool, fetchThroughEnv(`http://127.0.0.1:${port}/x`))
      expect(result.metadata?.exit).toBe(7)
      expect(result.output).toContain(`connect ECONNREFUSED 127.0.0.1:${port}`)
      expect(result.output).toContain(`The sandbox blocked a connection to 127.0.0.1:${port}`)
      expect(requests).toEqual([])
      yield* Effect.sleep("50 millis")
      expect(blocked).toMatchObject([{ kind: "network", target: `127.0.0.1:${port}` }])
    }))

  it.scopedLive("an allowed host is reached through the proxy; another is refused, named, and published", () =>
    Effect.gen(function*() {
      const { blocked, tool } = yield* setup()
      const { port, requests } = yield* localServer
      const bridgesBefore = new Set(proxyBridges())
      const allowed = yield* run(tool, fetchThroughEnv(`http://127.0.0.1:${port}/allowed`), { network: ["127.0.0.1"] })
      expect(allowed.output).toBe("200 hello from the host\n")
      expect(requests).toEqual(["/allowed"])

      const refused = yield* run(tool, fetchThroughEnv(`http://localhost:${port}/refused`), { network: ["registry.npmjs.org", "*.example.com"] })
      expect(refused.metadata?.exit).toBe(8)
      expect(refused.output).toContain("403 The agent's sandbox blocked this connection")
      expect(refused.output).toContain(`The sandbox blocked a connection to localhost:${port}`)
      expect(refused.output).toContain("only registry.npmjs.org, *.example.com (through a proxy)")
      expect(requests).toEqual(["/allowed"])
      yield* Effect.sleep("50 millis")
      expect(blocked).toMatchObject([{ kind: "network", target: `localhost:${port}` }])

      // A program that ignores the proxy reaches nothing at all.
      const direct = yield* run(tool, `HTTP_PROXY= ${fetchThroughEnv(`http://127.0.0.1:${port}/direct`)}`, { network: ["127.0.0.1"] })
      expect(direct.metadata?.exit).toBe(7)
      expect(requests).toEqual(["/allowed"])

      // Each command's bridge (socat, inside its sandbox) ends with it: none is left listening.
      const left = () => proxyBridges().filter((pid) => !bridgesBefore.has(pid))
      for (let waited = 0; waited < 5_000 && left().length > 0; waited += 50) yield* Effect.sleep("50 millis")
      expect(left()).toEqual([])
    }))

  it.scopedLive("network true: the host network as it is", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup()
      const { port, requests } = yield* localServer
      const result = yield* run(tool, fetchThroughEnv(`http://127.0.0.1:${port}/open`), { network: true })
      expect(result.output).toBe("200 hello from the host\n")
      expect(requests).toEqual(["/open"])
    }))
})

/** The pids of the proxy bridges (socat listening inside a sandbox) on this machine. */
const proxyBridges = (): Array<string> =>
  fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).filter((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("TCP-LISTEN:3128")
    } catch {
      return false
    }
  })

describe("sandbox: what the model is told", () => {
  it.scopedLive("the bash description explains the agent's sandbox and the way out; nothing with the sandbox off", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup()
      const agent = (sandbox?: SandboxConfig) => TestToolContext.make(sandbox ? { sandbox } : {}).context.agent
      const text = yield* tool.describe!(agent())
      expect(text).toContain("Sandbox: commands run in an OS sandbox (workspace-write)")
      expect(text).toContain("network: none")
      expect(text).toContain("`unsandboxed: true`")
      expect(yield* tool.describe!(agent({ mode: "read-only", network: ["registry.npmjs.org"] }))).toContain(
        "(read-only) where this machine supports one. They can read everything, write nothing; the project's"
      )
      const off = yield* tool.describe!(agent({ mode: "off" }))
      expect(off).not.toContain("Sandbox:")
      expect(off).not.toMatch(/\n{3}/)
      expect(off).toBe(tool.description)
    }))
})

describe("sandbox: enforce", () => {
  it.scopedLive("required without bubblewrap on PATH: the command fails with the reason and does not run", () =>
    Effect.gen(function*() {
      const { box, tool } = yield* setup({ env: { PATH: "/nonexistent" } })
      for (const sandbox of [{ mode: "workspace-write" }, { enforce: "required" }] as const) {
        const error = yield* Effect.flip(run(tool, "echo ran > ran.txt", sandbox))
        expect(error).toBeInstanceOf(ToolExecutionError)
        expect(error.message).toContain('The sandbox is required (sandbox.enforce is "required") but cannot be set up on this machine')
        expect(error.message).toContain("bubblewrap (bwrap) is not installed or not on PATH")
        expect(error.message).toContain("`unsandboxed: true`")
        expect(fs.existsSync(box.path("project/ran.txt"))).toBe(false)
      }
    }))

  it.scopedLive("preferred (the default) without bubblewrap: commands run unsandboxed, with one warning per runtime", () =>
    Effect.gen(function*() {
      const warnings: Array<string> = []
      const logger = Logger.make(({ logLevel, message }) => {
        if (logLevel._tag === "Warning") warnings.push(Array.isArray(message) ? message.join(" ") : String(message))
      })
      const { box, tool } = yield* setup({ env: { PATH: "/nonexistent" } })
      for (const file of ["one.txt", "two.txt"]) {
        const result = yield* run(tool, `echo ran > ${file}`).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
        expect(result.metadata?.sandbox).toBe("unavailable")
        expect(fs.existsSync(box.path(`project/${file}`))).toBe(true)
      }
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatch(/^sandbox: commands run unsandboxed: bubblewrap \(bwrap\) is not installed or not on PATH/)
    }))
})

describe.runIf(real)("sandbox: processes", () => {
  it.scopedLive("a command aborted while the machine is probed leaves the probe to the others", () =>
    Effect.gen(function*() {
      // A bwrap that takes its time, so the probe is still running when the first caller goes away.
      const box = yield* TestInstance.sandbox({})
      const bin = box.path("slow-bin")
      fs.mkdirSync(bin)
      fs.writeFileSync(path.join(bin, "bwrap"), `#!/bin/sh\nsleep 0.4\nexec ${BWRAP ?? "/usr/bin/bwrap"} "$@"\n`, { mode: 0o755 })
      const instance = { ...box.instance, env: { ...box.instance.env, PATH: `${bin}:${process.env.PATH}` } }
      const sandbox = yield* Effect.provide(Sandbox, yield* Layer.build(Sandbox.layer.pipe(Layer.provide(Layer.merge(Layer.succeed(Instance, instance), Bus.layer)))))
      const first = yield* Effect.fork(sandbox.plan(undefined))
      const second = yield* Effect.fork(sandbox.plan(undefined))
      yield* Effect.sleep("100 millis")
      yield* Fiber.interrupt(first)
      const plan = yield* Fiber.join(second)
      expect(plan.active).toBe(true)
    }))

  it.scopedLive("a sandbox prepared while another holds the placeholders still starts after that one ends", () =>
    Effect.gen(function*() {
      // The project has no .agent/ nor opencode.json: each sandbox protects them with a placeholder.
      const box = yield* TestInstance.sandbox({})
      // A sandbox per command: these are the launches spawned here.
      const layer = Sandbox.layerWith({ keepIdleMs: 0 }).pipe(Layer.provide(Layer.merge(Layer.succeed(Instance, box.instance), Bus.layer)))
      const sandbox = yield* Effect.provide(Sandbox, yield* Layer.build(layer))
      const plan = yield* sandbox.plan(undefined)
      expect(plan.active).toBe(true)
      const request = { plan, argv: ["/bin/sh", "-c", "echo ran"] as const, cwd: box.path("project"), env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, keeper: "wait" as const, tool: "test" }
      const first = yield* sandbox.prepare(request)
      const second = yield* sandbox.prepare(request)
      // The first ends before the second's process starts: what it made must not vanish under the second.
      yield* first.release
      const output = yield* Effect.async<{ code: number | null; out: string }>((resume) => {
        const child = spawn(second.file, [...second.args], { cwd: box.path("project"), env: second.env, stdio: ["ignore", "pipe", "pipe", "pipe"] })
        let out = ""
        child.stdout!.on("data", (chunk) => (out += chunk))
        child.stderr!.on("data", (chunk) => (out += chunk))
        ;(child.stdio[3] as NodeJS.ReadableStream).resume()
        child.on("close", (code) => resume(Effect.succeed({ code, out })))
      })
      yield* second.release
      expect(output.out).toBe("ran\n")
      expect(output.code).toBe(0)
      // And once both are gone, so are the placeholders.
      expect(fs.existsSync(box.path("project/.agent"))).toBe(false)
    }))

  it.scopedLive("a background job outlives its command, as it would unsandboxed; what the sandbox held goes with it", () =>
    Effect.gen(function*() {
      // A sandbox per command: it ends with the job (a kept sandbox's placeholders live as long as it does: Kept.test.ts).
      const { box, tool } = yield* setup({ keepIdleMs: 0 })
      const started = Date.now()
      const result = yield* run(tool, "(sleep 0.5; echo later > bg.txt) > /dev/null 2>&1 & echo started")
      expect(result.output).toBe("started\n")
      expect(Date.now() - started).toBeLessThan(2_000)
      expect(fs.existsSync(box.path("project/bg.txt"))).toBe(false)
      for (let waited = 0; waited < 5_000 && !fs.existsSync(box.path("project/bg.txt")); waited += 50) yield* Effect.sleep("50 millis")
      expect(read(box.path("project/bg.txt"))).toBe("later\n")
      for (let waited = 0; waited < 5_000 && fs.existsSync(box.path("project/agent.json")); waited += 50) yield* Effect.sleep("50 millis")
      expect(fs.existsSync(box.path("project/agent.json"))).toBe(false)
    }))
})

/** Answers permission asks as they come, recording them. */
const answering = (reply: (request: PermissionRequest) => "once" | "reject" | undefined) =>
  Effect.gen(function*() {
    const permissions = yield* PermissionService
    const asked: Array<PermissionRequest> = []
    yield* (yield* (yield* Bus).subscribe({ types: ["permission.asked"] })).pipe(
      Stream.runForEach((event) =>
        Effect.gen(function*() {
          asked.push(event.properties)
          const answer = reply(event.properties)
          if (answer) yield* permissions.reply({ requestID: event.properties.id, reply: answer })
        })
      ),
      Effect.forkScoped
    )
    return asked
  })

const toolOutputs = (parts: ReadonlyArray<{ type: string }>) =>
  parts.filter((part): part is ToolPart => part.type === "tool").map((part) =>
    part.state.status === "completed" ? part.state.output : part.state.status === "error" ? part.state.error : part.state.status
  )

describe.runIf(real)("sandbox: escalation and permissions", () => {
  it.scopedLive("a blocked command tells the model how to escalate; `unsandboxed: true` is asked of a person and then runs outside", () =>
    Effect.gen(function*() {
      const command = "printf done > .git/escalated && echo wrote"
      const model = ScriptedModel.make([
        [ScriptedModel.toolCall("bash", { command, description: "Writes into .git" })],
        [ScriptedModel.toolCall("bash", { command, description: "Writes into .git", unsandboxed: true })],
        "Done."
      ])
      const runtime = yield* TestRuntime.make({ model })
      yield* Effect.gen(function*() {
        const asked = yield* answering(() => "once")
        const store = yield* SessionStore
        const session = yield* store.create({ title: "escalation" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "write it" }] })
        expect(outcome.reason).toBe("completed")
        const [first, second] = toolOutputs((yield* store.messages(session.id)).flatMap((message) => message.parts))
        expect(first).toContain("The sandbox blocked writing to")
        expect(first).toContain("`unsandboxed: true`")
        expect(second).toBe("wrote\n")
        expect(asked.map(({ permission, patterns, requiresPerson }) => ({ permission, patterns, requiresPerson }))).toEqual([
          { permission: "sandbox_escape", patterns: ["printf done > .git/escalated", "echo wrote"], requiresPerson: "the command asks to run outside the sandbox" }
        ])
        expect(read(runtime.box.path("project/.git/escalated"))).toBe("done")
      }).pipe(Effect.provide(runtime.layer))
    }))

  it.scopedLive("--auto-approve does not answer the ask to leave the sandbox", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        [ScriptedModel.toolCall("bash", { command: "touch .git/x", description: "Writes .git", unsandboxed: true })],
        "never"
      ])
      const runtime = yield* TestRuntime.make({ model })
      yield* Effect.gen(function*() {
        const permissions = yield* PermissionService
        const store = yield* SessionStore
        const session = yield* store.create({ title: "auto" })
        const running = yield* Effect.fork(
          (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }], autoApprove: true })
        )
        let pending = yield* permissions.list()
        while (pending.length === 0) {
          yield* Effect.sleep("10 millis")
          pending = yield* permissions.list()
        }
        yield* Effect.sleep("300 millis")
        expect((yield* permissions.list()).map((request) => request.permission)).toEqual(["sandbox_escape"])
        yield* permissions.reply({ requestID: pending[0]!.id, reply: "reject" })
        expect((yield* Fiber.join(running)).reason).toBe("rejected")
        expect(fs.existsSync(runtime.box.path("project/.git/x"))).toBe(false)
      }).pipe(Effect.provide(runtime.layer))
    }))

  it.scopedLive("bash {\"*\": \"ask\", \"sandboxed\": \"allow\"}: sandboxed commands run without asking, unsandboxed ones ask", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        [ScriptedModel.toolCall("bash", { command: "echo inside", description: "Sandboxed" })],
        [ScriptedModel.toolCall("bash", { command: "echo outside", description: "Unsandboxed", unsandboxed: true })],
        "Done."
      ])
      const runtime = yield* TestRuntime.make({
        model,
        files: { "project/agent.json": { permission: { bash: { "*": "ask", sandboxed: "allow", "rm *": "deny" } } } }
      })
      yield* Effect.gen(function*() {
        const asked = yield* answering(() => "once")
        const store = yield* SessionStore
        const session = yield* store.create({ title: "sandboxed allow" })
        const outcome = yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }] })
        expect(outcome.reason).toBe("completed")
        expect(toolOutputs((yield* store.messages(session.id)).flatMap((message) => message.parts))).toEqual(["inside\n", "outside\n"])
        expect(asked.map(({ permission, patterns }) => ({ permission, patterns }))).toEqual([
          { permission: "bash", patterns: ["echo outside"] },
          { permission: "sandbox_escape", patterns: ["echo outside"] }
        ])
      }).pipe(Effect.provide(runtime.layer))
    }))
})

describe.runIf(real)("sandbox: every process the agent starts", () => {
  it.scopedLive("a command's !-shell runs in the sandbox of the command's agent", () =>
    Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({
        model: ScriptedModel.make([]),
        files: { "project/agent.json": { command: { status: { template: "State: !`echo changed > .git/HEAD; echo checked`" } } } }
      })
      yield* Effect.gen(function*() {
        const expanded = yield* (yield* CommandRegistry).expand({ command: "status" })
        const text = expanded.parts.map((part) => ("text" in part ? part.text : "")).join("")
        expect(text).toContain("checked")
        expect(text).toContain(`[the sandbox blocked writing to ${runtime.box.path("project/.git/HEAD")}]`)
        expect(fs.existsSync(runtime.box.path("project/.git/HEAD"))).toBe(false)
      }).pipe(Effect.provide(runtime.layer))
    }))

  it.scopedLive("a custom tool's context.shell runs in the agent's sandbox", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[ScriptedModel.toolCall("probe", {})], "Done."])
      const runtime = yield* TestRuntime.make({
        model,
        files: {
          "project/.agent/tools/probe.js": `export default {
  description: "Tries to write outside the project",
  async execute(args, context) {
    const result = await context.shell("echo x > ../outside.txt; echo inside > made.txt; echo $?")
    return JSON.stringify({ sandboxed: result.sandboxed, blocked: result.blocked, stdout: result.stdout })
  }
}`
        },
        sandbox: (box) => Sandbox.layerWith({ temporary: [box.path("project/.tmp")] })
      })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "custom" })
        yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }] })
        const [output] = toolOutputs((yield* store.messages(session.id)).flatMap((message) => message.parts))
        expect(JSON.parse(output!)).toEqual({ sandboxed: true, blocked: [runtime.box.path("outside.txt")], stdout: "0\n" })
        expect(fs.existsSync(runtime.box.path("outside.txt"))).toBe(false)
        expect(read(runtime.box.path("project/made.txt"))).toBe("inside\n")
      }).pipe(Effect.provide(runtime.layer))
    }))

  it.scopedLive("an MCP stdio server runs in the sandbox only when configured so", () =>
    Effect.gen(function*() {
      const server = (pidFile: string, sandbox?: boolean) => ({
        type: "local",
        command: ["node", fixture, "--pid-file", pidFile],
        ...(sandbox === undefined ? {} : { sandbox })
      })
      const runtime = yield* TestRuntime.make({
        model: ScriptedModel.make([]),
        files: {
          "project/agent.json": {
            mcp: {
              inside: server("@BOX@/project/inside.pid", true),
              outside: server("@BOX@/outside.pid", true),
              plain: server("@BOX@/plain.pid")
            }
          }
        },
        sandbox: (box) => Sandbox.layerWith({ temporary: [box.path("tmp")] })
      })
      const box = runtime.box
      // The layer is built (and the config read) when provided, below.
      fs.writeFileSync(box.path("project/agent.json"), fs.readFileSync(box.path("project/agent.json"), "utf8").replaceAll("@BOX@", box.root))
      yield* Effect.gen(function*() {
        const mcp = yield* Mcp
        yield* mcp.ready("10 seconds")
        const statuses = yield* mcp.status()
        expect(statuses.inside).toEqual({ status: "connected" })
        expect(statuses.plain).toEqual({ status: "connected" })
        expect(statuses.outside?.status).toBe("failed")
        // Node's EROFS error, whose last lines the status keeps.
        expect(statuses.outside?.error).toContain(`path: '${box.path("outside.pid")}'`)
        expect(fs.existsSync(box.path("project/inside.pid"))).toBe(true)
        expect(fs.existsSync(box.path("plain.pid"))).toBe(true)
        expect(fs.existsSync(box.path("outside.pid"))).toBe(false)
        const ok = (yield* mcp.tools()).find((tool) => tool.id === "inside_ok")!
        const result = yield* ok.execute({ text: "hi" }, TestToolContext.make().context)
        expect(result.output).toBe("ok: hi")
      }).pipe(Effect.provide(runtime.layer))
    }), 30_000)

  it.scopedLive("makeAppLayer takes another backend: the bash tool runs what it prepares", () =>
    Effect.gen(function*() {
      const prepared: Array<ReadonlyArray<string>> = []
      const recording = Layer.effect(
        Sandbox,
        Effect.gen(function*() {
          const live = yield* Sandbox
          return {
            ...live,
            prepare: (request) =>
              Effect.sync(() => prepared.push(request.argv)).pipe(
                Effect.zipRight(live.prepare({ ...request, argv: [request.argv[0], "-c", `echo via-backend; ${request.argv[2]}`] }))
              )
          } satisfies Context.Tag.Service<Sandbox>
        })
      ).pipe(Layer.provide(Sandbox.layer))
      const model = ScriptedModel.make([[ScriptedModel.toolCall("bash", { command: "echo hi", description: "Greets" })], "Done."])
      const runtime = yield* TestRuntime.make({ model, sandbox: () => recording })
      yield* Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "backend" })
        yield* (yield* SessionLoop).prompt({ sessionID: session.id, parts: [{ type: "text", text: "go" }] })
        expect(toolOutputs((yield* store.messages(session.id)).flatMap((message) => message.parts))).toEqual(["via-backend\nhi\n"])
        expect(prepared).toEqual([[expect.stringMatching(/sh$/), "-c", "echo hi"]])
      }).pipe(Effect.provide(runtime.layer))
    }))
})

describe.runIf(!real)("sandbox: this machine", () => {
  it.scopedLive("without bubblewrap (and not in CI) the sandbox tests above are skipped, and the check says why", () =>
    Effect.gen(function*() {
      const { tool } = yield* setup()
      const result = yield* run(tool, "true")
      expect(result.metadata?.sandbox).toBe("unavailable")
    }))
})
