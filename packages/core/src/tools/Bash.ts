import type { Agent } from "@agent/domain"
import { Deferred, Effect, Exit, Fiber, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Prompts from "../runtime/Prompts.js"
import { Instance, type InstanceInfo } from "../runtime/Instance.js"
import { describeNetwork, resolveSettings, type SandboxSettings } from "../sandbox/Settings.js"
import { Sandbox, SandboxUnavailable } from "../sandbox/Sandbox.js"
import { type Running, type ShellExit, release, start, terminate } from "./BashProcess.js"
import { notice } from "../sandbox/Report.js"
import * as Tool from "../tool/Tool.js"
import { parseCommand } from "../tool/BashParse.js"
import { expandPath, externalDirectories } from "../tool/BashPaths.js"
import { Truncation } from "../tool/Truncation.js"
import { EditorTerminal, localOnly } from "../tool/EditorTerminal.js"
import { abortedBy, type Ending, runInTerminal } from "./BashTerminal.js"
import { KILL_GRACE_MS, MAX_BUFFER_CHARS } from "./BashProcess.js"

const TOOL = "bash"

/** Used when the call gives no timeout (`AGENT_BASH_DEFAULT_TIMEOUT_MS` overrides). */
export const DEFAULT_TIMEOUT_MS = 120_000
/** The longest a single command may run. */
export const MAX_TIMEOUT_MS = 600_000
export { KILL_GRACE_MS, MAX_BUFFER_CHARS } from "./BashProcess.js"
/** Live output is published at most this often. */
export const UPDATE_INTERVAL_MS = 100
/** The output preview in metadata (live and final) holds at most this many characters. */
export const PREVIEW_CHARS = 30_000

const Parameters = Schema.Struct({
  command: Schema.String.annotations({ description: "The command to execute" }),
  timeout: Schema.optional(
    Schema.Number.pipe(Schema.int(), Schema.positive(), Schema.lessThanOrEqualTo(MAX_TIMEOUT_MS)).annotations({
      description: `Optional timeout in milliseconds (max ${MAX_TIMEOUT_MS})`,
      // One message for every way the number can be wrong (not a whole number, not positive, too large).
      message: () => ({ message: `expected a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}`, override: true })
    })
  ),
  workdir: Schema.optional(
    Schema.String.annotations({
      description: "The working directory to run the command in. Defaults to the project directory. Use this instead of 'cd'."
    })
  ),
  description: Schema.String.annotations({
    description:
      "Clear, concise description of what this command does in 5-10 words, e.g. 'Lists files in current directory' or 'Installs package dependencies'"
  }),
  unsandboxed: Schema.optional(
    Schema.Boolean.annotations({
      description:
        "Run this one command outside the sandbox (the user is asked to approve). Only when it needs what the sandbox blocks: " +
        "network for a package install, writing .git for a commit, writing outside the project."
    })
  )
})

/** The default timeout for `instance`, from `AGENT_BASH_DEFAULT_TIMEOUT_MS` when that is a positive integer. */
export const defaultTimeout = (instance: InstanceInfo): number => {
  const raw = instance.env.AGENT_BASH_DEFAULT_TIMEOUT_MS
  const value = raw === undefined ? NaN : Number(raw)
  return Number.isInteger(value) && value > 0 ? Math.min(value, MAX_TIMEOUT_MS) : DEFAULT_TIMEOUT_MS
}

const SH_LIKE: ReadonlySet<string> = new Set(["bash", "zsh", "sh", "dash", "ksh", "mksh", "ash", "yash"])

/** The user's `$SHELL` when it understands POSIX `-c` scripts, else bash, else sh. */
export const shellFor = (instance: InstanceInfo): string => {
  const preferred = instance.env.SHELL
  if (preferred && path.isAbsolute(preferred) && SH_LIKE.has(path.basename(preferred)) && fs.existsSync(preferred)) {
    return preferred
  }
  return fs.existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh"
}

// ---------------------------------------------------------------------------------------------

const timeoutNotice = (ms: number) =>
  `The command was terminated because it exceeded the timeout of ${ms} ms. If it needs more time, ` +
  `run it again with a larger timeout (at most ${MAX_TIMEOUT_MS} ms), or start it in the background ` +
  `with its output redirected to a file and check on it later.`

const abortNotice = "The user aborted the command before it finished; it was stopped."

/**
 * What the tool's description says about the sandbox, from the agent's settings alone: probing
 * the machine would hold up the first step, and a sandbox that turns out not to work says so in
 * the result of the first command (required) or runs it as before (preferred).
 */
export const sandboxText = (settings: SandboxSettings): string => {
  if (settings.mode === "off") return ""
  const writes = settings.mode === "read-only"
    ? "write nothing" + (settings.writable.length > 0 ? ` but ${settings.writable.join(", ")}` : "")
    : "write only the project directory, the temp dirs ($TMPDIR, /tmp)" +
      (settings.writable.length > 0 ? `, ${settings.writable.join(", ")}` : "")
  return `Sandbox: commands run in an OS sandbox (${settings.mode}) where this machine supports one. They can read everything, ${writes}; the project's ` +
    `.git and agent config (agent.json, opencode.json, .agent/, .opencode/, .claude/, AGENTS.md) are read-only; network: ` +
    `${describeNetwork(settings.network)}. What the sandbox blocks fails as it would on a read-only disk or without a ` +
    "network, and the result says the sandbox blocked it. When a command really needs more (a package install that " +
    "downloads, `git commit`, which writes .git, writing outside the project), call bash again with `unsandboxed: true`: " +
    "the user is asked to approve running that one command outside the sandbox. Do not try to get around the sandbox otherwise. " +
    "While a command runs, agent config files that do not exist (agent.json, opencode.json, .agent/, ...) appear as empty " +
    "read-only directories, so that no command creates them; they are not really there."
}

const fail = (detail: string) => new Tool.ToolExecutionError({ tool: TOOL, detail })

/** The asks of one command: directories outside the project, the command itself, and leaving the sandbox. */
const askPermissions = (
  ctx: Tool.ToolContext,
  params: typeof Parameters.Type,
  parsed: Effect.Effect.Success<ReturnType<typeof parseCommand>>,
  directories: ReadonlyArray<string>,
  how: { readonly sandboxed: boolean; readonly escape: boolean; readonly mode: string }
) =>
  Effect.gen(function*() {
    if (directories.length > 0) {
      yield* ctx.ask({
        permission: "external_directory",
        patterns: directories,
        always: directories,
        ...(how.sandboxed ? { sandboxed: true } : {}),
        metadata: { command: params.command, directories }
      })
    }
    const opaque = parsed.opaque.length > 0
      ? { opaque: parsed.opaque.map((entry) => ({ pattern: entry.text, reason: entry.reason })) }
      : {}
    if (parsed.patterns.length > 0) {
      yield* ctx.ask({
        permission: TOOL,
        patterns: parsed.patterns,
        always: parsed.always,
        ...opaque,
        ...(how.sandboxed ? { sandboxed: true } : {}),
        metadata: { command: params.command, description: params.description }
      })
    }
    if (how.escape) {
      yield* ctx.ask({
        permission: "sandbox_escape",
        patterns: parsed.patterns.length > 0 ? parsed.patterns : [params.command],
        always: parsed.always.length > 0 ? parsed.always : [params.command],
        ...opaque,
        requiresPerson: "the command asks to run outside the sandbox",
        metadata: { command: params.command, description: params.description, sandbox: how.mode }
      })
    }
  })

/** Follows a started command to its end (exit, timeout or abort), publishing its output as it grows. */
const watch = (running: Running, ctx: Tool.ToolContext, description: string, timeout: number, shell: string) =>
  Effect.gen(function*() {
    yield* ctx.metadata({ metadata: { output: "", description } })
    const publisher = yield* Effect.gen(function*() {
      let published = 0
      for (;;) {
        yield* Effect.sleep(UPDATE_INTERVAL_MS)
        if (running.output.version === published) continue
        published = running.output.version
        yield* ctx.metadata({
          metadata: { output: running.output.tail(PREVIEW_CHARS), description }
        })
      }
    }).pipe(Effect.catchAllCause(Effect.logError), Effect.fork)

    const finished = Effect.either(Deferred.await(running.done))
    const ending: Ending = yield* Effect.raceAll([
      Effect.as(finished, "exit" as const),
      Effect.as(Effect.sleep(timeout), "timeout" as const),
      Effect.as(abortedBy(ctx.abort), "aborted" as const)
    ])
    if (ending !== "exit") yield* terminate(running)
    // Once the group is gone the shell has exited; a process that left the group may
    // still hold the pipes, which the drain timer covers.
    const outcome = yield* finished.pipe(Effect.timeout(2_000), Effect.orElseSucceed(() => undefined))
    yield* Fiber.interrupt(publisher)
    if (outcome !== undefined && outcome._tag === "Left") {
      return yield* fail(`Could not run the command with ${shell}: ${outcome.left.message}`)
    }
    if (!running.ready && ending === "exit") {
      return yield* fail(`The sandbox could not start, so the command did not run: ${running.output.text().trim() || "bubblewrap failed without a message"}`)
    }
    const exit: ShellExit = outcome?._tag === "Right" ? outcome.right : { code: null, signal: null }
    return { ending, exit, launch: running.launch, text: running.output.text() }
  })

export const make: Effect.Effect<Tool.AnyTool, never, Instance | Truncation | Sandbox> = Effect.gen(function*() {
  const instance = yield* Instance
  const truncation = yield* Truncation
  const sandbox = yield* Sandbox
  const terminals = yield* EditorTerminal
  const fallbackTimeout = defaultTimeout(instance)
  const env: Record<string, string> = Object.fromEntries(
    Object.entries(instance.env).filter((entry): entry is [string, string] => entry[1] !== undefined)
  )

  const template = Prompts.read("tool/bash.txt")
    .replaceAll("{{DEFAULT_TIMEOUT_MS}}", String(fallbackTimeout))
    .replaceAll("{{MAX_TIMEOUT_MS}}", String(MAX_TIMEOUT_MS))
  const withSandbox = (text: string) => template.replace("{{SANDBOX}}", text).replace(/\n{3,}/g, "\n\n").trim()
  const description = withSandbox("")
  const described = new WeakMap<Agent, string>()


  return Tool.make({
    id: TOOL,
    description,
    parameters: Parameters,
    describe: (agent) =>
      Effect.gen(function*() {
        const known = described.get(agent)
        if (known !== undefined) return known
        const text = withSandbox(sandboxText(resolveSettings(agent.sandbox, instance)))
        described.set(agent, text)
        return text
      }),
    execute: (params, ctx) =>
      Effect.gen(function*() {
        if (params.command.trim() === "") return yield* fail("The command is empty. Pass the shell command to run.")
        const timeout = params.timeout ?? fallbackTimeout
        const workdir = params.workdir === undefined
          ? instance.directory
          : path.resolve(instance.directory, expandPath(params.workdir, instance))
        const stat = yield* Effect.sync(() => fs.statSync(workdir, { throwIfNoEntry: false }))
        if (stat === undefined) {
          return yield* fail(`The working directory ${workdir} does not exist. Create it first or pass an existing workdir.`)
        }
        if (!stat.isDirectory()) return yield* fail(`The working directory ${workdir} is not a directory.`)

        const parsed = yield* parseCommand(params.command).pipe(Effect.mapError((error) => fail(error.message)))
        const plan = yield* sandbox.plan(ctx.agent.sandbox)
        const required = plan.settings.enforce === "required" && plan.unavailable !== undefined
        // Leaving the sandbox is its own permission, asked only when the command would otherwise be sandboxed (or refused).
        const escape = params.unsandboxed === true && (plan.active || required)
        if (required && !escape) return yield* fail(new SandboxUnavailable({ reason: plan.unavailable! }).message)
        const sandboxed = plan.active && !escape

        yield* askPermissions(ctx, params, parsed, yield* Effect.sync(() => externalDirectories(parsed.runs, { instance, workdir, redirects: parsed.redirects })), { sandboxed, escape, mode: plan.settings.mode })

        const shell = shellFor(instance)
        // The editor's terminal is outside our sandbox: only a command that runs unsandboxed anyway goes there.
        const inTerminal = !sandboxed && terminals !== localOnly && terminals.available(ctx.sessionID)
        const { ending, exit, launch, text, terminalId } = inTerminal
          ? yield* runInTerminal(terminals, ctx, {
            command: params.command,
            cwd: workdir,
            env,
            description: params.description,
            timeout,
            outputByteLimit: MAX_BUFFER_CHARS,
            killGraceMs: KILL_GRACE_MS
          })
          : yield* Effect.acquireUseRelease(
          sandbox.prepare({
            plan,
            unsandboxed: escape,
            argv: [shell, "-c", params.command],
            cwd: workdir,
            env,
            keeper: "wait",
            tool: TOOL,
            sessionID: ctx.sessionID,
            callID: ctx.callID
          }).pipe(Effect.mapError((error) => fail(error.message)), Effect.flatMap((launch) => start(launch, workdir))),
          (running) => watch(running, ctx, params.description, timeout, shell),
          (running, result) =>
            release(running, !(Exit.isSuccess(result) && result.value.ending === "exit")).pipe(
              // The sandbox is gone with the command (no background jobs): free what it held before returning.
              Effect.zipRight(
                running.child === undefined || running.child.exitCode !== null || running.child.signalCode !== null
                  ? running.launch.release
                  : Effect.void
              )
            )
        ).pipe(Effect.map((ran) => ({ ...ran, terminalId: undefined })))

        const blocked = launch?.sandboxed ? yield* launch.blocked(text) : []
        const preview = text.length > PREVIEW_CHARS ? text.slice(text.length - PREVIEW_CHARS) : text
        let full = text.length > 0 ? text : "(no output)"
        if (ending === "timeout") full += `\n\n<shell_metadata>\n${timeoutNotice(timeout)}\n</shell_metadata>`
        if (ending === "aborted") full += `\n\n<shell_metadata>\n${abortNotice}\n</shell_metadata>`
        if (blocked.length > 0) full += `\n\n${notice(blocked, plan.settings)}`
        const cut = yield* truncation.output(full, { direction: "tail" })

        return {
          title: params.description,
          output: cut.content,
          // Output that fits is left as is by the loop's own pass too; only a cut one must be skipped.
          truncated: cut.truncated,
          metadata: {
            exit: exit.code,
            description: params.description,
            output: preview,
            sandbox: launch?.sandboxed ? plan.settings.mode : escape ? "escaped" : plan.settings.mode === "off" ? "off" : "unavailable",
            ...(terminalId !== undefined ? { terminalId } : {}),
            ...(blocked.length > 0 ? { blocked } : {}),
            ...(cut.truncated ? { truncated: true } : {}),
            ...(cut.outputPath !== undefined ? { outputPath: cut.outputPath } : {})
          }
        } satisfies Tool.ToolResult
      })
  })
})
