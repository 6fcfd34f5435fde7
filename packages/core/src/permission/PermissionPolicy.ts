import type { PermissionReply, PermissionRule, PermissionRuleset, SessionID } from "@agent/domain"
import { Context, Effect, Layer } from "effect"
import { ConfigService } from "../config/ConfigService.js"
import { Instance } from "../runtime/Instance.js"
import * as Permission from "./Permission.js"

/** One permission decision, as the audit hook sees it. */
export interface PermissionDecision {
  readonly sessionID: SessionID
  readonly permission: string
  readonly patterns: ReadonlyArray<string>
  /**
   * `allow`/`deny`: decided by rules (or a stored approval) without asking.
   * `ask`: a request was shown to the user. The others are the user's answers.
   */
  readonly outcome: "allow" | "deny" | "ask" | PermissionReply | "corrected"
  /** The rule that decided, for `allow` and `deny`. */
  readonly rule?: PermissionRule
  readonly requestID?: string
  readonly time: number
}

/**
 * The enterprise's say over permissions. Its rules are evaluated after every other layer,
 * so nothing a user, agent or session configures can loosen them, and every decision is
 * reported to `audit`.
 */
export class PermissionPolicy extends Context.Tag("@agent/core/PermissionPolicy")<
  PermissionPolicy,
  {
    readonly rules: PermissionRuleset
    readonly audit: (decision: PermissionDecision) => Effect.Effect<void>
  }
>() {
  /**
   * The managed config dir's `permission` key (and its legacy `tools`), in the order the managed
   * files wrote it; decisions are not recorded anywhere.
   */
  static readonly layer: Layer.Layer<PermissionPolicy, never, ConfigService | Instance> = Layer.effect(
    PermissionPolicy,
    Effect.gen(function*() {
      const instance = yield* Instance
      const { managed } = yield* (yield* ConfigService).info()
      const rules = managed === undefined
        ? []
        : Permission.fromConfig(managed.permission, { layer: "policy", origin: managed.origin, home: instance.home })
      return { rules, audit: () => Effect.void }
    })
  )

  static readonly make = (options: {
    readonly rules: PermissionRuleset
    readonly audit?: (decision: PermissionDecision) => Effect.Effect<void>
  }): Layer.Layer<PermissionPolicy> =>
    Layer.succeed(PermissionPolicy, {
      rules: options.rules.map((rule) => ({ ...rule, source: { ...rule.source, layer: "policy" as const } })),
      audit: options.audit ?? (() => Effect.void)
    })
}
