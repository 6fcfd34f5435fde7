// The session loop's vocabulary: what a prompt asks, how a run ends, and the loop's own control flow.
// Its own file so the run's parts (Run.ts, Step.ts, ...) and SessionLoop.ts share it without a cycle.
import type {
  AgentNotFound,
  FilePartSource,
  MessageError,
  MessageID,
  MessageWithParts,
  ModelRef,
  SessionID,
  SessionNotFound,
  TokenUsage
} from "@agent/domain"
import { Data } from "effect"
import type { ModelNotConfigured } from "../llm/ProviderRegistry.js"

export type PromptPartInput =
  | { readonly type: "text"; readonly text: string; readonly synthetic?: boolean }
  | {
    readonly type: "file"
    readonly mime: string
    readonly url: string
    readonly filename?: string
    /** `{type: "resource", uri, clientName}`: an MCP resource, read through its server and given to the model. */
    readonly source?: typeof FilePartSource.Type
  }
  | { readonly type: "agent"; readonly name: string }
  | {
    readonly type: "subtask"
    readonly prompt: string
    readonly description: string
    readonly agent: string
    readonly model?: ModelRef
    /** The command that asked for it. */
    readonly command?: string
  }

export interface PromptInput {
  readonly sessionID: SessionID
  readonly parts: ReadonlyArray<PromptPartInput>
  /** The agent for this message (default: the session's last, else the default agent). */
  readonly agent?: string
  readonly model?: ModelRef
  /** The model's variant for this message (default: the agent's `variant`, when the model has it). */
  readonly variant?: string
  /** Extra system text for this message. */
  readonly system?: string
  readonly messageID?: MessageID
  /** Store the message without running the model. */
  readonly noReply?: boolean
  /** Legacy per-message switches: `{tool: false}` hides a tool. */
  readonly tools?: Record<string, boolean>
  /** Answer every permission ask of this run with "once" (deny rules still apply). */
  readonly autoApprove?: boolean
  /** A lower step limit for this run than the agent's own. */
  readonly maxSteps?: number
}

/** Why a run ended. */
export type StopReason =
  | "completed"
  | "rejected"
  | "error"
  | "aborted"
  | "steps"
  | "duration"
  | "stall"
  | "budget"

export interface RunUsage {
  readonly cost: number
  readonly tokens: number
  readonly steps: number
}

export interface RunOutcome {
  readonly reason: StopReason
  /** The last assistant message of the run, if the model was called. */
  readonly message?: MessageWithParts
  /** What went wrong, for `error` and the limits. */
  readonly error?: MessageError
  readonly usage: RunUsage
}

/** How a run ended, before the usage and last message are attached. */
export type Ending = Pick<RunOutcome, "reason" | "error">

export type LoopError = SessionNotFound | AgentNotFound | ModelNotConfigured

export interface RunOptions {
  readonly autoApprove: boolean
  readonly maxSteps?: number | undefined
  /** Summarize the session instead of running the model on it. */
  readonly compactOnly?: boolean
}

export const emptyUsage = (): TokenUsage => ({ input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } })
export const totalTokens = (usage: TokenUsage) =>
  usage.input + usage.output + usage.reasoning + usage.cache.read + usage.cache.write

export const errorOf = (name: string, message: string, extra: Record<string, unknown> = {}): MessageError => ({
  name,
  data: { message, ...extra }
})

/** The loop's own control flow: a step ended in a way that stops the run. */
export class StopRun extends Data.TaggedError("StopRun")<{ readonly reason: StopReason; readonly error?: MessageError }> {}
export const stopRun = (reason: StopReason, error: MessageError) => new StopRun({ reason, error })
