import { Mcp } from "@agent/core"
import { AgentApi, NotFoundError } from "@agent/domain"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { badRequest } from "./HandlerErrors.js"

export const McpHandlers = HttpApiBuilder.group(AgentApi, "mcp", (handlers) =>
  Effect.gen(function*() {
    const mcp = yield* Mcp
    const known = (name: string) =>
      mcp.status().pipe(
        Effect.filterOrFail(
          (statuses) => name in statuses,
          (statuses) => NotFoundError.of(`no MCP server named "${name}"; configured: ${Object.keys(statuses).join(", ") || "none"}`)
        )
      )
    return handlers
      .handle("connect", ({ path }) =>
        known(path.name).pipe(
          Effect.zipRight(mcp.connect(path.name).pipe(Effect.mapError(badRequest))),
          Effect.map((status) => status.status === "connected")
        ))
      .handle("disconnect", ({ path }) =>
        known(path.name).pipe(Effect.zipRight(mcp.disconnect(path.name).pipe(Effect.mapError(badRequest))), Effect.as(true)))
      .handle("logout", ({ path }) =>
        known(path.name).pipe(
          Effect.zipRight(mcp.logout(path.name).pipe(Effect.mapError(badRequest))),
          Effect.map(({ removed }) => ({ success: true as const, removed }))
        ))
  }))
