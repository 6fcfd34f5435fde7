// Hooks in the tool-call pipeline (ToolCall.ts's interception points): PreToolUse before the call,
// PermissionRequest (and Notification) around an ask the rules leave to a person, PostToolUse after
// it, PostToolUseFailure after it failed. Built only when a hook runs (Hooks.active).
import { CorrectedError } from "@agent/domain"
import { Effect } from "effect"
import { claudeToolName, fromClaudeInput, toClaudeInput, toClaudeResponse } from "../hooks/ClaudeNames.js"
import type { Verdict } from "../hooks/HookOutcome.js"
import * as Permission from "../permission/Permission.js"
import { decide } from "../permission/PermissionDecision.js"
import * as Tool from "../tool/Tool.js"
import { type AskError, askPermission, type AskRequest, type StepCalls, type ToolCallInfo, type ToolCallInterceptor } from "./ToolCall.js"

/** What the hooks learned about each call of the step, by call id. */
interface CallNotes {
  /** The decoded arguments the tool runs with. */
  readonly input: Map<string, unknown>
  /** A PreToolUse hook allowed the call: its asks are answered, unless a deny rule or the policy decides. */
  readonly allowed: Set<string>
}

const joined = (verdict: Verdict, fallback: string) => (verdict.reasons.length > 0 ? verdict.reasons.join("\n") : fallback)

/** Context the hooks add for the model, after the tool's own text. */
const withContext = (text: string, verdict: Verdict, event: string): string => {
  const extra = [
    ...(verdict.decision === "block" ? [`${event} hook: ${joined(verdict, "blocked")}`] : []),
    ...verdict.context
  ]
  return extra.length === 0 ? text : `${text}\n\n${extra.join("\n")}`
}

/** Tells the run's report (`permission_denials`) that a hook refused the call. */
const publishDenied = (
  step: StepCalls,
  call: ToolCallInfo,
  input: { permission: string; patterns: ReadonlyArray<string>; event: string; reason: string }
) =>
  step.deps.bus.publish({
    type: "permission.denied",
    properties: {
      sessionID: step.state.sessionID,
      permission: input.permission,
      patterns: [...input.patterns],
      tool: { messageID: step.message.info.id, callID: call.callID },
      decidedBy: { type: "hook", event: input.event, reason: input.reason }
    }
  })

export const hookInterceptor = (getStep: () => StepCalls): ToolCallInterceptor => {
  const notes: CallNotes = { input: new Map(), allowed: new Set() }
  const base = (call: ToolCallInfo) => {
    const step = getStep()
    const hooks = step.deps.hooks
    return {
      step,
      hooks,
      toolName: claudeToolName(call.tool, hooks.mcpServers),
      fields: (input: unknown) => ({
        permission_mode: step.state.options.autoApprove ? "bypassPermissions" : "default",
        tool_name: claudeToolName(call.tool, hooks.mcpServers),
        tool_input: toClaudeInput(call.tool, input),
        tool_use_id: call.callID
      })
    }
  }

  /** PreToolUse "ask": a person confirms the call, as for an ask rule (deny rules still decide first). */
  const askPerson = (call: ToolCallInfo, reason: string) =>
    Effect.suspend(() => {
      const step = getStep()
      const permission = Permission.permissionOfTool(call.tool)
      return askPermission(step, { permission, patterns: ["*"], always: [], metadata: { hook: "PreToolUse", reason } }, call, [
        ...step.ruleset,
        { permission, pattern: "*", action: "ask" }
      ])
    })

  const before = (call: ToolCallInfo, params: unknown): Effect.Effect<unknown, Tool.ToolFailure> =>
    Effect.gen(function*() {
      const { step, hooks, toolName, fields } = base(call)
      notes.input.set(call.callID, params)
      if (!hooks.has("PreToolUse")) return params
      const verdict = yield* hooks.run({
        event: "PreToolUse",
        sessionID: step.state.sessionID,
        history: step.state.history,
        match: toolName,
        fields: fields(params)
      })
      if (verdict.stop !== undefined) step.outcome.blocked = true
      if (verdict.decision === "deny" || verdict.stop !== undefined) {
        const reason = verdict.stop !== undefined ? verdict.stop || "the hook stopped the run" : joined(verdict, "no reason given")
        yield* publishDenied(getStep(), call, { permission: Permission.permissionOfTool(call.tool), patterns: ["*"], event: "PreToolUse", reason })
        return yield* new Tool.ToolExecutionError({
          tool: call.tool,
          detail: `Blocked by a PreToolUse hook: ${verdict.stop !== undefined ? verdict.stop || "the hook stopped the run" : joined(verdict, "no reason given")}`
        })
      }
      let input = params
      if (verdict.updatedInput !== undefined) {
        const tool = step.tools.find((candidate) => candidate.id === call.tool)
        const changed = fromClaudeInput(call.tool, verdict.updatedInput)
        input = tool ? yield* Tool.decodeInput(tool, changed) : changed
        notes.input.set(call.callID, input)
      }
      if (verdict.decision === "allow") notes.allowed.add(call.callID)
      if (verdict.decision === "ask") yield* askPerson(call, joined(verdict, "a PreToolUse hook asks"))
      return input
    })

  const permission = (call: ToolCallInfo, request: AskRequest, next: Effect.Effect<void, AskError>): Effect.Effect<void, AskError> =>
    Effect.gen(function*() {
      const { step, hooks, toolName, fields } = base(call)
      const sandboxed = request.sandboxed === true
      // What the rules say, as the permission service will decide it: only an ask is the hooks' to answer.
      const decision = decide(
        {
          permission: request.permission,
          patterns: request.patterns,
          ruleset: Permission.forSandbox(step.ruleset, sandboxed),
          ...(request.opaque ? { opaque: request.opaque } : {}),
          ...(request.requiresPerson ? { requiresPerson: request.requiresPerson } : {})
        },
        Permission.forSandbox(step.deps.policy.rules, sandboxed),
        yield* step.deps.permissions.approvals()
      )
      if (decision._tag !== "Ask") return yield* next
      // A hook's allow never answers what only a person may (the managed policy, an unreadable command).
      const personOnly = decision.requiresPerson !== undefined
      if (notes.allowed.has(call.callID) && !personOnly) return
      if (hooks.has("PermissionRequest")) {
        const verdict = yield* hooks.run({
          event: "PermissionRequest",
          sessionID: step.state.sessionID,
          history: step.state.history,
          match: toolName,
          fields: { ...fields(notes.input.get(call.callID)), permission: request.permission, patterns: request.patterns }
        })
        if (verdict.decision === "deny" || verdict.decision === "block") {
          yield* publishDenied(getStep(), call, { permission: request.permission, patterns: request.patterns, event: "PermissionRequest", reason: joined(verdict, "no reason given") })
          return yield* new CorrectedError({ feedback: `Denied by a PermissionRequest hook: ${joined(verdict, "no reason given")}` })
        }
        if (verdict.decision === "allow" && !personOnly) return
      }
      const waitsForPerson = personOnly || !step.state.options.autoApprove
      if (!waitsForPerson || !hooks.has("Notification")) return yield* next
      // In the background: the person may answer before the hook is done.
      yield* hooks.runInBackground({
        event: "Notification",
        sessionID: step.state.sessionID,
          history: step.state.history,
        match: "permission_prompt",
        fields: { message: `The agent needs your permission to use ${toolName}`, notification_type: "permission_prompt" }
      })
      return yield* next
    })

  const after = (call: ToolCallInfo, result: Tool.ToolResult) =>
    Effect.gen(function*() {
      const { step, hooks, toolName, fields } = base(call)
      const input = notes.input.get(call.callID)
      if (!hooks.has("PostToolUse")) return result
      const verdict = yield* hooks.run({
        event: "PostToolUse",
        sessionID: step.state.sessionID,
          history: step.state.history,
        match: toolName,
        fields: { ...fields(input), tool_response: toClaudeResponse(call.tool, input, { output: result.output, title: result.title, metadata: result.metadata ?? {} }) }
      })
      if (verdict.stop !== undefined) step.outcome.blocked = true
      return { ...result, output: withContext(result.output, verdict, "PostToolUse") }
    })

  const failed = (call: ToolCallInfo, failure: Tool.ToolFailure) =>
    Effect.gen(function*() {
      const { step, hooks, toolName, fields } = base(call)
      if (!hooks.has("PostToolUseFailure")) return failure
      const verdict = yield* hooks.run({
        event: "PostToolUseFailure",
        sessionID: step.state.sessionID,
          history: step.state.history,
        match: toolName,
        fields: { ...fields(notes.input.get(call.callID)), error: failure.message, is_interrupt: false }
      })
      if (verdict.stop !== undefined) step.outcome.blocked = true
      const detail = withContext(failure.message, verdict, "PostToolUseFailure")
      // Permission failures keep their kind (a rejection stops the run); others carry the hooks' words.
      return detail === failure.message || failure._tag === "RejectedError" || failure._tag === "DeniedError" || failure._tag === "CorrectedError"
        ? failure
        : new Tool.ToolExecutionError({ tool: call.tool, detail })
    })

  return { before, permission, after, failed }
}
