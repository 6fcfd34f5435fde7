import type { ConfigError } from "@agent/domain"
import type * as SqlClient from "@effect/sql/SqlClient"
import { Layer } from "effect"
import { AgentGenerator } from "./agent/AgentGenerator.js"
import { AgentRegistry } from "./agent/AgentRegistry.js"
import { ApprovalStore } from "./permission/ApprovalStore.js"
import { PermissionPolicy } from "./permission/PermissionPolicy.js"
import { PermissionService } from "./permission/PermissionService.js"
import { Bus } from "./runtime/Bus.js"
import { Hooks } from "./hooks/Hooks.js"
import { Instance } from "./runtime/Instance.js"
import * as Tracing from "./runtime/Tracing.js"
import { CommandRegistry } from "./session/CommandRegistry.js"
import { SessionLoop } from "./session/SessionLoop.js"
import { Compaction } from "./context/Compaction.js"
import { InstructionLoader } from "./context/InstructionLoader.js"
import { SkillRegistry } from "./context/SkillRegistry.js"
import { ConfigService } from "./config/ConfigService.js"
import * as Database from "./store/Database.js"
import * as EventLogWriter from "./store/EventLogWriter.js"
import { SessionStore } from "./store/SessionStore.js"
import { LLMService } from "./llm/LLMService.js"
import { ProviderRegistry } from "./llm/ProviderRegistry.js"
import { Mcp } from "./mcp/Mcp.js"
import { Sandbox } from "./sandbox/Sandbox.js"
import { QuestionService } from "./question/QuestionService.js"
import { SessionChanges } from "./snapshot/SessionChanges.js"
import { SessionStatuses } from "./runtime/SessionStatuses.js"
import { Snapshot } from "./snapshot/Snapshot.js"
import { type AnyTool } from "./tool/Tool.js"
import { ToolRegistry } from "./tool/ToolRegistry.js"
import { FileTimes } from "./tool/FileTimes.js"
import { Truncation } from "./tool/Truncation.js"
import * as BuiltinTools from "./tools/BuiltinTools.js"

export interface AppLayerOptions<PolicyError = never> {
  /** Which directory, home and env the runtime sees (default: the process's). */
  readonly instance?: Layer.Layer<Instance>
  /** The enterprise policy (default: the managed config's `permission` key, no audit). */
  readonly policy?: Layer.Layer<PermissionPolicy, PolicyError, ConfigService | Instance>
  /**
   * The database (default: `AGENT_DATABASE_URL`, `AGENT_DB`, config `database.url` or `<data>/agent.db`;
   * `Database.layerMemory` for tests, `Database.layerTarget(url)` for a given PostgreSQL URL).
   */
  readonly database?: Layer.Layer<SqlClient.SqlClient, never, Instance | ConfigService>
  /** Where "always" approvals are kept (default: the database). */
  readonly approvals?: Layer.Layer<ApprovalStore, never, Instance | SqlClient.SqlClient>
  /** The model providers (default: from config and the environment; tests use `FakeLLM`). */
  readonly providers?: Layer.Layer<ProviderRegistry, never, ConfigService | Instance>
  /** The model streaming service (default: the provider's `doStream`, see LLMService); benchmarks wrap it to time it. */
  readonly llm?: Layer.Layer<LLMService>
  /** The snapshot store (default: `Snapshot.layer`); benchmarks wrap it to time it. */
  readonly snapshot?: Layer.Layer<Snapshot, never, Instance | ConfigService | SqlClient.SqlClient | Bus>
  /** Tools offered besides the built-in ones. */
  readonly tools?: ReadonlyArray<AnyTool>
  /** Where the agent's processes run (default: `Sandbox.layer`, bubblewrap on Linux); a container or remote backend goes here. */
  readonly sandbox?: Layer.Layer<Sandbox, never, Instance | Bus>
  /** Where spans go (default: `Tracing.layer`, stderr under `AGENT_TRACE=1`, else Effect's default tracer). */
  readonly tracing?: Layer.Layer<never, never, Instance>
}

export type AppServices =
  | Instance
  | ConfigService
  | SqlClient.SqlClient
  | Bus
  | Sandbox
  | ApprovalStore
  | PermissionPolicy
  | AgentRegistry
  | PermissionService
  | SessionStore
  | ProviderRegistry
  | LLMService
  | ToolRegistry
  | Truncation
  | InstructionLoader
  | SkillRegistry
  | QuestionService
  | Mcp
  | Compaction
  | Snapshot
  | SessionChanges
  | SessionLoop
  | Hooks
  | CommandRegistry
  | AgentGenerator

/**
 * The one composition root: the CLI, the server and the tests all build their runtime
 * here and replace single nodes through the options. Every node is built once.
 */
export const makeAppLayer = <PolicyError = never>(
  options: AppLayerOptions<PolicyError> = {}
): Layer.Layer<AppServices, ConfigError | PolicyError> => {
  const instance = options.instance ?? Instance.layer
  // The tracer is set first, so that it is in place for everything built after it.
  const traced = Layer.provideMerge(options.tracing ?? Tracing.layer, instance)
  // The database may be named in the config (`database.url`), so it is built on top of it.
  const configured = Layer.mergeAll(options.database ?? Database.layer, Bus.layer).pipe(
    Layer.provideMerge(ConfigService.layer),
    Layer.provideMerge(traced)
  )
  // Built before every service that publishes, so it subscribes first and stops last (a no-op on SQLite).
  const logged = EventLogWriter.layer.pipe(Layer.provideMerge(configured))
  const sandboxed = (options.sandbox ?? Sandbox.layer).pipe(Layer.provideMerge(logged))
  const services = Layer.mergeAll(
    options.approvals ?? ApprovalStore.layerSql,
    options.policy ?? PermissionPolicy.layer,
    AgentRegistry.layer,
    SessionStore.layer,
    options.providers ?? ProviderRegistry.layer,
    options.llm ?? LLMService.layer,
    Truncation.layer,
    FileTimes.layer,
    InstructionLoader.layer,
    SkillRegistry.layer,
    QuestionService.layer,
    Mcp.layer,
    options.snapshot ?? Snapshot.layer
  ).pipe(Layer.provideMerge(sandboxed))
  const withTools = BuiltinTools.layer(options.tools ?? []).pipe(Layer.provideMerge(services))
  const withCompaction = Compaction.layer.pipe(Layer.provideMerge(withTools))
  const permissions = PermissionService.layer.pipe(Layer.provideMerge(withCompaction))
  const hooked = Hooks.layer.pipe(Layer.provideMerge(permissions))
  const changes = SessionChanges.layer.pipe(Layer.provideMerge(hooked), Layer.provideMerge(SessionStatuses.layer))
  const loop = SessionLoop.layer.pipe(Layer.provideMerge(changes))
  return Layer.mergeAll(CommandRegistry.layer, AgentGenerator.layer).pipe(Layer.provideMerge(loop))
}
