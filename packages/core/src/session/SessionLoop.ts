// The session loop service: prompt, resume, abort, compact, summarize, statuses. A run's steps are
// Run.ts's (over RunState.ts), one step is Step.ts's, one tool call ToolCall.ts's; this file keeps
// the runners (one run per session) and the public methods.
import type { AgentNotFound, PermissionRuleset, SessionID, SessionNotFound, SessionStatus, UserMessage } from "@agent/domain"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Stream } from "effect"
import { AgentRegistry } from "../agent/AgentRegistry.js"
import { Compaction } from "../context/Compaction.js"
import { InstructionLoader } from "../context/InstructionLoader.js"
import { SkillRegistry } from "../context/SkillRegistry.js"
import { ConfigService } from "../config/ConfigService.js"
import { Hooks } from "../hooks/Hooks.js"
import * as Prompts from "../runtime/Prompts.js"
import { Bus } from "../runtime/Bus.js"
import { Instance } from "../runtime/Instance.js"
import { LLMService, type ProviderError } from "../llm/LLMService.js"
import { ModelMessageCache } from "../llm/MessageConversion.js"
import { ProviderRegistry } from "../llm/ProviderRegistry.js"
import { PermissionPolicy } from "../permission/PermissionPolicy.js"
import { PermissionService } from "../permission/PermissionService.js"
import { SessionChanges } from "../snapshot/SessionChanges.js"
import { SessionStatuses } from "../runtime/SessionStatuses.js"
import { Snapshot } from "../snapshot/Snapshot.js"
import { SessionStore } from "../store/SessionStore.js"
import { Mcp } from "../mcp/Mcp.js"
import { ToolRegistry } from "../tool/ToolRegistry.js"
import { Truncation } from "../tool/Truncation.js"
import * as Task from "../tools/Task.js"
import { beforePrompt } from "./HookEvents.js"
import { type LoopDeps, makeLoopDeps } from "./LoopDeps.js"
import { errorOf } from "./LoopTypes.js"
import type { LoopError, PromptInput, RunOptions, RunOutcome } from "./LoopTypes.js"
import { run, type RunEnv, type RunRequest } from "./Run.js"
import { type LoopControl, subagentPort } from "./Subagent.js"
import { createUserMessage, rulesFor } from "./UserMessages.js"

export type { Ending, LoopError, PromptInput, PromptPartInput, RunOutcome, StopReason } from "./LoopTypes.js"
export { cleanTitle, retryDelay } from "./Decisions.js"
export { DEFAULT_TOOL_CONCURRENCY } from "./LoopDeps.js"

export interface SessionLoopShape {
  /** Adds a user message and runs the loop until the model is done (joins a run in progress). */
  readonly prompt: (input: PromptInput) => Effect.Effect<RunOutcome, LoopError>
  /** Continues a session whose last run was interrupted (crash or abort). */
  readonly resume: (sessionID: SessionID) => Effect.Effect<RunOutcome, LoopError>
  /** Stops the session's run: tools are cancelled, their parts marked interrupted. */
  readonly abort: (sessionID: SessionID) => Effect.Effect<void>
  /** A short prose account of what the session did, by the hidden summary agent. */
  readonly summarize: (sessionID: SessionID) => Effect.Effect<string, LoopError | ProviderError>
  /** Summarizes the session now (after the run in progress, if any). */
  readonly compact: (sessionID: SessionID) => Effect.Effect<RunOutcome, LoopError>
  readonly status: (sessionID: SessionID) => Effect.Effect<SessionStatus>
  /**
   * The rules the session's next prompt (with `agent`, else the agent it would run) is decided by,
   * the enterprise policy's last: what a server checks before it reads a file for a prompt.
   */
  readonly rules: (input: { readonly sessionID: SessionID; readonly agent?: string }) => Effect.Effect<
    PermissionRuleset,
    SessionNotFound | AgentNotFound
  >
  readonly statuses: () => Effect.Effect<ReadonlyMap<SessionID, SessionStatus>>
}

interface Runner {
  readonly fiber: Fiber.RuntimeFiber<RunOutcome, LoopError>
  readonly request: RunRequest
}

export class SessionLoop extends Context.Tag("@agent/core/SessionLoop")<SessionLoop, SessionLoopShape>() {
  static readonly layer: Layer.Layer<
    SessionLoop,
    never,
    | SessionStore
    | Bus
    | AgentRegistry
    | ProviderRegistry
    | LLMService
    | ToolRegistry
    | PermissionService
    | PermissionPolicy
    | Truncation
    | InstructionLoader
    | SkillRegistry
    | Mcp
    | Compaction
    | ConfigService
    | Instance
    | Snapshot
    | SessionChanges
    | SessionStatuses
    | Hooks
  > = Layer.scoped(SessionLoop, make())
}

const noUsage = () => ({ cost: 0, tokens: 0, steps: 0 })

/** A short prose account of the session by the summary agent (its changed files named exactly). */
const summarizeSession = (deps: LoopDeps, sessionID: SessionID) =>
  Effect.gen(function*() {
    const { store } = deps
    yield* store.get(sessionID)
    const messages = yield* store.history(sessionID)
    const lastUser = [...messages].reverse().find((message) => message.info.role === "user")?.info as UserMessage | undefined
    // Nothing asked yet: nothing to summarize, and no model call.
    if (!lastUser) return ""
    // The files the session (children included) changed, so the account of the changes is exact.
    const changed = yield* deps.sessionChanges.diff(sessionID).pipe(Effect.orElseSucceed(() => []))
    const request = [
      Prompts.read("session/summary-request.txt"),
      ...(changed.length > 0
        ? ["", Prompts.read("session/summary-files.txt"), ...changed.map((diff) => `- ${diff.file} (${diff.status ?? "modified"}, +${diff.additions} -${diff.deletions})`)]
        : [])
    ].join("\n")
    const model = yield* deps.providers.resolve(lastUser.model)
    const summary = yield* deps.agents.get("summary").pipe(Effect.orDie)
    const cache = new ModelMessageCache()
    const text = yield* deps.llm.stream({
      model,
      system: [summary.prompt ?? ""],
      options: summary.options,
      messages: [
        ...messages.flatMap((message) => cache.convert({ info: message.info, parts: [...message.parts] }, { wrapUserText: false })),
        { role: "user", content: request }
      ],
      tools: []
    }).pipe(Stream.runFold("", (so_far, event) => event.type === "text-delta" ? so_far + event.text : so_far))
    return text.trim()
  })

function make() {
  return Effect.gen(function*() {
    const deps = yield* makeLoopDeps
    const { store, sessionChanges } = deps
    const layerScope = yield* Effect.scope
    const runners = new Map<SessionID, Runner>()

    const control: LoopControl = {
      prompt: (input) => prompt(input),
      abort: (sessionID) => abort(sessionID),
      autoApprove: (sessionID) => runners.get(sessionID)?.request.options.autoApprove === true
    }
    const env: RunEnv = {
      deps,
      control,
      task: Task.make(subagentPort(deps, control)),
      createUserMessage: createUserMessage(deps)
    }

    /** Starts the session's run, or returns the one in progress. */
    const ensureRunning = (sessionID: SessionID, options: RunOptions) =>
      Effect.gen(function*() {
        const existing = runners.get(sessionID)
        if (existing) return existing
        const ready = yield* Deferred.make<void>()
        const request: RunRequest = { options, incoming: [], stopReason: undefined, stopError: undefined }
        const fiber = yield* Effect.gen(function*() {
          yield* Deferred.await(ready)
          yield* deps.setStatus(sessionID, { type: "busy" })
          return yield* Effect.scoped(run(env, sessionID, request))
        }).pipe(
          Effect.ensuring(
            Effect.suspend(() => {
              runners.delete(sessionID)
              return deps.setStatus(sessionID, { type: "idle" })
            })
          ),
          Effect.forkIn(layerScope)
        )
        const runner: Runner = { fiber, request }
        runners.set(sessionID, runner)
        yield* Deferred.succeed(ready, undefined)
        return runner
      })

    const awaitRun = (runner: Runner): Effect.Effect<RunOutcome, LoopError> =>
      Fiber.await(runner.fiber).pipe(
        Effect.flatMap((exit) =>
          Exit.isSuccess(exit)
            ? Effect.succeed(exit.value)
            : Exit.isInterrupted(exit)
            ? Effect.succeed<RunOutcome>({ reason: runner.request.stopReason ?? "aborted", usage: noUsage() })
            : Effect.failCause(exit.cause)
        )
      )

    const prompt = Effect.fn("SessionLoop.prompt")(function*(input: PromptInput) {
      // A new prompt ends a revert: the hidden messages are removed for good.
      if (!runners.has(input.sessionID)) yield* sessionChanges.cleanup(input.sessionID)
      const hooked = yield* beforePrompt(deps, input)
      if (hooked._tag === "Blocked") {
        return { reason: "rejected" as const, error: errorOf("HookBlockedError", `A UserPromptSubmit hook blocked the prompt: ${hooked.reason}`), usage: noUsage() }
      }
      const message = yield* env.createUserMessage(hooked.input)
      if (input.noReply) return { reason: "completed" as const, usage: noUsage() }
      const running = runners.get(input.sessionID)
      if (running) {
        // The run in progress picks the new message up at its next step; one run per session.
        running.request.incoming.push(message)
        return yield* awaitRun(running)
      }
      return yield* awaitRun(yield* ensureRunning(input.sessionID, { autoApprove: input.autoApprove === true, maxSteps: input.maxSteps }))
    })

    const resume = Effect.fn("SessionLoop.resume")(function*(sessionID: SessionID) {
      yield* store.get(sessionID)
      if (!runners.has(sessionID)) yield* sessionChanges.cleanup(sessionID)
      const running = runners.get(sessionID)
      return yield* awaitRun(running ?? (yield* ensureRunning(sessionID, { autoApprove: false })))
    })

    const compact = Effect.fn("SessionLoop.compact")(function*(sessionID: SessionID) {
      yield* store.get(sessionID)
      if (!runners.has(sessionID)) yield* sessionChanges.cleanup(sessionID)
      const running = runners.get(sessionID)
      if (running) yield* Fiber.await(running.fiber)
      return yield* awaitRun(yield* ensureRunning(sessionID, { autoApprove: false, compactOnly: true }))
    })

    const abort = Effect.fn("SessionLoop.abort")(function*(sessionID: SessionID) {
      const runner = runners.get(sessionID)
      if (!runner) return
      runner.request.stopReason ??= "aborted"
      yield* Fiber.interrupt(runner.fiber)
    })

    yield* Effect.addFinalizer(() =>
      Effect.forEach([...runners.values()], (runner) => Fiber.interrupt(runner.fiber), { discard: true })
    )

    return {
      prompt,
      resume,
      abort,
      compact,
      summarize: Effect.fn("SessionLoop.summarize")(function*(sessionID: SessionID) {
        return yield* summarizeSession(deps, sessionID)
      }),
      status: (sessionID) => deps.statuses.get(sessionID),
      rules: Effect.fn("SessionLoop.rules")(function*(input: { readonly sessionID: SessionID; readonly agent?: string }) {
        return yield* rulesFor(deps, input)
      }),
      statuses: () => deps.statuses.all()
    } satisfies SessionLoopShape
  })
}
