import { Agent, type BusEvent, type MessageID, type SessionID } from "@agent/domain"
import { DeniedError } from "@agent/domain"
import { TestInstance, TestNet } from "@agent/testing"
import { expect } from "@effect/vitest"
import { Context, Duration, Effect, Exit, Layer, Scope, Stream } from "effect"
import { spawn } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Bus } from "../../src/runtime/Bus.js"
import { ConfigService } from "../../src/config/ConfigService.js"
import { Instance } from "../../src/runtime/Instance.js"
import { Mcp } from "../../src/mcp/Mcp.js"
import * as Tool from "../../src/tool/Tool.js"

const core = fileURLToPath(new URL("../../", import.meta.url))

/** The installed MCP servers and the failure fixture, as commands. */
export const everythingBin = path.join(core, "node_modules/.bin/mcp-server-everything")
export const filesystemBin = path.join(core, "node_modules/.bin/mcp-server-filesystem")
export const everythingEntry = path.join(core, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
export const fixture = path.join(core, "test/mcp/fixtures/server.mjs")
export const fixtureCommand = (...args: Array<string>) => ["node", fixture, ...args]

export interface McpHarness {
  readonly mcp: Mcp["Type"]
  readonly box: TestInstance.Sandbox
  /** `mcp.status` and `mcp.tools.changed` events, in order, from before the layer was built. */
  readonly events: Array<BusEvent>
  /** Closes the layer's scope (servers are stopped); the test's scope would do it anyway. */
  readonly close: Effect.Effect<void>
  /** How long building the layer took. */
  readonly buildMs: number
}

/**
 * The `Mcp` layer over a fresh sandbox whose project config is `config` (e.g. `{mcp: {...}}`),
 * with its own bus. The sandbox is removed and the servers stopped when the test's scope closes.
 */
export const startMcp = (config: object, env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const box = yield* TestInstance.sandbox({ files: { "project/agent.json": config }, env })
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const bus = yield* Effect.provide(Bus, Bus.layer)
    const events: Array<BusEvent> = []
    const stream = yield* bus.subscribe({ types: ["mcp.status", "mcp.tools.changed"] })
    yield* Effect.forkScoped(Stream.runForEach(stream, (event) => Effect.sync(() => events.push(event))))
    const started = Date.now()
    const context = yield* Layer.buildWithScope(
      Mcp.layer.pipe(
        Layer.provide(ConfigService.layer),
        Layer.provide(Layer.succeed(Instance, box.instance)),
        Layer.provide(Layer.succeed(Bus, bus))
      ),
      scope
    ).pipe(Effect.orDie)
    const buildMs = Date.now() - started
    const harness: McpHarness = {
      mcp: Context.get(context, Mcp),
      box,
      events,
      close: Scope.close(scope, Exit.void),
      buildMs
    }
    return harness
  })

type Ask = Parameters<Tool.ToolContext["ask"]>[0]

/** A tool context that records asks (denying `deny`) and progress updates. */
export const makeContext = (options: { readonly deny?: ReadonlyArray<string>; readonly abort?: AbortSignal } = {}) => {
  const asked: Array<Ask> = []
  const updates: Array<{ readonly title?: string; readonly metadata?: Record<string, unknown> }> = []
  const context: Tool.ToolContext = {
    sessionID: "ses_test" as SessionID,
    messageID: "msg_test" as MessageID,
    callID: "call_1",
    agent: new Agent({ name: "build", mode: "primary", native: true, permission: [], options: {} }),
    abort: options.abort ?? new AbortController().signal,
    ask: (request) =>
      Effect.suspend(() => {
        asked.push(request)
        return options.deny?.includes(request.permission)
          ? Effect.fail(new DeniedError({ permission: request.permission, pattern: "*", rules: [] }))
          : Effect.void
      }),
    rules: [],
    metadata: (update) => Effect.sync(() => void updates.push(update))
  }
  return { context, asked, updates }
}

/** The tool `id` among the server tools; fails the test when it is missing. */
export const toolById = (mcp: Mcp["Type"], id: string) =>
  Effect.gen(function*() {
    const tools = yield* mcp.tools()
    const tool = tools.find((candidate) => candidate.id === id)
    expect(tool, `${id} among ${tools.map((t) => t.id).join(", ")}`).toBeDefined()
    return tool!
  })

/** Decodes and runs a tool as the loop does. */
export const runTool = (tool: Tool.AnyTool, input: unknown, context: Tool.ToolContext) =>
  Tool.decodeInput(tool, input).pipe(Effect.flatMap((params) => tool.execute(params, context)))

/** Polls `check` every 25 ms until it returns true, failing the test after `timeout`. */
export const eventually = <E, R>(
  what: string,
  check: Effect.Effect<boolean, E, R>,
  timeout: Duration.DurationInput = "10 seconds"
) =>
  Effect.gen(function*() {
    const deadline = Date.now() + Duration.toMillis(timeout)
    for (;;) {
      if (yield* check) return
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for: ${what}`))
      yield* Effect.sleep("25 millis")
    }
  })

export const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

export const freePort = TestNet.freePort

/**
 * Starts the everything server over HTTP (`streamableHttp` or `sse`) on a free port as a
 * child process, and kills it when the scope closes.
 */
export const startEverythingHttp = (mode: "streamableHttp" | "sse") =>
  Effect.gen(function*() {
    const port = yield* freePort
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(process.execPath, [everythingEntry, mode], {
          env: { ...process.env, PORT: String(port) },
          stdio: ["ignore", "pipe", "pipe"]
        })
      ),
      (child) =>
        Effect.async<void>((resume) => {
          if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
          child.once("exit", () => resume(Effect.void))
          child.kill("SIGKILL")
        })
    )
    yield* Effect.async<void, Error>((resume) => {
      let output = ""
      const onData = (chunk: Buffer) => {
        output += chunk.toString()
        if (/listening on port|running on port/i.test(output)) resume(Effect.void)
      }
      child.stderr!.on("data", onData)
      child.stdout!.on("data", () => {})
      child.once("exit", (code) => resume(Effect.fail(new Error(`everything (${mode}) exited with ${code}: ${output}`))))
    }).pipe(Effect.timeout("20 seconds"), Effect.orDie)
    return { port, pid: child.pid!, base: `http://127.0.0.1:${port}` }
  })
