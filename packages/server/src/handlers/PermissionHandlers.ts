import { PermissionService } from "@agent/core"
import { AgentApi } from "@agent/domain"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { notFound } from "./HandlerErrors.js"

export const PermissionHandlers = HttpApiBuilder.group(AgentApi, "permission", (handlers) =>
  Effect.gen(function*() {
    const permissions = yield* PermissionService
    return handlers
      .handle("list", () => permissions.list())
      .handle("reply", ({ path, payload }) =>
        permissions.reply({
          requestID: path.requestID,
          reply: payload.reply,
          ...(payload.message !== undefined ? { message: payload.message } : {})
        }).pipe(Effect.mapError(notFound), Effect.as(true)))
  }))
