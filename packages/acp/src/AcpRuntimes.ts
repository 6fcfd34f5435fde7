// The runtimes of one ACP connection: one per distinct (directory, client MCP servers), each built
// with `makeAppLayer` for that directory, so relative paths, instructions, snapshots and
// permissions resolve where the editor's session is, and the sessions land in the same store as
// `agent run` there. They live as long as the connection (its scope).
import { type AppServices, Instance, makeAppLayer } from "@agent/core"
import type { ConfigError, McpConfig } from "@agent/domain"
import type * as Acp from "@agentclientprotocol/sdk"
import { type Context, Effect, Layer, Scope } from "effect"
import * as path from "node:path"

export interface AcpRuntime {
  readonly key: string
  readonly directory: string
  readonly context: Context.Context<AppServices>
}

/** A client's MCP servers as `mcp` config entries (names kept; stdio as local, http and sse as remote). */
export const mcpConfigOf = (servers: ReadonlyArray<Acp.McpServer>): Record<string, McpConfig> =>
  Object.fromEntries(servers.map((server): [string, McpConfig] => {
    if ("type" in server && (server.type === "http" || server.type === "sse")) {
      const headers = Object.fromEntries(server.headers.map((header) => [header.name, header.value]))
      return [server.name, { type: "remote", url: server.url, ...(server.headers.length > 0 ? { headers } : {}), oauth: false }]
    }
    const stdio = server as Acp.McpServerStdio
    const environment = Object.fromEntries(stdio.env.map((variable) => [variable.name, variable.value]))
    return [stdio.name, { type: "local", command: [stdio.command, ...stdio.args], ...(stdio.env.length > 0 ? { environment } : {}) }]
  }))

/**
 * The environment of a runtime with the client's MCP servers: they go in as inline config
 * (`AGENT_CONFIG_CONTENT`, merged over the user's own inline config), so they are configured,
 * started and reported like any other server, and stopped with the runtime.
 */
export const envWithMcp = (
  env: Readonly<Record<string, string | undefined>>,
  servers: Record<string, McpConfig>
): Readonly<Record<string, string | undefined>> => {
  if (Object.keys(servers).length === 0) return env
  let own: Record<string, unknown> = {}
  const content = env.AGENT_CONFIG_CONTENT
  if (content !== undefined && content.trim() !== "") {
    try {
      const parsed: unknown = JSON.parse(content)
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) own = parsed as Record<string, unknown>
    } catch {
      // Not plain JSON (comments): the user's inline config is left out of the merge, the servers still come in.
    }
  }
  const ownMcp = typeof own.mcp === "object" && own.mcp !== null ? own.mcp as Record<string, unknown> : {}
  return { ...env, AGENT_CONFIG_CONTENT: JSON.stringify({ ...own, mcp: { ...ownMcp, ...servers } }) }
}

export interface AcpRuntimesOptions {
  /** The process's environment (the runtimes' own, plus the client's MCP servers). */
  readonly env: Readonly<Record<string, string | undefined>>
  /** Builds the runtime of a directory (default: `makeAppLayer` for it); benchmarks and tests swap nodes here. */
  readonly appLayer?: (instance: Layer.Layer<Instance>) => Layer.Layer<AppServices, ConfigError>
}

export interface AcpRuntimes {
  /** The runtime of `cwd` with these client MCP servers, built on first use. */
  readonly get: (cwd: string, servers: ReadonlyArray<Acp.McpServer>) => Effect.Effect<AcpRuntime, ConfigError>
  /** Every runtime built so far. */
  readonly all: () => ReadonlyArray<AcpRuntime>
}

/** The runtimes of a connection; `onBuilt` runs once per runtime, in the connection's scope (its event pump). */
export const makeAcpRuntimes = (
  options: AcpRuntimesOptions,
  onBuilt: (runtime: AcpRuntime) => Effect.Effect<void, never, Scope.Scope>
): Effect.Effect<AcpRuntimes, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const built = new Map<string, AcpRuntime>()
    // One build at a time: two `session/new` for one directory must share a runtime.
    const lock = yield* Effect.makeSemaphore(1)
    const appLayer = options.appLayer ?? ((instance) => makeAppLayer({ instance }))

    const get = (cwd: string, servers: ReadonlyArray<Acp.McpServer>) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const directory = path.resolve(cwd)
        const mcp = mcpConfigOf(servers)
        const key = JSON.stringify([directory, mcp])
        const existing = built.get(key)
        if (existing !== undefined) return existing
        const instance = Instance.layerWith({ directory, env: envWithMcp(options.env, mcp) })
        const context = yield* Layer.buildWithScope(appLayer(instance), scope)
        const runtime: AcpRuntime = { key, directory, context }
        built.set(key, runtime)
        yield* Scope.extend(onBuilt(runtime), scope)
        return runtime
      }))

    return { get, all: () => [...built.values()] }
  })
