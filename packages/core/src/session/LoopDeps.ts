// What the session loop's parts use: the layer's services, yielded once, and the settings read from
// config. Built by SessionLoop's layer and passed to the run, the step and the tool calls.
import type { Agent, AgentNotFound, PermissionRuleset, SessionID, SessionStatus } from "@agent/domain"
import { type Context, Effect, FiberSet } from "effect"
import * as path from "node:path"
import { AgentRegistry } from "../agent/AgentRegistry.js"
import { Compaction } from "../context/Compaction.js"
import { InstructionLoader } from "../context/InstructionLoader.js"
import { SkillRegistry } from "../context/SkillRegistry.js"
import { ConfigService } from "../config/ConfigService.js"
import { Hooks } from "../hooks/Hooks.js"
import { Bus } from "../runtime/Bus.js"
import { Instance } from "../runtime/Instance.js"
import { LLMService } from "../llm/LLMService.js"
import { ProviderRegistry } from "../llm/ProviderRegistry.js"
import { PermissionPolicy } from "../permission/PermissionPolicy.js"
import { PermissionService } from "../permission/PermissionService.js"
import { SessionChanges } from "../snapshot/SessionChanges.js"
import { Snapshot } from "../snapshot/Snapshot.js"
import { SessionStore } from "../store/SessionStore.js"
import { Mcp } from "../mcp/Mcp.js"
import { resourceTools } from "../mcp/McpTools.js"
import { ToolRegistry } from "../tool/ToolRegistry.js"
import { Truncation } from "../tool/Truncation.js"
import { SessionStatuses, type SessionStatusesShape } from "../runtime/SessionStatuses.js"
import { DEFAULT_RETRY_ATTEMPTS } from "./Decisions.js"

/** Tool calls of one step that run at once (`tool_concurrency`); the rest wait their turn, in order. Claude Code's default. */
export const DEFAULT_TOOL_CONCURRENCY = 10

type Service<T> = T extends Context.Tag<any, infer S> ? S : never

export interface LoopSettings {
  readonly retryAttempts: number
  /** The first retry delay (ms), doubling; undefined: the default. */
  readonly retryDelay: number | undefined
  readonly toolConcurrency: number
  /** `experimental.continue_loop_on_deny`: a rejected ask does not stop the run. */
  readonly continueOnDeny: boolean
  readonly subagentDepth: number
  /** `experimental.primary_tools`: tools subagents do not get. */
  readonly primaryTools: ReadonlyArray<string>
  /** `telemetry.log_content`: prompt and output text go on the spans. */
  readonly logContent: boolean
}

export interface LoopDeps {
  readonly store: Service<typeof SessionStore>
  readonly bus: Service<typeof Bus>
  readonly agents: Service<typeof AgentRegistry>
  readonly providers: Service<typeof ProviderRegistry>
  readonly llm: Service<typeof LLMService>
  readonly registry: Service<typeof ToolRegistry>
  readonly permissions: Service<typeof PermissionService>
  readonly policy: Service<typeof PermissionPolicy>
  readonly truncation: Service<typeof Truncation>
  readonly instructions: Service<typeof InstructionLoader>
  readonly compaction: Service<typeof Compaction>
  readonly skills: Service<typeof SkillRegistry>
  readonly mcp: Service<typeof Mcp>
  readonly mcpResourceTools: ReturnType<typeof resourceTools>
  readonly instance: Service<typeof Instance>
  readonly snapshots: Service<typeof Snapshot>
  readonly sessionChanges: Service<typeof SessionChanges>
  /** Hooks (docs/hooks.md); `hooks.active` false: the loop adds nothing for them. */
  readonly hooks: Service<typeof Hooks>
  /** Work that outlives a run (title generation): interrupted with the layer. */
  readonly background: FiberSet.FiberSet
  readonly settings: LoopSettings
  /** Session statuses (the runtime's one record), as `status`/`statuses` report them; every change is published. */
  readonly statuses: SessionStatusesShape
  readonly setStatus: (sessionID: SessionID, status: SessionStatus) => Effect.Effect<void>
  readonly resolveAgent: (name: string | undefined) => Effect.Effect<Agent, AgentNotFound>
  /** Skill folders are readable without an external-directory question. */
  readonly skillRules: Effect.Effect<PermissionRuleset>
}

/** Yields the loop's services once (in the layer's constructor) and reads its settings. */
export const makeLoopDeps = Effect.gen(function*() {
  const bus = yield* Bus
  const agents = yield* AgentRegistry
  const skills = yield* SkillRegistry
  const mcp = yield* Mcp
  const config = yield* (yield* ConfigService).get()
  const statuses = yield* SessionStatuses
  const setStatus = (sessionID: SessionID, status: SessionStatus) =>
    Effect.gen(function*() {
      yield* statuses.set(sessionID, status)
      yield* bus.publish({ type: "session.status", properties: { sessionID, status } })
      if (status.type === "idle") yield* bus.publish({ type: "session.idle", properties: { sessionID } })
    })
  const deps: LoopDeps = {
    store: yield* SessionStore,
    bus,
    agents,
    providers: yield* ProviderRegistry,
    llm: yield* LLMService,
    registry: yield* ToolRegistry,
    permissions: yield* PermissionService,
    policy: yield* PermissionPolicy,
    truncation: yield* Truncation,
    instructions: yield* InstructionLoader,
    compaction: yield* Compaction,
    skills,
    mcp,
    mcpResourceTools: resourceTools(mcp),
    instance: yield* Instance,
    snapshots: yield* Snapshot,
    sessionChanges: yield* SessionChanges,
    hooks: yield* Hooks,
    background: yield* FiberSet.make(),
    settings: {
      retryAttempts: config.retry?.attempts ?? DEFAULT_RETRY_ATTEMPTS,
      retryDelay: config.retry?.delay,
      toolConcurrency: config.tool_concurrency ?? DEFAULT_TOOL_CONCURRENCY,
      continueOnDeny: config.experimental?.continue_loop_on_deny === true,
      subagentDepth: config.subagent_depth ?? 1,
      primaryTools: config.experimental?.primary_tools ?? [],
      logContent: config.telemetry?.log_content === true
    },
    statuses,
    setStatus,
    resolveAgent: (name) => name === undefined ? agents.defaultAgent().pipe(Effect.orDie) : agents.get(name),
    skillRules: Effect.map(skills.directories(), (dirs) =>
      dirs.map((dir) => ({
        permission: "external_directory",
        pattern: path.join(dir, "*"),
        action: "allow" as const,
        source: { layer: "default" as const, note: "skill directory" }
      })))
  }
  return deps
})
