import type { SandboxConfig, SessionID } from "@agent/domain"
import { Context, Effect, ExecutionStrategy, Exit, Fiber, Layer, Ref, Schema, Scope } from "effect"
import type { ChildProcess } from "node:child_process"
import type { Readable } from "node:stream"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Bus } from "../runtime/Bus.js"
import { Instance, type InstanceInfo } from "../runtime/Instance.js"
import { bwrapArgs, bwrapReports, keeperReports, NO_PROXY_VARIABLES, proxyEnv, SYNC_FD } from "./Bwrap.js"
import { isWithin, type Layout, layout } from "./Layout.js"
import { type Holding, Placeholders } from "./Placeholders.js"
import * as NetworkProxy from "./NetworkProxy.js"
import { type Capabilities, probe } from "./Probe.js"
import { type Blocked, blockedWrites, networkFailures } from "./Report.js"
import { type KeptCommand, type KeptHandlers, KeptSandbox, keepIdleMsOf, retireHolders } from "./KeptSandbox.js"
import { SUPERVISOR_SCRIPT } from "./Supervisor.js"
import { describeNetwork, resolveSettings, type SandboxSettings } from "./Settings.js"
import { toolOutputDirectory } from "../tool/Truncation.js"

export type { Blocked } from "./Report.js"
export type { SandboxSettings } from "./Settings.js"

/** The sandbox is required and cannot be set up here; the message says why and what to do. */
export class SandboxUnavailable extends Schema.TaggedError<SandboxUnavailable>()("SandboxUnavailable", {
  reason: Schema.String
}) {
  override get message() {
    return `The sandbox is required (sandbox.enforce is "required") but cannot be set up on this machine: ${this.reason}. ` +
      `The command did not run. Tell the user: they can fix this (\`agent sandbox check\` says what is missing) or set ` +
      `sandbox.enforce to "preferred" to run commands unsandboxed where the sandbox cannot work. To run this one command ` +
      "outside the sandbox, call the tool again with `unsandboxed: true`; the user is asked to approve it."
  }
}

/** How commands of one agent will run. */
export interface SandboxPlan {
  readonly settings: SandboxSettings
  /** Commands run in the sandbox. */
  readonly active: boolean
  /** Why the sandbox cannot be used here although its mode is not `off`. */
  readonly unavailable?: string
}

export interface SandboxRequest {
  readonly plan: SandboxPlan
  /** Run outside the sandbox: an escalation the user approved. */
  readonly unsandboxed?: boolean
  /** The program and its arguments. */
  readonly argv: readonly [string, ...Array<string>]
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  /**
   * `wait`: a shell command; its exit status comes on fd 3 and the sandbox lives on while the
   * command's background jobs do. `exec`: a long-lived program (an MCP server).
   */
  readonly keeper: "wait" | "exec"
  /** Who runs it, for the `sandbox.blocked` event. */
  readonly tool: string
  readonly sessionID?: SessionID
  readonly callID?: string
}

/** How to start one process, sandboxed or not, and what to do around it. */
export interface Launch {
  readonly sandboxed: boolean
  readonly file: string
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  /** fd 3 carries status lines (`readStatusLine` in Bwrap.ts): the sandbox came up, the command's exit status. */
  readonly statusFd: boolean
  /** fd 4 (a pipe) stays open while any process of the sandbox lives: its end is the sandbox's. Not to be closed by the caller. */
  readonly syncFd: boolean
  /** Ties the launch's resources (placeholders, proxy) to the process: freed when it exits. */
  readonly started: (child: ChildProcess) => Effect.Effect<void>
  /**
   * Frees them now when the process did not start; once `started`, they go when the sandbox has ended
   * (its background jobs too) or with the layer. Safe to call more than once.
   */
  readonly release: Effect.Effect<void>
  /** What the sandbox blocked, from the command's output and the proxy; published as `sandbox.blocked`. */
  readonly blocked: (output: string) => Effect.Effect<ReadonlyArray<Blocked>>
  /**
   * Set when the command runs in a kept sandbox (`SandboxOptions.keepIdleMs`): start it with `run`,
   * which reports as a child process would; `file` and `args` are then not to be spawned.
   */
  readonly kept?: { readonly run: (handlers: KeptHandlers) => KeptCommand }
}

/** For `agent sandbox check`: the machine, the effective settings and the filesystem layout. */
export interface SandboxCheck {
  readonly capabilities: Capabilities
  readonly plan: SandboxPlan
  readonly layout: Layout
  readonly temporary: ReadonlyArray<string>
}

export interface SandboxShape {
  /** The settings of `config` (an agent's `sandbox`) and whether its commands will be sandboxed here. */
  readonly plan: (config: SandboxConfig | undefined) => Effect.Effect<SandboxPlan>
  readonly prepare: (request: SandboxRequest) => Effect.Effect<Launch, SandboxUnavailable>
  readonly check: (config: SandboxConfig | undefined) => Effect.Effect<SandboxCheck>
  /**
   * The runtime's own tools are to create `file`, a config name a kept sandbox holds with a placeholder: those
   * sandboxes are retired and waited for (Vacate.ts). Optional: a backend without placeholders leaves it out.
   */
  readonly vacate?: (file: string) => Effect.Effect<void>
}

export interface SandboxOptions {
  /** The system temp dirs a `workspace-write` command may write (default `/tmp` and `$TMPDIR`). */
  readonly temporary?: ReadonlyArray<string>
  /**
   * Keep a sandbox per shape alive between the bash tool's commands and start each command inside it
   * (docs/sandbox.md, "A kept sandbox"), closed after this many idle milliseconds. 0: a bubblewrap per
   * command. Default: `AGENT_SANDBOX_KEEP_MS` of the instance's environment, else `DEFAULT_KEEP_IDLE_MS` (KeptSandbox.ts).
   */
  readonly keepIdleMs?: number
}

/** Directories from the work-tree root down to the working directory (only the directory outside git). */
export const configDirs = (instance: InstanceInfo): Array<string> => {
  const leaf = path.resolve(instance.directory)
  const root = path.resolve(instance.worktree)
  if (!instance.vcs || !isWithin(leaf, root)) return [leaf]
  const dirs = [root]
  let current = root
  for (const part of path.relative(root, leaf).split(path.sep).filter((segment) => segment !== "")) {
    current = path.join(current, part)
    dirs.push(current)
  }
  return dirs
}

const unsandboxedLaunch = (request: SandboxRequest): Launch => ({
  sandboxed: false,
  file: request.argv[0],
  args: request.argv.slice(1),
  env: request.env,
  statusFd: false,
  syncFd: false,
  started: () => Effect.void,
  release: Effect.void,
  blocked: () => Effect.succeed([])
})

/**
 * Runs the processes the agent starts (bash, `!`-shell, MCP servers that ask for it) in an OS
 * sandbox: on Linux, bubblewrap (docs/sandbox.md says why). Another backend (a container, a
 * remote machine) is a layer with the same shape, passed to `makeAppLayer({ sandbox })`.
 */
export class Sandbox extends Context.Tag("@agent/core/Sandbox")<Sandbox, SandboxShape>() {
  static readonly layerWith = (options: SandboxOptions = {}): Layer.Layer<Sandbox, never, Instance | Bus> =>
    Layer.scoped(Sandbox, make(options))

  /** bubblewrap, with `/tmp` and `$TMPDIR` as the system temp dirs. */
  static readonly layer: Layer.Layer<Sandbox, never, Instance | Bus> = Sandbox.layerWith()
}

/** What the functions of one sandbox layer share: made once by the layer. */
interface SandboxDeps {
  readonly instance: InstanceInfo
  readonly bus: Bus["Type"]
  readonly layerScope: Scope.Scope
  readonly capabilities: Effect.Effect<Capabilities>
  /** The "commands run unsandboxed" warning was logged. */
  readonly warned: Ref.Ref<boolean>
  readonly layoutOf: (settings: SandboxSettings) => Layout
  /** The sandbox's own directory: the proxies' sockets. */
  readonly state: string
  /** An empty directory, bound over each placeholder. */
  readonly empty: string
  readonly placeholders: Placeholders
  /** Numbers the launches (the proxies' socket names). */
  readonly launches: Ref.Ref<number>
  /** Idle time of a kept sandbox; 0: none are kept. */
  readonly keepIdleMs: number
  /** The kept sandboxes taking commands, by shape. */
  readonly kept: Map<string, { readonly sandbox: KeptSandbox; readonly mounts: Layout["mounts"] }>
  /** Every kept sandbox not yet gone, so the layer's end can close them. */
  readonly keptAll: Map<KeptSandbox, ReadonlyArray<string>>
  /** A kept sandbox failed to start: commands get a bubblewrap each from then on. */
  readonly keepFailed: Ref.Ref<boolean>
}

function make(options: SandboxOptions) {
  return Effect.gen(function*() {
    const instance = yield* Instance
    const bus = yield* Bus
    const layerScope = yield* Effect.scope
    // Probed once, in the layer's scope: a caller interrupted while it runs (an aborted command) must
    // not leave the others waiting on an interrupted probe.
    const probing = yield* Effect.cached(
      Effect.uninterruptible(Effect.forkIn(probe(instance.env).pipe(Effect.tapErrorCause(Effect.logError)), layerScope))
    )
    const temporary = options.temporary ??
      [...new Set(["/tmp", instance.env.TMPDIR].filter((dir): dir is string => dir !== undefined && path.isAbsolute(dir)))]
    const scratch = [instance.paths.tmp, toolOutputDirectory(instance)]
    for (const dir of scratch) {
      try {
        fs.mkdirSync(dir, { recursive: true })
      } catch {
        // Left out of the writable paths when it cannot be made.
      }
    }
    const dirs = configDirs(instance)

    // The sandbox's own files: an empty directory for placeholders and the proxies' sockets.
    const state = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-sandbox-"))
        fs.mkdirSync(path.join(dir, "empty"))
        return dir
      }),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const placeholders = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const registry = new Placeholders(Placeholders.directory())
        registry.collect(dirs)
        return registry
      }),
      (registry) => Effect.sync(() => registry.close())
    )

    const deps: SandboxDeps = {
      instance,
      bus,
      layerScope,
      capabilities: Effect.flatMap(probing, Fiber.join),
      warned: yield* Ref.make(false),
      layoutOf: (settings) =>
        layout({
          settings,
          directory: instance.directory,
          worktree: instance.worktree,
          configDirs: dirs,
          temporary,
          scratch,
          // The registry too: a command must not remove another sandbox's manifest.
          internal: [state, placeholders.dir]
        }),
      state,
      empty: path.join(state, "empty"),
      placeholders,
      launches: yield* Ref.make(0),
      keepIdleMs: keepIdleMsOf(options, instance.env),
      kept: new Map(),
      keptAll: new Map(),
      keepFailed: yield* Ref.make(false)
    }
    // Before the placeholders and the state dir are removed (finalizers run in reverse order).
    yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all([...deps.keptAll.keys()].map((kept) => kept.close()))))

    const plan = Effect.fn("Sandbox.plan")((config: SandboxConfig | undefined) => planFor(deps, config))
    // Uninterruptible: what it holds (placeholders, a proxy) is either handed over in the launch or freed.
    const prepare = Effect.fn("Sandbox.prepare")((request: SandboxRequest) => Effect.uninterruptible(prepareLaunch(deps, request)))
    const check = Effect.fn("Sandbox.check")(function*(config: SandboxConfig | undefined) {
      const planned = yield* planFor(deps, config)
      return { capabilities: yield* deps.capabilities, plan: planned, layout: deps.layoutOf(planned.settings), temporary }
    })
    const vacate = Effect.fn("Sandbox.vacate")((file: string) => Effect.promise(() => retireHolders(deps.keptAll, path.resolve(file))))
    return { plan, prepare, check, vacate } satisfies SandboxShape
  })
}

/** The settings of an agent's `sandbox` and whether its commands can be sandboxed here (warns once when not). */
const planFor = (deps: SandboxDeps, config: SandboxConfig | undefined) =>
  Effect.gen(function*() {
    const settings = resolveSettings(config, deps.instance)
    if (settings.mode === "off") return { settings, active: false } satisfies SandboxPlan
    const found = yield* deps.capabilities
    const unavailable = !found.works
      ? found.problem ?? "the sandbox cannot start"
      : settings.network.kind !== "all" && !found.network
      ? "a network namespace cannot be made here, so the network cannot be limited (set sandbox.network to true to sandbox files only)"
      : settings.network.kind === "hosts" && found.socat === undefined
      ? "socat is not installed, and a list of allowed hosts needs it to bridge the proxy into the sandbox (apt-get install socat)"
      : undefined
    if (unavailable === undefined) return { settings, active: true } satisfies SandboxPlan
    if (settings.enforce === "preferred" && !(yield* Ref.getAndSet(deps.warned, true))) {
      yield* Effect.logWarning(
        `sandbox: commands run unsandboxed: ${unavailable}. Set sandbox.enforce to "required" to refuse them instead, ` +
          `or sandbox.mode to "off" to silence this; \`agent sandbox check\` explains.`
      )
    }
    return { settings, active: false, unavailable } satisfies SandboxPlan
  })

const prepareLaunch = (deps: SandboxDeps, request: SandboxRequest) =>
  Effect.gen(function*() {
    const { settings } = request.plan
    if (request.unsandboxed || settings.mode === "off") return unsandboxedLaunch(request)
    if (!request.plan.active) {
      if (settings.enforce === "required") {
        return yield* new SandboxUnavailable({ reason: request.plan.unavailable ?? "the sandbox cannot start" })
      }
      return unsandboxedLaunch(request)
    }
    const found = yield* deps.capabilities
    if (deps.keepIdleMs > 0 && request.keeper === "wait" && settings.network.kind !== "hosts" && !(yield* Ref.get(deps.keepFailed))) {
      const launch = yield* keptLaunch(deps, request, found)
      if (launch !== undefined) return launch
    }
    const scope = yield* Scope.fork(deps.layerScope, ExecutionStrategy.sequential)
    const release = Scope.close(scope, Exit.void)
    let spawned = false
    const computed = deps.layoutOf(settings)
    const holding = deps.placeholders.hold(computed.mounts)
    const mounts = holding.mounts
    yield* Scope.addFinalizer(scope, Effect.sync(() => deps.placeholders.release(holding, true)))
    const hosts = settings.network.kind === "hosts" ? settings.network.hosts : undefined
    const proxy = hosts === undefined
      ? undefined
      : yield* NetworkProxy.start(path.join(deps.state, `proxy-${yield* Ref.updateAndGet(deps.launches, (n) => n + 1)}.sock`), hosts).pipe(
        Scope.extend(scope),
        Effect.tapError(() => release),
        Effect.mapError((error) => new SandboxUnavailable({ reason: `the network proxy could not start: ${error.message}` }))
      )
    const env: Record<string, string> = { ...request.env }
    if (proxy) {
      for (const name of NO_PROXY_VARIABLES) delete env[name]
      Object.assign(env, proxyEnv())
    }
    const bwrap = {
      layout: { mounts, missing: computed.missing },
      empty: deps.empty,
      cwd: request.cwd,
      proc: found.proc,
      isolateNetwork: settings.network.kind !== "all",
      ...(proxy ? { proxySocket: proxy.socket } : {}),
      keeper: request.keeper,
      argv: request.argv,
      ...(holding.manifest === undefined ? {} : { lockFile: holding.manifest })
    }
    const syncFd = bwrapReports(bwrap)
    return {
      sandboxed: true,
      file: found.bwrap!.path,
      args: bwrapArgs(bwrap),
      env,
      statusFd: syncFd || keeperReports(bwrap),
      syncFd,
      // What the sandbox holds is freed when its last process has ended: with background jobs, after the command.
      // bubblewrap itself exits when the command does, its init only when the last background job has:
      // once started, what the sandbox holds goes at the sandbox's end (a placeholder removed earlier would
      // uncover the name to the jobs), or with the layer.
      started: (child) =>
        Effect.sync(() => (spawned = true)).pipe(
          Effect.andThen(sandboxEnded(child, syncFd)),
          Effect.andThen(release),
          Effect.catchAllCause(Effect.logError),
          Effect.forkIn(deps.layerScope),
          Effect.asVoid
        ),
      release: Effect.suspend(() => (spawned ? Effect.void : release)),
      blocked: (output) => reportBlocked(deps, request, mounts, proxy?.blocked() ?? [], output)
    } satisfies Launch
  })

/**
 * A launch in the kept sandbox of the request's shape (mounts as they are now, /proc, network), started
 * when there is none; undefined when it cannot start (then commands get a bubblewrap each, as before).
 */
const keptLaunch = (deps: SandboxDeps, request: SandboxRequest, found: Capabilities) =>
  Effect.gen(function*() {
    const { settings } = request.plan
    const computed = deps.layoutOf(settings)
    const isolateNetwork = settings.network.kind !== "all"
    const keyOf = (mounts: Layout["mounts"]) => JSON.stringify([mounts, found.proc, isolateNetwork])
    let kept = deps.kept.get(keyOf(deps.placeholders.seen(computed.mounts)))
    if (kept === undefined) {
      // Matched on the mounts as held: a placeholder another process holds looks present until then.
      const holding = deps.placeholders.hold(computed.mounts)
      const key = keyOf(holding.mounts)
      kept = deps.kept.get(key)
      if (kept !== undefined) deps.placeholders.release(holding, true)
      else {
        kept = startKept(deps, key, holding, computed.missing, found, isolateNetwork)
        deps.kept.set(key, kept)
      }
    }
    const { mounts, sandbox: instance } = kept
    const up = yield* Effect.either(Effect.tryPromise(() => instance.ready))
    if (up._tag === "Left") {
      instance.retire()
      yield* Ref.set(deps.keepFailed, true)
      yield* Effect.logWarning(`sandbox: a kept sandbox could not start, so each command gets its own: ${String(up.left.error)}`)
      return undefined
    }
    // Not idle from here until the launch is released (the bash tool releases it once the command has ended).
    instance.reserve()
    let released = false
    return {
      sandboxed: true,
      file: found.bwrap!.path,
      args: [],
      env: request.env,
      statusFd: false,
      syncFd: false,
      started: () => Effect.void,
      release: Effect.sync(() => {
        if (!released) instance.unreserve()
        released = true
      }),
      blocked: (output) => reportBlocked(deps, request, mounts, [], output),
      kept: { run: (handlers) => instance.run({ argv: request.argv, cwd: request.cwd, env: request.env }, handlers) }
    } satisfies Launch
  })

/** A kept sandbox for the mounts of `holding`, which it lets go when its last process has ended. */
const startKept = (
  deps: SandboxDeps,
  key: string,
  holding: Holding,
  missing: Layout["missing"],
  found: Capabilities,
  isolateNetwork: boolean
) => {
  const args = bwrapArgs({
    layout: { mounts: holding.mounts, missing },
    empty: deps.empty,
    cwd: deps.instance.directory,
    proc: found.proc,
    isolateNetwork,
    keeper: "wait",
    argv: [process.execPath, "-e", SUPERVISOR_SCRIPT],
    ...(holding.manifest === undefined ? {} : { lockFile: holding.manifest })
  })
  const started: KeptSandbox = new KeptSandbox(found.bwrap!.path, args, { PATH: deps.instance.env.PATH ?? "/usr/bin:/bin" }, deps.keepIdleMs, () => {
    if (deps.kept.get(key)?.sandbox === started) deps.kept.delete(key)
  })
  deps.keptAll.set(started, holding.paths)
  void started.gone.then(() => {
    deps.keptAll.delete(started)
    deps.placeholders.release(holding, true)
  })
  return { sandbox: started, mounts: holding.mounts }
}

/** What the sandbox blocked, from the output and the proxy, once each; published as `sandbox.blocked`. */
const reportBlocked = (
  deps: SandboxDeps,
  request: SandboxRequest,
  mounts: Layout["mounts"],
  refusedHosts: ReadonlyArray<string>,
  output: string
) =>
  Effect.gen(function*() {
    const found: Array<Blocked> = [
      ...blockedWrites(output, request.cwd, mounts),
      ...refusedHosts.map((target): Blocked => ({ kind: "network", target })),
      ...(request.plan.settings.network.kind === "all" ? [] : networkFailures(output))
    ]
    const unique = found.filter((entry, index) =>
      found.findIndex((other) => other.kind === entry.kind && other.target === entry.target) === index &&
      // "network" alone adds nothing once a host is named.
      !(entry.target === "network" && found.some((other) => other.kind === "network" && other.target !== "network"))
    )
    yield* Effect.forEach(unique, (entry) =>
      deps.bus.publish({
        type: "sandbox.blocked",
        properties: {
          tool: request.tool,
          kind: entry.kind,
          target: entry.target,
          ...(request.sessionID ? { sessionID: request.sessionID } : {}),
          ...(request.callID ? { callID: request.callID } : {})
        }
      }), { discard: true })
    return unique
  })

/** Completes when the sandbox is gone: its sync fd closed, or else the process exited (or never started). */
const sandboxEnded = (child: ChildProcess, syncFd: boolean): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const sync = syncFd ? child.stdio[SYNC_FD] as Readable | null | undefined : undefined
    const gone = sync ? sync.destroyed || sync.readableEnded : child.exitCode !== null || child.signalCode !== null
    if (gone) return resume(Effect.void)
    let resumed = false
    const done = () => {
      if (!resumed) resume(Effect.void)
      resumed = true
    }
    if (sync) {
      sync.once("end", done)
      sync.once("close", done)
      sync.once("error", done)
      // Nothing is written on it; reading lets "end" come.
      sync.resume()
    } else child.once("exit", done)
    child.once("error", done)
  })

/** `workspace-write, network: none` */
export const describePlan = (plan: SandboxPlan): string =>
  plan.settings.mode === "off"
    ? "off"
    : `${plan.settings.mode}, network: ${describeNetwork(plan.settings.network)}${plan.active ? "" : ` (not in effect: ${plan.unavailable})`}`
