// Module by module, so the bundle's chunk for this command holds only what it uses.
import { Bus } from "@agent/core/runtime/Bus"
import { Instance } from "@agent/core/runtime/Instance"
import { ConfigService } from "@agent/core/config/ConfigService"
import { Mcp } from "@agent/core/mcp/Mcp"
import { Sandbox } from "@agent/core/sandbox/Sandbox"
import type { McpConfig } from "@agent/domain"
import { Console, Effect, Layer } from "effect"
import { table } from "./Format.js"

/** The MCP servers of the configuration, connecting in the background (in the sandbox, those configured so). */
const servers = Mcp.layer.pipe(
  Layer.provideMerge(Sandbox.layer),
  Layer.provideMerge(Layer.mergeAll(ConfigService.layer, Bus.layer)),
  Layer.provideMerge(Instance.layer)
)

const typeOf = (config: McpConfig) => ("type" in config ? config.type : "-")

const targetOf = (config: McpConfig) =>
  "command" in config ? config.command.join(" ") : "url" in config ? config.url : ""

export const list = (input: { readonly format: "default" | "json" }) =>
  Effect.gen(function*() {
    const configured = (yield* (yield* ConfigService).get()).mcp ?? {}
    const mcp = yield* Mcp
    yield* mcp.ready()
    const statuses = yield* mcp.status()
    const rows = Object.entries(configured).map(([name, config]) => {
      const status = statuses[name]
      return {
        name,
        type: typeOf(config),
        enabled: config.enabled !== false,
        status: status?.status ?? "unknown",
        ...(status?.error ? { error: status.error } : {}),
        ...("command" in config ? { command: config.command } : {}),
        ...("url" in config ? { url: config.url } : {})
      }
    })
    if (input.format === "json") return yield* Console.log(JSON.stringify(rows, null, 2))
    if (rows.length === 0) return yield* Console.error("no MCP servers are configured (the \"mcp\" key of agent.json or opencode.json)")
    yield* Console.log(table([
      ["NAME", "TYPE", "ENABLED", "STATUS", "COMMAND OR URL"],
      ...Object.entries(configured).map(([name, config], index) => {
        const row = rows[index]!
        const status = row.status === "connecting" ? "connecting (not ready within the grace period)" : row.status
        return [name, row.type, row.enabled ? "yes" : "no", status, targetOf(config)]
      })
    ]))
    for (const row of rows) if (row.error) yield* Console.log(`${row.name}: ${row.error}`)
  }).pipe(Effect.provide(servers))
