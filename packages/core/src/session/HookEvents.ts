// Hooks at the session's own points: SessionStart and UserPromptSubmit before a prompt is stored,
// Stop (SubagentStop in a child session) when the model is done, PreCompact before a summary.
// Each returns at once when no hook runs at its event.
import type { SessionID } from "@agent/domain"
import { Effect } from "effect"
import { obeyStopBlock } from "../hooks/HookOutcome.js"
import type { LoopDeps } from "./LoopDeps.js"
import type { PromptInput, PromptPartInput } from "./LoopTypes.js"
import type { RunState } from "./RunState.js"

export type PromptHooks =
  | { readonly _tag: "Go"; readonly input: PromptInput }
  | { readonly _tag: "Blocked"; readonly reason: string }

/** The prompt's text, as UserPromptSubmit's `prompt`. */
const promptText = (parts: ReadonlyArray<PromptPartInput>) =>
  parts.flatMap((part) => (part.type === "text" && !part.synthetic ? [part.text] : part.type === "subtask" ? [part.prompt] : [])).join("\n")

/**
 * Before a prompt of a top-level session is stored: SessionStart (once per session in this process)
 * and UserPromptSubmit. Their context joins the prompt as text for the model; a block drops it.
 */
export const beforePrompt = (deps: LoopDeps, input: PromptInput): Effect.Effect<PromptHooks> =>
  Effect.gen(function*() {
    const { hooks } = deps
    const go: PromptHooks = { _tag: "Go", input }
    if (!hooks.has("SessionStart") && !hooks.has("SessionEnd") && !hooks.has("UserPromptSubmit")) return go
    const session = yield* deps.store.get(input.sessionID).pipe(Effect.option)
    // A subagent's prompt is the parent's tool call, not the user's.
    if (session._tag === "None" || session.value.parentID !== undefined) return go
    const page = yield* deps.store.messagePage(input.sessionID, { limit: 1 }).pipe(Effect.orElseSucceed(() => ({ items: [] })))
    const start = yield* hooks.sessionStart(input.sessionID, page.items.length === 0 ? "startup" : "resume")
    const submit = hooks.has("UserPromptSubmit")
      ? yield* hooks.run({ event: "UserPromptSubmit", sessionID: input.sessionID, fields: { prompt: promptText(input.parts), permission_mode: input.autoApprove ? "bypassPermissions" : "default" } })
      : undefined
    if (submit?.decision === "block" || submit?.stop !== undefined) {
      const reason = submit.stop || submit.reasons.join("\n") || "no reason given"
      // Claude Code shows the reason to the user only; the prompt is not kept.
      yield* Effect.logWarning(`A UserPromptSubmit hook blocked the prompt: ${reason}`)
      return { _tag: "Blocked", reason }
    }
    const context = [...start.context, ...(submit?.context ?? [])]
    if (context.length === 0) return go
    return {
      _tag: "Go",
      input: { ...input, parts: [...input.parts, ...context.map((text) => ({ type: "text" as const, text, synthetic: true }))] }
    }
  })

export type StopHooks =
  | { readonly _tag: "Stop" }
  /** A Stop hook blocked: the agent goes on, told why. */
  | { readonly _tag: "Continue"; readonly reason: string }

/** When the model is done: Stop (SubagentStop for a child session); a block is obeyed up to MAX_STOP_BLOCKS in a row. */
export const onStop = (deps: LoopDeps, state: RunState): Effect.Effect<StopHooks> =>
  Effect.gen(function*() {
    const event = state.session.parentID === undefined ? "Stop" : "SubagentStop"
    if (!deps.hooks.has(event)) return { _tag: "Stop" }
    const verdict = yield* deps.hooks.run({
      event,
      sessionID: state.sessionID,
      history: state.history,
      fields: { stop_hook_active: state.stopHookBlocks > 0, permission_mode: state.options.autoApprove ? "bypassPermissions" : "default" }
    })
    if (verdict.decision !== "block" || verdict.stop !== undefined) {
      state.stopHookBlocks = 0
      return { _tag: "Stop" }
    }
    if (!obeyStopBlock(state.stopHookBlocks)) {
      yield* Effect.logWarning(`a ${event} hook blocked the agent from stopping ${state.stopHookBlocks + 1} times in a row; it stops now`)
      state.stopHookBlocks = 0
      return { _tag: "Stop" }
    }
    state.stopHookBlocks++
    return { _tag: "Continue", reason: verdict.reasons.join("\n") || `a ${event} hook asks the agent to go on` }
  })

/** Before a summary: PreCompact, with `trigger` auto or manual (a matcher may pick one). */
export const beforeCompact = (deps: LoopDeps, sessionID: SessionID, auto: boolean): Effect.Effect<void> =>
  deps.hooks.has("PreCompact")
    ? Effect.asVoid(deps.hooks.run({ event: "PreCompact", sessionID, match: auto ? "auto" : "manual", fields: { trigger: auto ? "auto" : "manual", custom_instructions: "" } }))
    : Effect.void
