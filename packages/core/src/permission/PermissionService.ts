import {
  CorrectedError,
  type DecidedBy,
  DeniedError,
  type PermissionID,
  type PermissionReply,
  type PermissionRequest,
  PermissionRequestNotFound,
  type PermissionRule,
  type PermissionRuleset,
  type PermissionToolRef,
  RejectedError,
  type RemoteAskBody,
  type SessionID
} from "@agent/domain"
import { Context, Deferred, Duration, Effect, Layer, Option, Ref } from "effect"
import { ApprovalStore } from "./ApprovalStore.js"
import * as Identifier from "../runtime/Identifier.js"
import * as Wildcard from "../runtime/Wildcard.js"
import { Bus } from "../runtime/Bus.js"
import { Instance } from "../runtime/Instance.js"
import * as Telemetry from "../runtime/Telemetry.js"
import type { TelemetryRecorder } from "../runtime/Telemetry.js"
import * as Permission from "./Permission.js"
import { decide } from "./PermissionDecision.js"
import { PermissionPolicy } from "./PermissionPolicy.js"

export interface AskInput {
  readonly sessionID: SessionID
  readonly permission: string
  /** What this call touches; every pattern is checked. */
  readonly patterns: ReadonlyArray<string>
  /** What "always" would allow from now on (e.g. `git status *`). */
  readonly always: ReadonlyArray<string>
  /**
   * Patterns among `patterns` that the rules cannot read (a command whose name is computed
   * when it runs), with why: they are decided by `Permission.evaluateOpaque`, and an ask for
   * one is for a person only.
   */
  readonly opaque?: ReadonlyArray<{ readonly pattern: string; readonly reason: string }>
  readonly metadata?: Record<string, unknown>
  readonly tool?: PermissionToolRef
  /** The agent's rules followed by the session's rules. */
  readonly ruleset: PermissionRuleset
  /** The call runs in the OS sandbox: rules with the pattern `sandboxed` match it (`Permission.forSandbox`). */
  readonly sandboxed?: boolean
  /** An ask for this call is for a person only, and why (leaving the sandbox). */
  readonly requiresPerson?: string
  /**
   * `--auto-approve`: an ask is answered "once" at once (still published as asked and replied, and
   * audited); deny rules still apply, and an ask only a person may answer is left to one.
   */
  readonly autoApprove?: boolean
}

export interface ReplyInput {
  readonly requestID: string
  readonly reply: PermissionReply
  /** With `reject`: feedback for the model, which then continues instead of stopping. */
  readonly message?: string
  /**
   * With `reject`: also deny the ask's `always` patterns from now on in this project (a stored
   * deny, kept where "always" approvals are), as an editor's "reject always" asks.
   */
  readonly remember?: boolean
}

export type AskError = DeniedError | RejectedError | CorrectedError

/** How an ask held for another process ended (`hold`). */
export type HoldOutcome =
  | { readonly _tag: "Replied"; readonly reply: PermissionReply; readonly message?: string }
  | { readonly _tag: "Timeout" }

interface Pending {
  readonly request: PermissionRequest
  readonly deferred: Deferred.Deferred<PermissionReply, RejectedError | CorrectedError>
  /** Held for another process (`hold`): its "always" is that process's to keep, not this project's. */
  readonly held: boolean
}

/**
 * Decides tool calls: rules first (agent, session, then the enterprise policy, which
 * nobody can override), then the project's stored "always" approvals, then the user. A
 * deny rule is final: an approval never turns it into an allow, nor answers an ask that
 * the policy itself decided.
 */
export class PermissionService extends Context.Tag("@agent/core/PermissionService")<
  PermissionService,
  {
    readonly ask: (input: AskInput) => Effect.Effect<void, AskError>
    readonly reply: (input: ReplyInput) => Effect.Effect<void, PermissionRequestNotFound>
    readonly list: () => Effect.Effect<ReadonlyArray<PermissionRequest>>
    /**
     * An ask another process decided to ask (`agent run --approver`): pending here like this
     * runtime's own (listed, published, answered by `reply`) until answered or `timeout`; no rule
     * of this runtime is applied, and an "always" is not stored here. `onAsked` gets its id.
     */
    readonly hold: (
      input: RemoteAskBody,
      onAsked: (id: PermissionID) => Effect.Effect<void>
    ) => Effect.Effect<HoldOutcome>
    /** Approvals given with "always" for this project (persisted). */
    readonly approvals: () => Effect.Effect<PermissionRuleset>
  }
>() {
  static readonly layer: Layer.Layer<PermissionService, never, Bus | ApprovalStore | PermissionPolicy | Instance> =
    Layer.scoped(
      PermissionService,
      Effect.gen(function*() {
        const bus = yield* Bus
        const store = yield* ApprovalStore
        const policy = yield* PermissionPolicy
        const instance = yield* Instance
        const approved = yield* Ref.make<PermissionRuleset>(yield* store.load(instance.projectID))
        const pending = new Map<string, Pending>()

        const relevantRules = relevantRulesOf(policy)
        const audit = auditOf(policy, yield* Telemetry.recorder)

        const publishReplied = (request: PermissionRequest, reply: PermissionReply) =>
          bus.publish({ type: "permission.replied", properties: { sessionID: request.sessionID, requestID: request.id, reply } })

        const settle = (entry: Pending, reply: PermissionReply, result: Effect.Effect<void, RejectedError | CorrectedError>) =>
          Effect.gen(function*() {
            pending.delete(entry.request.id)
            yield* publishReplied(entry.request, reply)
            yield* Deferred.complete(entry.deferred, Effect.as(result, reply))
          })

        /** Pending before it is published: a client may answer as soon as it sees the event. */
        const open = (request: PermissionRequest, held: boolean) =>
          Effect.gen(function*() {
            const entry: Pending = { request, deferred: yield* Deferred.make<PermissionReply, RejectedError | CorrectedError>(), held }
            pending.set(request.id, entry)
            yield* audit(request, "ask", { requestID: request.id })
            yield* bus.publish({ type: "permission.asked", properties: request })
            return entry
          })

        /** The caller went away (aborted, disconnected, timed out): withdraw the request so no client keeps showing it. */
        const withdraw = (entry: Pending) => pending.has(entry.request.id) ? settle(entry, "reject", Effect.void) : Effect.void

        const ask = Effect.fn("PermissionService.ask")(function*(asked: AskInput) {
          const sandboxed = asked.sandboxed === true
          const policyRules = Permission.forSandbox(policy.rules, sandboxed)
          const input = { ...asked, ruleset: Permission.forSandbox(asked.ruleset, sandboxed) }
          const decision = decide(input, policyRules, yield* Ref.get(approved))
          if (decision._tag === "Deny") {
            yield* audit(input, "deny", { rule: decision.rule })
            yield* bus.publish(deniedEvent(asked, decision.rule, decision.pattern))
            return yield* new DeniedError({
              permission: input.permission,
              pattern: decision.pattern,
              rules: Permission.strip(relevantRules(input.permission, asked.ruleset)),
              ...(decision.unreadable === undefined ? {} : { unreadable: decision.unreadable })
            })
          }
          if (decision._tag === "Allow") {
            yield* audit(input, "allow", decision.rule ? { rule: decision.rule } : {})
            return
          }
          const { requiresPerson } = decision
          const request: PermissionRequest = {
            id: Identifier.ascending("permission") as PermissionID,
            sessionID: input.sessionID,
            permission: input.permission,
            patterns: [...input.patterns],
            always: [...input.always],
            metadata: input.metadata ?? {},
            ...(input.tool ? { tool: input.tool } : {}),
            ...(requiresPerson === undefined ? {} : { requiresPerson }),
            time: { created: Date.now() }
          }
          // `--auto-approve` answers "once" right here; an ask only a person may answer still waits for one.
          if (asked.autoApprove === true && requiresPerson === undefined) {
            yield* audit(request, "ask", { requestID: request.id })
            yield* bus.publish({ type: "permission.asked", properties: request })
            yield* audit(request, "once", { requestID: request.id })
            return yield* publishReplied(request, "once")
          }
          const entry = yield* open(request, false)
          yield* Deferred.await(entry.deferred).pipe(
            Effect.onInterrupt(() => withdraw(entry)),
            Effect.withSpan("PermissionService.wait", {
              attributes: { permission: request.permission, "session.id": request.sessionID, pattern: request.patterns.join(" ") }
            })
          )
        })

        const reply = Effect.fn("PermissionService.reply")(function*(input: ReplyInput) {
          const entry = pending.get(input.requestID)
          if (!entry) return yield* new PermissionRequestNotFound({ requestID: input.requestID })
          const { request } = entry

          if (input.reply === "reject") {
            if (input.remember === true && request.always.length > 0 && !entry.held) {
              const denied = storedRules(request, "deny")
              yield* Ref.update(approved, (rules) => [...rules, ...denied])
              yield* store.add(instance.projectID, denied)
            }
            const feedback = input.message?.trim()
            yield* audit(request, feedback ? "corrected" : "reject", { requestID: request.id })
            yield* settle(
              entry,
              "reject",
              feedback
                ? Effect.fail(new CorrectedError({ requestID: request.id, feedback }))
                : Effect.fail(new RejectedError({ requestID: request.id, permission: request.permission }))
            )
            // Rejecting one call stops the turn, so the session's other questions are moot.
            for (const other of [...pending.values()]) {
              if (other.request.sessionID !== request.sessionID) continue
              yield* audit(other.request, "reject", { requestID: other.request.id })
              yield* settle(
                other,
                "reject",
                Effect.fail(new RejectedError({ requestID: other.request.id, permission: other.request.permission }))
              )
            }
            return
          }

          if (input.reply === "always" && request.always.length > 0 && !entry.held) {
            const added = storedRules(request, "allow")
            const approvals = yield* Ref.updateAndGet(approved, (rules) => [...rules, ...added])
            yield* store.add(instance.projectID, added)
            yield* audit(request, "always", { requestID: request.id })
            yield* settle(entry, "always", Effect.void)
            for (const other of [...pending.values()]) {
              if (other.request.sessionID !== request.sessionID || other.request.requiresPerson !== undefined) continue
              const covered = other.request.patterns.every(
                (pattern) => Permission.evaluate(other.request.permission, pattern, approvals).action === "allow"
              )
              if (!covered) continue
              yield* audit(other.request, "always", { requestID: other.request.id })
              yield* settle(other, "always", Effect.void)
            }
            return
          }

          yield* audit(request, input.reply, { requestID: request.id })
          yield* settle(entry, input.reply, Effect.void)
        })

        yield* Effect.addFinalizer(() => releaseAll(pending, settle))

        return {
          ask,
          reply,
          hold: holdOf(open, withdraw),
          list: Effect.fn("PermissionService.list")(function*() {
            return [...pending.values()].map((entry) => entry.request)
          }),
          approvals: Effect.fn("PermissionService.approvals")(function*() {
            return yield* Ref.get(approved)
          })
        }
      })
    )
}

/** What "always" (allow) or "reject always" (deny) stores for a request: a rule per `always` pattern. */
const storedRules = (request: PermissionRequest, action: "allow" | "deny"): PermissionRuleset =>
  request.always.map((pattern) => ({
    permission: request.permission,
    pattern,
    action,
    source: { layer: "approval", note: `always ${action === "allow" ? "allowed" : "rejected"} in session ${request.sessionID}` }
  }))
/** Shutting down: nobody is left to answer. A held ask is not answered "reject" for a person: its asker hears the server went away. */
const releaseAll = (
  pending: Map<string, Pending>,
  settle: (entry: Pending, reply: PermissionReply, result: Effect.Effect<void, RejectedError | CorrectedError>) => Effect.Effect<void>
) =>
  Effect.forEach([...pending.values()], (entry) =>
    entry.held
      ? Effect.zipRight(Effect.sync(() => pending.delete(entry.request.id)), Deferred.interrupt(entry.deferred))
      : settle(entry, "reject", Effect.fail(new RejectedError({ requestID: entry.request.id }))))

/** The event that says a rule denied a call, and which rule (from which file). */
const deniedEvent = (asked: AskInput, rule: PermissionRule, pattern: string) => {
  const decidedBy: DecidedBy = {
    type: "rule",
    permission: rule.permission,
    pattern: rule.pattern,
    ...(rule.source?.layer === undefined ? {} : { layer: rule.source.layer }),
    ...(rule.source?.file === undefined ? {} : { file: rule.source.file }),
    ...(rule.source?.key === undefined ? {} : { key: rule.source.key })
  }
  return {
    type: "permission.denied",
    properties: { sessionID: asked.sessionID, permission: asked.permission, patterns: [pattern], ...(asked.tool ? { tool: asked.tool } : {}), decidedBy }
  } as const
}

/** `PermissionService.hold` over the service's own pending list (`open`, `withdraw`). */
const holdOf = (
  open: (request: PermissionRequest, held: boolean) => Effect.Effect<Pending>,
  withdraw: (entry: Pending) => Effect.Effect<void>
) =>
  Effect.fn("PermissionService.hold")(function*(input: RemoteAskBody, onAsked: (id: PermissionID) => Effect.Effect<void>) {
    const request: PermissionRequest = {
      id: Identifier.ascending("permission") as PermissionID,
      sessionID: input.sessionID,
      permission: input.permission,
      patterns: [...input.patterns],
      always: [...input.always],
      metadata: { ...input.metadata, ...(input.directory === undefined ? {} : { directory: input.directory }), remote: true },
      ...(input.tool ? { tool: input.tool } : {}),
      time: { created: Date.now() }
    }
    const entry = yield* open(request, true)
    yield* onAsked(request.id)
    const answered = yield* Deferred.await(entry.deferred).pipe(
      Effect.map((reply): HoldOutcome => ({ _tag: "Replied", reply })),
      Effect.catchTags({
        RejectedError: () => Effect.succeed<HoldOutcome>({ _tag: "Replied", reply: "reject" }),
        CorrectedError: (error) => Effect.succeed<HoldOutcome>({ _tag: "Replied", reply: "reject", message: error.feedback })
      }),
      Effect.timeoutOption(Duration.seconds(input.timeout ?? DEFAULT_HOLD_SECONDS)),
      Effect.onInterrupt(() => withdraw(entry))
    )
    if (Option.isSome(answered)) return answered.value
    yield* withdraw(entry)
    return { _tag: "Timeout" } satisfies HoldOutcome
  })

/** How long `hold` keeps an ask whose body names no timeout. */
const DEFAULT_HOLD_SECONDS = 300

/** The rules in force for `permission` (the caller's, then the policy's), as a denial explains them. */
const relevantRulesOf = (policy: PermissionPolicy["Type"]) => (permission: string, ruleset: PermissionRuleset) =>
  Permission.merge(ruleset, policy.rules).filter((rule) => Wildcard.match(permission, rule.permission))

/**
 * Reports an outcome to the policy's audit hook (a failing hook is logged, never fails the ask) and,
 * when exported, counts it as a decision (`ask` is not one: its answer is).
 */
const auditOf = (policy: PermissionPolicy["Type"], telemetry: TelemetryRecorder | undefined) =>
(
  request: Pick<PermissionRequest, "sessionID" | "permission" | "patterns">,
  outcome: Parameters<PermissionPolicy["Type"]["audit"]>[0]["outcome"],
  extra: { rule?: PermissionRule; requestID?: string } = {}
) =>
  Effect.suspend(() => {
    if (telemetry && outcome !== "ask") telemetry.permissionDecision(request.permission, outcome)
    return policy.audit({
      sessionID: request.sessionID,
      permission: request.permission,
      patterns: request.patterns,
      outcome,
      time: Date.now(),
      ...extra
    })
  }).pipe(Effect.catchAllCause((cause) => Effect.logError("permission audit hook failed", cause)))
