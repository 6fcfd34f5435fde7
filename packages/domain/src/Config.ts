import { Schema } from "effect"
import { HooksConfig } from "./Hooks.js"
import { AgentMode, parseModelRef } from "./Agent.js"
import { ApproverConfig, NotifyConfig } from "./Approval.js"
import { PermissionConfig } from "./Permission.js"
import { SandboxConfig } from "./Sandbox.js"

const PositiveInt = Schema.Int.pipe(Schema.positive())
const NonNegativeInt = Schema.Int.pipe(Schema.nonNegative())

export const AgentColor = Schema.Union(
  Schema.String.pipe(Schema.pattern(/^#[0-9a-fA-F]{6}$/)),
  Schema.Literal("primary", "secondary", "accent", "success", "warning", "error", "info")
)

/**
 * Guards for one run (this runtime's addition): stop when a run has taken too long, has
 * produced nothing new for too long, or has spent too much.
 */
export const RunLimits = Schema.Struct({
  /** Wall-clock seconds for a whole run. */
  duration: Schema.optional(PositiveInt),
  /** Seconds without a new part (waiting for a permission answer does not count). */
  stall: Schema.optional(PositiveInt),
  /** Tokens (input + output + reasoning + cache) per run. */
  tokens: Schema.optional(PositiveInt),
  /** USD per run. */
  cost: Schema.optional(Schema.Number.pipe(Schema.positive()))
})
export type RunLimits = typeof RunLimits.Type

/** `provider/model` (the model id may hold more slashes); anything else would be dropped silently later. */
export const ModelRefString = Schema.String.pipe(
  Schema.filter((value) => parseModelRef(value) !== undefined, {
    message: (issue) =>
      `expected "provider/model" (e.g. "anthropic/claude-sonnet-4-5"), actual ${JSON.stringify(issue.actual)}`
  })
)

/** One entry of `agent.<name>` (and legacy `mode.<name>`), or a markdown agent's front matter. */
export const AgentConfig = Schema.Struct({
  name: Schema.optional(Schema.String),
  model: Schema.optional(ModelRefString),
  variant: Schema.optional(Schema.String),
  temperature: Schema.optional(Schema.Number),
  top_p: Schema.optional(Schema.Number),
  prompt: Schema.optional(Schema.String),
  /** Deprecated: `{tool: boolean}`, turned into permission rules. */
  tools: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Boolean })),
  disable: Schema.optional(Schema.Boolean),
  description: Schema.optional(Schema.String),
  mode: Schema.optional(AgentMode),
  hidden: Schema.optional(Schema.Boolean),
  options: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  color: Schema.optional(AgentColor),
  steps: Schema.optional(PositiveInt),
  /** Deprecated alias of `steps`. */
  maxSteps: Schema.optional(PositiveInt),
  permission: Schema.optional(PermissionConfig),
  limits: Schema.optional(RunLimits),
  /** This agent's sandbox keys, over the top-level `sandbox` (docs/sandbox.md). */
  sandbox: Schema.optional(SandboxConfig)
})
export type AgentConfig = typeof AgentConfig.Type

/** The keys an agent entry understands; anything else moves into `options`. */
export const AgentConfigKeys: ReadonlySet<string> = new Set(Object.keys(AgentConfig.fields))

export const McpLocalConfig = Schema.Struct({
  type: Schema.Literal("local"),
  command: Schema.NonEmptyArray(Schema.String),
  environment: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  enabled: Schema.optional(Schema.Boolean),
  timeout: Schema.optional(PositiveInt),
  cwd: Schema.optional(Schema.String),
  /** Run the server in the sandbox: `true` (the top-level settings) or its own (docs/sandbox.md). Default: not. */
  sandbox: Schema.optional(Schema.Union(Schema.Boolean, SandboxConfig))
})

export const McpOAuthConfig = Schema.Struct({
  clientId: Schema.optional(Schema.String),
  clientSecret: Schema.optional(Schema.String),
  scope: Schema.optional(Schema.String),
  callbackPort: Schema.optional(PositiveInt),
  redirectUri: Schema.optional(Schema.String)
})

export const McpRemoteConfig = Schema.Struct({
  type: Schema.Literal("remote"),
  url: Schema.String,
  headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  enabled: Schema.optional(Schema.Boolean),
  timeout: Schema.optional(PositiveInt),
  oauth: Schema.optional(Schema.Union(McpOAuthConfig, Schema.Literal(false)))
})

/** Legacy form that only switches a server off. */
export const McpToggleConfig = Schema.Struct({ enabled: Schema.Boolean })

export const McpConfig = Schema.Union(McpLocalConfig, McpRemoteConfig, McpToggleConfig)
export type McpConfig = typeof McpConfig.Type

export const ModelLimit = Schema.Struct({
  context: NonNegativeInt,
  input: Schema.optional(NonNegativeInt),
  output: NonNegativeInt
})

const ModelPrice = {
  input: Schema.Number,
  output: Schema.Number,
  cache_read: Schema.optional(Schema.Number),
  cache_write: Schema.optional(Schema.Number)
}

export const ModelCost = Schema.Struct({
  ...ModelPrice,
  /** OpenCode's price above 200K tokens of context: accepted, not used. */
  context_over_200k: Schema.optional(Schema.Struct(ModelPrice))
})

const Modality = Schema.Literal("text", "audio", "image", "video", "pdf")

const AnyRecord = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/**
 * One model of a provider, in OpenCode's shape (its models.dev fields, all optional). This runtime
 * uses `id`, `name`, `limit`, `cost`, `options` and `variants` (provider options of every call, and
 * the sets an agent's `variant` picks); the catalogue fields `family`, `release_date`, `modalities`,
 * `interleaved`, `status`, `experimental`, `provider` and `headers` are accepted so that OpenCode
 * configs load unchanged.
 */
export const ProviderModelConfig = Schema.Struct({
  id: Schema.optional(Schema.String),
  name: Schema.optional(Schema.String),
  family: Schema.optional(Schema.String),
  release_date: Schema.optional(Schema.String),
  limit: Schema.optional(ModelLimit),
  cost: Schema.optional(ModelCost),
  temperature: Schema.optional(Schema.Boolean),
  tool_call: Schema.optional(Schema.Boolean),
  reasoning: Schema.optional(Schema.Boolean),
  attachment: Schema.optional(Schema.Boolean),
  interleaved: Schema.optional(
    Schema.Union(Schema.Literal(true), Schema.Struct({ field: Schema.Literal("reasoning_content", "reasoning_details") }))
  ),
  modalities: Schema.optional(Schema.Struct({ input: Schema.Array(Modality), output: Schema.Array(Modality) })),
  experimental: Schema.optional(Schema.Boolean),
  status: Schema.optional(Schema.Literal("alpha", "beta", "deprecated")),
  provider: Schema.optional(Schema.Struct({ npm: Schema.optional(Schema.String), api: Schema.optional(Schema.String) })),
  variants: Schema.optional(Schema.Record({ key: Schema.String, value: AnyRecord })),
  options: Schema.optional(AnyRecord),
  headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
})

export const ProviderConfig = Schema.Struct({
  id: Schema.optional(Schema.String),
  name: Schema.optional(Schema.String),
  npm: Schema.optional(Schema.String),
  api: Schema.optional(Schema.String),
  env: Schema.optional(Schema.Array(Schema.String)),
  whitelist: Schema.optional(Schema.Array(Schema.String)),
  blacklist: Schema.optional(Schema.Array(Schema.String)),
  options: Schema.optional(
    Schema.Struct(
      {
        apiKey: Schema.optional(Schema.String),
        baseURL: Schema.optional(Schema.String),
        headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
        timeout: Schema.optional(Schema.Union(PositiveInt, Schema.Literal(false)))
      },
      Schema.Record({ key: Schema.String, value: Schema.Unknown })
    )
  ),
  models: Schema.optional(Schema.Record({ key: Schema.String, value: ProviderModelConfig }))
})
export type ProviderConfig = typeof ProviderConfig.Type

export const CommandConfig = Schema.Struct({
  template: Schema.String,
  description: Schema.optional(Schema.String),
  agent: Schema.optional(Schema.String),
  model: Schema.optional(Schema.String),
  subtask: Schema.optional(Schema.Boolean)
})

export const CompactionConfig = Schema.Struct({
  auto: Schema.optional(Schema.Boolean),
  prune: Schema.optional(Schema.Boolean),
  tail_turns: Schema.optional(NonNegativeInt),
  preserve_recent_tokens: Schema.optional(NonNegativeInt),
  reserved: Schema.optional(NonNegativeInt)
})

export const ToolOutputConfig = Schema.Struct({
  max_lines: Schema.optional(PositiveInt),
  max_bytes: Schema.optional(PositiveInt)
})

export const ExperimentalConfig = Schema.Struct({
  primary_tools: Schema.optional(Schema.Array(Schema.String)),
  continue_loop_on_deny: Schema.optional(Schema.Boolean),
  mcp_timeout: Schema.optional(PositiveInt)
})

/** OpenCode's other experimental switches: accepted with a warning, not used. */
export const ExperimentalIgnoredKeys: ReadonlySet<string> = new Set([
  "batch_tool",
  "openTelemetry",
  "disable_paste_summary",
  "chatMaxRetries",
  "hook",
  "policies"
])

/** What the OpenTelemetry export may carry (docs/telemetry.md; the export itself is set by `OTEL_*` variables). */
export const TelemetryConfig = Schema.Struct({
  /** Put prompt, system, output text and tool arguments and results on the spans (default false). */
  log_content: Schema.optional(Schema.Boolean)
})

/**
 * Limits of the snapshot store behind undo and session diffs (this runtime's addition; OpenCode
 * only has the `snapshot` switch).
 */
export const SnapshotStoreConfig = Schema.Struct({
  /** A project with more (not ignored) files than this gets no snapshots (default 25000). */
  max_files: Schema.optional(PositiveInt),
  /** Files larger than this many bytes are left out of snapshots (default 2 MiB). */
  max_file_size: Schema.optional(PositiveInt),
  /** Snapshots of sessions not updated for this many days are garbage-collected (default 7). */
  retention_days: Schema.optional(PositiveInt),
  /**
   * Watch the project's directories (Linux) so a step that ran bash or another tool that does not
   * name its files looks only at what changed; false scans the whole project after such steps
   * (default true).
   */
  watch: Schema.optional(Schema.Boolean)
})

/** Caps on the instructions sent with every request (this runtime's addition; Codex has `project_doc_max_bytes`). */
export const InstructionLimitsConfig = Schema.Struct({
  /** Bytes of one instruction file or URL (default 65536); the rest is cut, with a note saying so. */
  max_bytes: Schema.optional(PositiveInt),
  /** Bytes of all of them together, in the order they are sent (default 262144). */
  max_total_bytes: Schema.optional(PositiveInt)
})

export const ServerConfig = Schema.Struct({
  port: Schema.optional(NonNegativeInt),
  hostname: Schema.optional(Schema.String),
  mdns: Schema.optional(Schema.Boolean),
  mdnsDomain: Schema.optional(Schema.String),
  cors: Schema.optional(Schema.Array(Schema.String)),
  /** Names the Host header may give besides the server's own: `name`, `name:port` or `*` (this runtime's addition). */
  allowed_hosts: Schema.optional(Schema.Array(Schema.String))
})

/** `agent serve` as one replica of several on one PostgreSQL database (docs/cluster.md). */
export const ClusterConfig = Schema.Struct({
  /** Serve as a replica (as `--replica` does); needs a PostgreSQL `database.url` or `AGENT_DATABASE_URL`. */
  enabled: Schema.optional(Schema.Boolean),
  /** The address other replicas reach this one's runner at (default 127.0.0.1). */
  host: Schema.optional(Schema.String),
  /** The runner's port (default 34431). */
  port: Schema.optional(NonNegativeInt),
  /** The address the runner listens on (default: `host`). */
  listen_host: Schema.optional(Schema.String),
  /** Shards the sessions are spread over; every replica must use the same number (default 64). */
  shards: Schema.optional(PositiveInt),
  /** The prefix of the cluster's tables and locks, for two clusters on one database (default agent_cluster). */
  prefix: Schema.optional(Schema.String.pipe(Schema.pattern(/^[a-z_][a-z0-9_]{0,40}$/))),
  /** How long a stopping replica lets a running tool call finish before it hands the session over (default 30). */
  grace_seconds: Schema.optional(Schema.NonNegative),
  /** How long a dead replica's shards stay locked before another takes them (default 10). */
  lock_expiration_seconds: Schema.optional(Schema.Positive)
})

export const SkillsConfig = Schema.Struct({
  paths: Schema.optional(Schema.Array(Schema.String)),
  urls: Schema.optional(Schema.Array(Schema.String))
})

/**
 * One entry of OpenCode's `plugin` list: a package (`name@version`) or a path, alone or with its
 * options. Loaded, merged and listed; plugins do not run in this runtime.
 */
export const PluginSpec = Schema.Union(
  Schema.String,
  Schema.Tuple(Schema.String, Schema.Record({ key: Schema.String, value: Schema.Unknown }))
)
export type PluginSpec = typeof PluginSpec.Type

export const Config = Schema.Struct({
  $schema: Schema.optional(Schema.String),
  model: Schema.optional(ModelRefString),
  small_model: Schema.optional(ModelRefString),
  default_agent: Schema.optional(Schema.String),
  username: Schema.optional(Schema.String),
  agent: Schema.optional(Schema.Record({ key: Schema.String, value: AgentConfig })),
  /** Deprecated: merged into `agent` with `mode: "primary"`. */
  mode: Schema.optional(Schema.Record({ key: Schema.String, value: AgentConfig })),
  permission: Schema.optional(PermissionConfig),
  /** Deprecated: `{tool: boolean}`, turned into permission rules. */
  tools: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Boolean })),
  instructions: Schema.optional(Schema.Array(Schema.String)),
  instruction_limits: Schema.optional(InstructionLimitsConfig),
  mcp: Schema.optional(Schema.Record({ key: Schema.String, value: McpConfig })),
  provider: Schema.optional(Schema.Record({ key: Schema.String, value: ProviderConfig })),
  disabled_providers: Schema.optional(Schema.Array(Schema.String)),
  enabled_providers: Schema.optional(Schema.Array(Schema.String)),
  command: Schema.optional(Schema.Record({ key: Schema.String, value: CommandConfig })),
  skills: Schema.optional(SkillsConfig),
  compaction: Schema.optional(CompactionConfig),
  tool_output: Schema.optional(ToolOutputConfig),
  experimental: Schema.optional(ExperimentalConfig),
  server: Schema.optional(ServerConfig),
  subagent_depth: Schema.optional(NonNegativeInt),
  /** Tool calls of one step that run at once; the others wait, in the order the model made them (default 10). */
  tool_concurrency: Schema.optional(PositiveInt),
  /** Run guards for every agent; `agent.<name>.limits` overrides them per key. */
  limits: Schema.optional(RunLimits),
  /** Retries of rate-limited or overloaded provider calls (default 10 attempts). */
  retry: Schema.optional(Schema.Struct({
    attempts: Schema.optional(NonNegativeInt),
    /** The first wait in milliseconds when the provider names none (default 2000), doubled each attempt up to 30 s. */
    delay: Schema.optional(NonNegativeInt)
  })),
  share: Schema.optional(Schema.Literal("manual", "auto", "disabled")),
  /**
   * OpenCode's plugins, from every config file and `plugin(s)/*.{ts,js}` of every config dir, merged
   * (a later file wins a package or file named twice). Listed only: plugins do not run here.
   */
  plugin: Schema.optional(Schema.Array(PluginSpec)),
  /** Record the project's files at every step, for undo and session diffs (default true). */
  snapshot: Schema.optional(Schema.Boolean),
  snapshot_store: Schema.optional(SnapshotStoreConfig),
  /** The OS sandbox of the processes the agent starts (docs/sandbox.md). */
  sandbox: Schema.optional(SandboxConfig),
  /** Where the store lives (docs/storage.md): `url` a PostgreSQL URL; unset, the SQLite file. `AGENT_DATABASE_URL` wins. */
  database: Schema.optional(Schema.Struct({ url: Schema.optional(Schema.String) })),
  /** Replicas of `agent serve` on one PostgreSQL database (docs/cluster.md). */
  cluster: Schema.optional(ClusterConfig),
  /** What exported spans may carry (docs/telemetry.md). */
  telemetry: Schema.optional(TelemetryConfig),
  /** Hooks in Claude Code's shape; every file's run (a project's once it is trusted): docs/hooks.md. */
  hooks: Schema.optional(HooksConfig),
  /**
   * `permission.approver` in a file (moved here while the file is read, so that `permission` stays a
   * map of rules): who answers the asks of a run nobody watches (docs/permissions.md).
   */
  approver: Schema.optional(ApproverConfig),
  /** Webhooks told of permission asks, run ends and limit stops (docs/configuration.md). */
  notify: Schema.optional(NotifyConfig)
})
export type Config = typeof Config.Type

/** Top-level keys OpenCode understands that this runtime does not use: loaded with a warning. */
export const ConfigIgnoredKeys: ReadonlySet<string> = new Set([
  "reference",
  "references",
  "shell",
  "watcher",
  "formatter",
  "lsp",
  "attachment",
  "enterprise",
  "logLevel",
  "autoupdate",
  "layout",
  "theme",
  "keybinds",
  "tui"
])

/** The top-level keys a file may hold (`approver` is written `permission.approver`). */
export const ConfigKeys: ReadonlySet<string> = new Set(Object.keys(Config.fields).filter((key) => key !== "approver"))

/** Where one effective config value came from. */
export const ConfigSource = Schema.Struct({
  /** A file path, `env:VAR`, or `default`. */
  file: Schema.String,
  /** Dotted key path inside that file. */
  key: Schema.String,
  line: Schema.optional(Schema.Number)
})
export type ConfigSource = typeof ConfigSource.Type

export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  file: Schema.String,
  line: Schema.optional(Schema.Number),
  key: Schema.optional(Schema.String),
  detail: Schema.String
}) {
  override get message() {
    const where = this.line === undefined ? this.file : `${this.file}:${this.line}`
    return this.key ? `${where}: ${this.key}: ${this.detail}` : `${where}: ${this.detail}`
  }
}
