// The Hooks service: the hooks in force (HookConfig), run at an event with Claude Code's input
// (HookRunner), their answers read (HookOutcome) and reported (`hook.ran`). With no hook that runs,
// `active` is false and the session loop adds nothing to a step.
import type { HookEventName, MessageWithParts, SessionID } from "@agent/domain"
import { Context, Effect, FiberSet, Layer } from "effect"
import * as path from "node:path"
import { ConfigService } from "../config/ConfigService.js"
import { isEnvFlag } from "../config/ConfigFiles.js"
import * as CommandLauncher from "../process/CommandLauncher.js"
import { Bus } from "../runtime/Bus.js"
import { Instance } from "../runtime/Instance.js"
import { VERSION } from "../runtime/Version.js"
import { SessionStore } from "../store/SessionStore.js"
import { claudeSettingsFiles, collect, type ConfiguredHook, handlerKey, handlerLabel, readClaudeSettings } from "./HookConfig.js"
import { combine, decisionLabel, interpret, NO_VERDICT, type Verdict } from "./HookOutcome.js"
import { test } from "./HookMatcher.js"
import { runHandler } from "./HookRunner.js"
import { isTrusted } from "./ProjectTrust.js"
import * as Transcript from "./Transcript.js"

export interface HookRunInput {
  readonly event: HookEventName
  readonly sessionID?: SessionID | undefined
  /** What matchers are tested against: the tool's Claude name, SessionStart's source, PreCompact's trigger, ... */
  readonly match?: string | undefined
  /** The event's own fields (`tool_name`, `tool_input`, `prompt`, ...), added to the common ones. */
  readonly fields: Record<string, unknown>
  /** The session's messages as the run holds them, for the transcript (default: read from the store). */
  readonly history?: ReadonlyArray<MessageWithParts> | undefined
}

/** A hook as `agent hooks list` shows it. */
export interface ListedHook {
  readonly event: HookEventName
  readonly matcher: string | undefined
  readonly type: "command" | "http"
  readonly command: string
  readonly timeout: number | undefined
  readonly file: string
  readonly scope: "user" | "project" | "managed"
  readonly runs: boolean
  /** Why it does not run. */
  readonly reason?: string
}

export interface HooksShape {
  /** Whether any hook runs: when false, nothing is added to a run. */
  readonly active: boolean
  /** Whether a hook runs at `event` (a set lookup: callers check it before building an event's input). */
  readonly has: (event: HookEventName) => boolean
  /** Runs the matching hooks of an event in parallel and combines their answers. */
  readonly run: (input: HookRunInput) => Effect.Effect<Verdict>
  /** SessionStart, once per session in this process (`source`: startup or resume); SessionEnd follows when the runtime ends. */
  readonly sessionStart: (sessionID: SessionID, source: "startup" | "resume") => Effect.Effect<Verdict>
  /** Runs an event's hooks without waiting for them (Notification); the runtime waits for them before it ends. */
  readonly runInBackground: (input: HookRunInput) => Effect.Effect<void>
  readonly list: () => ReadonlyArray<ListedHook>
  /** The configured MCP servers' names: Claude Code's `mcp__<server>__<tool>` tool names. */
  readonly mcpServers: ReadonlyArray<string>
}

export class Hooks extends Context.Tag("@agent/core/Hooks")<Hooks, HooksShape>() {
  static readonly layer: Layer.Layer<Hooks, never, ConfigService | Instance | Bus | SessionStore> = Layer.scoped(Hooks, make())

  /** No hooks at all (tests and embedders that want none). */
  static readonly layerNone: Layer.Layer<Hooks> = Layer.succeed(Hooks, {
    active: false,
    has: () => false,
    run: () => Effect.succeed(NO_VERDICT),
    sessionStart: () => Effect.succeed(NO_VERDICT),
    runInBackground: () => Effect.void,
    list: () => [],
    mcpServers: []
  })
}

/** Every hook of our config files and Claude Code's settings files, with whether it runs. */
export const loadHooks = Effect.gen(function*() {
  const instance = yield* Instance
  const info = yield* (yield* ConfigService).info()
  const projectEnabled = !isEnvFlag(instance.env.AGENT_DISABLE_PROJECT_CONFIG)
  const claude = claudeSettingsFiles(instance, projectEnabled).map(({ file, scope }) => readClaudeSettings(file, scope))
  const disabled = claude.some((settings) => settings.disableAll)
  const collected = collect([...claude.flatMap((settings) => (settings.source ? [settings.source] : [])), ...(info.hooks ?? [])])
  const trusted = isTrusted(instance.paths.data, instance.worktree)
  const hooks = collected.hooks.map((hook) => ({ hook, runs: !disabled && (hook.scope !== "project" || trusted) }))
  return {
    hooks,
    disabled,
    trusted,
    warnings: [...claude.flatMap((settings) => settings.warnings), ...collected.warnings],
    mcpServers: Object.keys(info.config.mcp ?? {})
  }
})

export const listed = (loaded: Effect.Effect.Success<typeof loadHooks>): ReadonlyArray<ListedHook> =>
  loaded.hooks.map(({ hook, runs }) => ({
    event: hook.event,
    matcher: hook.matcher,
    type: hook.handler.type,
    command: handlerLabel(hook.handler),
    timeout: hook.handler.timeout,
    file: hook.file,
    scope: hook.scope,
    runs,
    ...(runs ? {} : { reason: loaded.disabled ? "disableAllHooks is set" : "the project is not trusted (agent trust)" })
  }))

/**
 * The launcher command hooks start through (process/CommandLauncher.ts): none without command hooks,
 * or with `AGENT_HOOK_LAUNCHER=off` (each hook then forks the runtime, as before the launcher). It
 * keeps as many shells ready as the most command hooks one event runs.
 */
const commandLauncherFor = (hooks: ReadonlyArray<ConfiguredHook>, cwd: string, env: Readonly<Record<string, string | undefined>>) => {
  const perEvent = new Map<HookEventName, number>()
  for (const hook of hooks) if (hook.handler.type === "command") perEvent.set(hook.event, (perEvent.get(hook.event) ?? 0) + 1)
  if (perEvent.size === 0 || env.AGENT_HOOK_LAUNCHER === "off") return Effect.succeed(undefined)
  return CommandLauncher.make({ cwd, env, warm: Math.min(4, Math.max(...perEvent.values())) })
}

function make() {
  return Effect.gen(function*() {
    const instance = yield* Instance
    const bus = yield* Bus
    const store = yield* SessionStore
    const loaded = yield* loadHooks
    for (const warning of loaded.warnings) yield* Effect.logWarning(warning)
    const untrusted = [...new Set(loaded.hooks.filter(({ hook, runs }) => !runs && hook.scope === "project").map(({ hook }) => hook.file))]
    if (untrusted.length > 0 && !loaded.disabled) {
      yield* Effect.logWarning(
        `hooks in ${untrusted.join(", ")} do not run: the project ${instance.worktree} is not trusted (see them with \`agent hooks list\`, trust them with \`agent trust\`)`
      )
    }
    const running: ReadonlyArray<ConfiguredHook> = loaded.hooks.filter((entry) => entry.runs).map((entry) => entry.hook)
    const byEvent = new Map<HookEventName, Array<ConfiguredHook>>()
    for (const hook of running) byEvent.set(hook.event, [...(byEvent.get(hook.event) ?? []), hook])
    const transcriptDir = path.join(instance.paths.data, "transcripts", instance.projectID)
    const env = { ...instance.env, CLAUDE_PROJECT_DIR: instance.worktree, AGENT_PROJECT_DIR: instance.worktree }
    const started = new Set<SessionID>()
    // Made before the finalizer below, so it closes after SessionEnd's hooks ran.
    const launcher = yield* commandLauncherFor(running, instance.directory, env)
    const inBackground = yield* FiberSet.make()

    const transcriptFiles = new Map<SessionID, Transcript.TranscriptFile>()
    const transcriptOf = (sessionID: SessionID | undefined, history: ReadonlyArray<MessageWithParts> | undefined) =>
      Effect.gen(function*() {
        if (sessionID === undefined) return ""
        const file = path.join(transcriptDir, `${sessionID}.jsonl`)
        const messages = history ?? (yield* store.history(sessionID).pipe(Effect.orElseSucceed(() => [])))
        let state = transcriptFiles.get(sessionID)
        if (state === undefined) transcriptFiles.set(sessionID, (state = Transcript.emptyFile()))
        const context = { sessionID, cwd: instance.directory, version: VERSION, mcpServers: loaded.mcpServers }
        yield* Effect.try(() => Transcript.write(file, messages, context, state)).pipe(
          Effect.catchAll((error) => Effect.logWarning(`the transcript for hooks could not be written to ${file}: ${String(error.error)}`))
        )
        return file
      })

    const run = Effect.fn("Hooks.run")(function*(input: HookRunInput) {
      const matched = (byEvent.get(input.event) ?? []).filter((hook) => test(hook.compiled, input.match))
      // The same handler in several files runs once.
      const seen = new Set<string>()
      const handlers = matched.filter((hook) => {
        const key = handlerKey(hook.handler)
        return seen.has(key) ? false : (seen.add(key), true)
      })
      if (handlers.length === 0) return NO_VERDICT
      const payload = JSON.stringify({
        session_id: input.sessionID ?? "",
        transcript_path: yield* transcriptOf(input.sessionID, input.history),
        cwd: instance.directory,
        hook_event_name: input.event,
        ...input.fields
      })
      const answers = yield* Effect.forEach(handlers, (hook) =>
        Effect.gen(function*() {
          const started = Date.now()
          const raw = yield* runHandler(hook.handler, payload, { cwd: instance.directory, env }, launcher)
          const answer = interpret(input.event, raw)
          const label = handlerLabel(hook.handler)
          if (answer.message) yield* Effect.logWarning(`hook ${input.event} (${label}): ${answer.message}`)
          yield* bus.publish({
            type: "hook.ran",
            properties: {
              ...(input.sessionID ? { sessionID: input.sessionID } : {}),
              event: input.event,
              command: label,
              ...(raw._tag === "Exited" ? { exitCode: raw.code } : raw._tag === "Http" ? { exitCode: raw.status } : {}),
              durationMs: Date.now() - started,
              decision: decisionLabel(answer),
              ...(answer.message ? { message: answer.message } : {})
            }
          })
          return answer
        }), { concurrency: "unbounded" })
      return combine(answers)
    })

    const has = (event: HookEventName) => byEvent.has(event)

    const sessionStart = (sessionID: SessionID, source: "startup" | "resume") =>
      Effect.suspend(() => {
        if (!has("SessionStart") && !has("SessionEnd")) return Effect.succeed(NO_VERDICT)
        if (started.has(sessionID)) return Effect.succeed(NO_VERDICT)
        started.add(sessionID)
        return run({ event: "SessionStart", sessionID, match: source, fields: { source } })
      })

    const runInBackground = (input: HookRunInput) =>
      has(input.event) ? Effect.asVoid(FiberSet.run(inBackground, run(input).pipe(Effect.catchAllCause((cause) => Effect.logError("a hook failed", cause))))) : Effect.void

    // As the runtime ends: the hooks still running in the background finish (each within its
    // timeout), then SessionEnd for every session that started here.
    yield* Effect.addFinalizer(() =>
      FiberSet.awaitEmpty(inBackground).pipe(
        Effect.zipRight(Effect.forEach([...started], (sessionID) => run({ event: "SessionEnd", sessionID, match: "other", fields: { reason: "other" } }), { discard: true }))
      )
    )

    const service: HooksShape = {
      active: running.length > 0,
      has,
      run,
      sessionStart,
      runInBackground,
      list: () => listed(loaded),
      mcpServers: loaded.mcpServers
    }
    return service
  })
}
