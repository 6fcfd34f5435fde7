// What `agent run` keeps of its permission asks for a script: the denials of the current prompt
// (the `result` event's `permission_denials`) and the `init` event that opens a JSON run (the
// notifications `notify` sends are built in the server package's Notify.ts, which `agent serve`
// shares). Loaded by both Run.ts and Attach.ts.
import type { BusEventOf, DecidedBy, PermissionRequest } from "@agent/domain"
import type { ApproverSettings } from "@agent/server/ApproverSettings"
import type { PermissionDenial, RunReport } from "./RunResult.js"

/** A denial of an ask: who decided, and what it was about. */
export const askDenial = (request: PermissionRequest, decidedBy: DecidedBy): PermissionDenial => ({
  tool: request.permission,
  // The patterns, as the rules saw them (a rule's denial can name nothing else).
  input: request.patterns.join(", "),
  sessionID: request.sessionID,
  ...(request.tool ? { callID: request.tool.callID } : {}),
  decidedBy
})

/** A denial published on the bus (a rule, or a hook). */
export const eventDenial = (event: BusEventOf<"permission.denied">): PermissionDenial => ({
  tool: event.properties.permission,
  input: event.properties.patterns.join(", "),
  sessionID: event.properties.sessionID,
  ...(event.properties.tool ? { callID: event.properties.tool.callID } : {}),
  decidedBy: event.properties.decidedBy
})

export const recordDenial = (report: RunReport, denial: PermissionDenial) => {
  report.denials.push(denial)
}

/** How the run's asks are answered, as the `init` event and docs/permissions.md say it. */
export type PermissionMode =
  | { readonly mode: "auto-approve" }
  | { readonly mode: "terminal" }
  | {
    readonly mode: "approver"
    readonly server: string | null
    readonly webhook: string | null
    readonly timeout: number
    readonly fallback: "deny" | "allow"
  }
  /** No terminal, no approver: an ask is rejected (exit 3). */
  | { readonly mode: "reject" }

export const permissionMode = (input: { autoApprove: boolean; terminal: boolean; approver: ApproverSettings | undefined }): PermissionMode => {
  if (input.autoApprove) return { mode: "auto-approve" }
  if (input.terminal) return { mode: "terminal" }
  const { approver } = input
  if (approver === undefined) return { mode: "reject" }
  return {
    mode: "approver",
    server: approver.server?.url ?? approver.here ?? null,
    webhook: approver.webhook?.url ?? null,
    timeout: approver.timeout,
    fallback: approver.fallback
  }
}

/** What the runtime says about the run before it starts; `null` where the target cannot tell. */
export interface RunDescription {
  readonly model: string | null
  readonly agent: string | null
  readonly tools: ReadonlyArray<string> | null
  readonly mcpServers: ReadonlyArray<{ readonly name: string; readonly status: string }> | null
  /**
   * The hooks in force (event, command, where from). Empty until hooks exist: the hooks feature
   * fills it from its own listing (`agent hooks list`).
   */
  readonly hooks: ReadonlyArray<{ readonly event: string; readonly command: string; readonly source?: string }>
}

/** The first JSON event of a run: the effective policy, in a CI log. */
export const initEvent = (sessionID: string, directory: string, description: RunDescription, mode: PermissionMode) => ({
  type: "init",
  timestamp: Date.now(),
  sessionID,
  cwd: directory,
  model: description.model,
  agent: description.agent,
  tools: description.tools,
  mcp_servers: description.mcpServers,
  hooks: description.hooks,
  permission_mode: mode
})
