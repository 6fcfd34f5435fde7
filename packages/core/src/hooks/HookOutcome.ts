// What a hook's answer means, as Claude Code reads it (pure, table-tested): the exit code, stdout
// (JSON only when it starts with `{`) and stderr of one handler, then the verdict of all of an event's.
import type { HookEventName } from "@agent/domain"
import { Either, Schema } from "effect"

/** How one handler ended. An HTTP hook's 2xx body is read as a command's stdout with exit 0. */
export type RawResult =
  | { readonly _tag: "Exited"; readonly code: number; readonly stdout: string; readonly stderr: string }
  | { readonly _tag: "Http"; readonly status: number; readonly body: string }
  | { readonly _tag: "TimedOut"; readonly seconds: number }
  /** It could not start, or the URL could not be reached. */
  | { readonly _tag: "Failed"; readonly error: string }

export type Decision = "none" | "allow" | "deny" | "ask" | "block"

/** One handler's answer. */
export interface HookAnswer {
  readonly decision: Decision
  /** Why: to the model for deny and block, to the user for allow and ask. */
  readonly reason?: string
  /** New arguments for the call (Claude Code's field names). */
  readonly updatedInput?: Record<string, unknown>
  /** Text for the model. */
  readonly context?: string
  /** `continue: false`: the run stops, with this reason for the user. */
  readonly stop?: string
  /** For the user: the hook's `systemMessage`, or a non-blocking error. */
  readonly message?: string
  /** A non-blocking failure: the hook's exit code was neither 0 nor 2, it timed out, or it could not run. */
  readonly failure?: "error" | "timeout"
}

/** The JSON a hook may print; unknown keys are ignored, as Claude Code does. */
const HookJson = Schema.Struct({
  continue: Schema.optional(Schema.Boolean),
  stopReason: Schema.optional(Schema.String),
  suppressOutput: Schema.optional(Schema.Boolean),
  systemMessage: Schema.optional(Schema.String),
  decision: Schema.optional(Schema.Literal("approve", "block", "allow", "deny")),
  reason: Schema.optional(Schema.String),
  hookSpecificOutput: Schema.optional(Schema.Struct({
    hookEventName: Schema.optional(Schema.String),
    permissionDecision: Schema.optional(Schema.Literal("allow", "deny", "ask")),
    permissionDecisionReason: Schema.optional(Schema.String),
    updatedInput: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
    additionalContext: Schema.optional(Schema.String),
    /** PermissionRequest's answer. */
    decision: Schema.optional(Schema.Struct({
      behavior: Schema.Literal("allow", "deny"),
      message: Schema.optional(Schema.String),
      updatedInput: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
      interrupt: Schema.optional(Schema.Boolean)
    }))
  }))
})
type HookJson = typeof HookJson.Type
const decodeJson = Schema.decodeUnknownEither(Schema.parseJson(HookJson))

/** Events whose exit 2 blocks something; for the others stderr is only shown to the user. */
const CAN_BLOCK: ReadonlySet<HookEventName> = new Set([
  "PreToolUse",
  "PermissionRequest",
  "PostToolUse",
  "PostToolUseFailure",
  "UserPromptSubmit",
  "Stop",
  "SubagentStop"
])

/** Events where plain stdout (not JSON) is context for the model. */
const PLAIN_IS_CONTEXT: ReadonlySet<HookEventName> = new Set(["UserPromptSubmit", "SessionStart"])

const blockingDecision = (event: HookEventName): Decision => event === "PreToolUse" || event === "PermissionRequest" ? "deny" : "block"

const nonEmpty = (text: string | undefined) => (text !== undefined && text.trim() !== "" ? text.trim() : undefined)

const shape = (answer: Loose<HookAnswer>): HookAnswer =>
  Object.fromEntries(Object.entries(answer).filter(([, value]) => value !== undefined)) as unknown as HookAnswer

type Loose<T> = { readonly [K in keyof T]?: T[K] | undefined }

/** The decision a JSON answer states for `event`. */
const jsonDecision = (event: HookEventName, json: HookJson): Loose<HookAnswer> & { readonly decision: Decision } => {
  const specific = json.hookSpecificOutput
  if (event === "PreToolUse") {
    if (specific?.permissionDecision !== undefined) {
      return { decision: specific.permissionDecision, reason: specific.permissionDecisionReason, updatedInput: specific.updatedInput }
    }
    // Claude Code's older spelling: "approve" / "block".
    if (json.decision === "approve" || json.decision === "allow") return { decision: "allow", reason: json.reason, updatedInput: specific?.updatedInput }
    if (json.decision === "block" || json.decision === "deny") return { decision: "deny", reason: json.reason }
    return { decision: "none", updatedInput: specific?.updatedInput }
  }
  if (event === "PermissionRequest") {
    const answer = specific?.decision
    if (answer === undefined) return { decision: "none" }
    return { decision: answer.behavior, reason: answer.message, updatedInput: answer.updatedInput }
  }
  if (CAN_BLOCK.has(event) && json.decision === "block") return { decision: "block", reason: json.reason }
  return { decision: "none" }
}

/** Reads one handler's result for `event`. */
export const interpret = (event: HookEventName, raw: RawResult): HookAnswer => {
  switch (raw._tag) {
    case "TimedOut":
      return { decision: "none", failure: "timeout", message: `timed out after ${raw.seconds} s` }
    case "Failed":
      return { decision: "none", failure: "error", message: raw.error }
    case "Http":
      return raw.status >= 200 && raw.status < 300
        ? interpret(event, { _tag: "Exited", code: 0, stdout: raw.body, stderr: "" })
        : { decision: "none", failure: "error", message: `HTTP ${raw.status}${nonEmpty(raw.body) ? `: ${raw.body.trim().slice(0, 200)}` : ""}` }
    case "Exited":
      break
  }
  const { code, stdout, stderr } = raw
  // Exit 2 blocks, whatever stdout says.
  if (code === 2) {
    const text = nonEmpty(stderr) ?? "blocked by a hook"
    return CAN_BLOCK.has(event) ? { decision: blockingDecision(event), reason: text } : { decision: "none", message: text }
  }
  if (code !== 0) return { decision: "none", failure: "error", message: nonEmpty(stderr) ?? `exit code ${code}` }
  const trimmed = stdout.trim()
  if (!trimmed.startsWith("{")) {
    return PLAIN_IS_CONTEXT.has(event) && trimmed !== "" ? { decision: "none", context: trimmed } : { decision: "none" }
  }
  const decoded = decodeJson(trimmed)
  if (Either.isLeft(decoded)) {
    // Output that looks like JSON but is not what a hook answers: plain text, as Claude Code treats it.
    return PLAIN_IS_CONTEXT.has(event) ? { decision: "none", context: trimmed } : { decision: "none", failure: "error", message: `the hook printed JSON that is not a hook answer` }
  }
  const json = decoded.right
  return shape({
    ...jsonDecision(event, json),
    context: nonEmpty(json.hookSpecificOutput?.additionalContext),
    stop: json.continue === false ? (json.stopReason ?? "") : undefined,
    message: nonEmpty(json.systemMessage)
  })
}

/** What all the handlers of one event decided together. */
export interface Verdict {
  /** deny and block win over ask, ask over allow. */
  readonly decision: Decision
  /** The reasons of the handlers that decided so. */
  readonly reasons: ReadonlyArray<string>
  readonly updatedInput?: Record<string, unknown>
  readonly context: ReadonlyArray<string>
  /** Set when any handler said `continue: false`. */
  readonly stop?: string
  readonly messages: ReadonlyArray<string>
}

const RANK: Readonly<Record<Decision, number>> = { none: 0, allow: 1, ask: 2, deny: 3, block: 3 }

export const NO_VERDICT: Verdict = { decision: "none", reasons: [], context: [], messages: [] }

export const combine = (answers: ReadonlyArray<HookAnswer>): Verdict => {
  let decision: Decision = "none"
  for (const answer of answers) if (RANK[answer.decision] > RANK[decision]) decision = answer.decision
  const deciding = answers.filter((answer) => answer.decision === decision)
  const updated = [...(decision === "none" ? answers : deciding)].reverse().find((answer) => answer.updatedInput !== undefined)
  const stop = answers.find((answer) => answer.stop !== undefined)
  return {
    decision,
    reasons: decision === "none" ? [] : deciding.flatMap((answer) => (answer.reason ? [answer.reason] : [])),
    ...(updated?.updatedInput && decision !== "deny" && decision !== "block" ? { updatedInput: updated.updatedInput } : {}),
    context: answers.flatMap((answer) => (answer.context ? [answer.context] : [])),
    ...(stop ? { stop: stop.stop! } : {}),
    messages: answers.flatMap((answer) => (answer.message ? [answer.message] : []))
  }
}

/** A Stop (or SubagentStop) hook may keep the agent going this many times in a row; the 8th block is overridden. */
export const MAX_STOP_BLOCKS = 8

/** Whether a Stop block is obeyed, given how many blocks in a row came before it in this run. */
export const obeyStopBlock = (blocksBefore: number): boolean => blocksBefore + 1 < MAX_STOP_BLOCKS

/** The word `hook.ran` reports for one answer. */
export const decisionLabel = (answer: HookAnswer): string =>
  answer.failure ?? (answer.decision !== "none" ? answer.decision : answer.stop !== undefined ? "stop" : answer.context ? "context" : "none")
