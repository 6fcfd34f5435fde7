import { Layer } from "effect"
import { EventHandlers } from "./handlers/EventHandlers.js"
import { InstanceHandlers } from "./handlers/InstanceHandlers.js"
import { McpHandlers } from "./handlers/McpHandlers.js"
import { PermissionHandlers } from "./handlers/PermissionHandlers.js"
import { QuestionHandlers } from "./handlers/QuestionHandlers.js"
import { SessionHandlers } from "./handlers/SessionHandlers.js"

/** Every route of the API: one file per group under handlers/. */
export const ApiHandlers = Layer.mergeAll(
  SessionHandlers,
  PermissionHandlers,
  QuestionHandlers,
  InstanceHandlers,
  McpHandlers,
  EventHandlers
)
