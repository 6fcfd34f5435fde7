import { Identifier, Permission, type Tool } from "@agent/core"
import { Agent, DeniedError, type MessageID, type PermissionConfig, type SandboxConfig, type SessionID } from "@agent/domain"
import { Effect } from "effect"

export type AskRequest = Parameters<Tool.ToolContext["ask"]>[0]

export interface TestToolContextOptions {
  /** Rules that answer the asks: a deny fails the call (default: allow everything). */
  readonly permission?: PermissionConfig
  /** Permissions denied outright, whatever the pattern. */
  readonly deny?: ReadonlyArray<string>
  readonly sessionID?: string
  /** Runs inside each ask, e.g. to look at the disk while the "user" is deciding. */
  readonly onAsk?: (request: AskRequest) => Effect.Effect<void>
  /** The agent's `sandbox` config (default: none, so the sandbox's defaults). */
  readonly sandbox?: SandboxConfig
}

/**
 * A tool context for calling a tool directly: it records every ask and every metadata update
 * and answers asks from rules; `controller` aborts the call.
 */
export const make = (options: TestToolContextOptions = {}) => {
  const asks: Array<AskRequest> = []
  const updates: Array<{ readonly at: number; readonly title?: string; readonly metadata: Record<string, unknown> }> = []
  const controller = new AbortController()
  const ruleset = Permission.merge(
    Permission.fromConfig(options.permission ?? { "*": "allow" }),
    Permission.fromConfig(Object.fromEntries((options.deny ?? []).map((permission) => [permission, "deny" as const])))
  )
  const context: Tool.ToolContext = {
    sessionID: (options.sessionID ?? Identifier.descending("session")) as SessionID,
    messageID: Identifier.ascending("message") as MessageID,
    callID: "call_test",
    agent: new Agent({
      name: "build",
      mode: "primary",
      native: true,
      permission: [],
      options: {},
      ...(options.sandbox ? { sandbox: options.sandbox } : {})
    }),
    abort: controller.signal,
    ask: (request) =>
      Effect.gen(function*() {
        asks.push(request)
        if (options.onAsk) yield* options.onAsk(request)
        const unreadable = new Map((request.opaque ?? []).map((entry) => [entry.pattern, entry.reason]))
        const rules = Permission.forSandbox(ruleset, request.sandboxed === true)
        const decide = (pattern: string) =>
          unreadable.has(pattern)
            ? Permission.evaluateOpaque(request.permission, pattern, rules)
            : Permission.evaluate(request.permission, pattern, rules)
        const denied = request.patterns.find((pattern) => decide(pattern).action === "deny")
        if (denied !== undefined) {
          const reason = unreadable.get(denied)
          return yield* Effect.fail(
            new DeniedError({ permission: request.permission, pattern: denied, rules: [], ...(reason === undefined ? {} : { unreadable: reason }) })
          )
        }
      }),
    rules: ruleset,
    metadata: (update) =>
      Effect.sync(() => {
        updates.push({ at: Date.now(), metadata: update.metadata ?? {}, ...(update.title ? { title: update.title } : {}) })
      })
  }
  return { context, asks, asked: asks, updates, controller }
}
