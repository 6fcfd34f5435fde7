// Module by module, so the bundle's chunk for this command holds only what it uses.
import * as Database from "@agent/core/store/Database"
import { SessionStore } from "@agent/core/store/SessionStore"
import { AgentRegistry } from "@agent/core/agent/AgentRegistry"
import { ApprovalStore } from "@agent/core/permission/ApprovalStore"
import { PermissionPolicy } from "@agent/core/permission/PermissionPolicy"
import { Bus } from "@agent/core/runtime/Bus"
import { Instance } from "@agent/core/runtime/Instance"
import { ConfigService } from "@agent/core/config/ConfigService"
import { SessionChanges } from "@agent/core/snapshot/SessionChanges"
import { SessionStatuses } from "@agent/core/runtime/SessionStatuses"
import { Snapshot } from "@agent/core/snapshot/Snapshot"
import { Layer } from "effect"

/**
 * The parts of the runtime the inspecting commands need, from the same nodes as `makeAppLayer`
 * (which `run` uses whole): listing sessions or explaining a rule starts no MCP server, builds
 * no provider, and loads neither library. `McpList.ts` adds the MCP node itself.
 */

/** The session store over the database. */
export const storage = SessionStore.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(Database.layer, Bus.layer)),
  Layer.provideMerge(ConfigService.layer),
  Layer.provideMerge(Instance.layer)
)

/** The session store over the database opened only to read it: works on a read-only one. */
export const reading = SessionStore.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(Database.layerReadOnly, Bus.layer)),
  Layer.provideMerge(ConfigService.layer),
  Layer.provideMerge(Instance.layer)
)

/** `reading`, and what sessions changed in the project's files (read from the snapshot store). */
export const changes = SessionChanges.layer.pipe(
  Layer.provideMerge(SessionStatuses.layer),
  Layer.provideMerge(Snapshot.layer),
  Layer.provideMerge(SessionStore.layer),
  Layer.provideMerge(Layer.mergeAll(Database.layerReadOnly, Bus.layer)),
  Layer.provideMerge(ConfigService.layer),
  Layer.provideMerge(Instance.layer)
)

/** Configuration and what is decided from it: agents, the enterprise policy. */
export const configured = Layer.mergeAll(AgentRegistry.layer, PermissionPolicy.layer).pipe(
  Layer.provideMerge(ConfigService.layer),
  Layer.provideMerge(Instance.layer)
)

/** `configured` plus the project's stored "always" approvals. */
export const decisions = Layer.mergeAll(AgentRegistry.layer, PermissionPolicy.layer, ApprovalStore.layerSql).pipe(
  Layer.provideMerge(Database.layer),
  Layer.provideMerge(ConfigService.layer),
  Layer.provideMerge(Instance.layer)
)
