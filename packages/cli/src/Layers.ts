import {
  AgentRegistry,
  ApprovalStore,
  Bus,
  ConfigService,
  Database,
  Instance,
  makeAppLayer,
  Mcp,
  PermissionPolicy,
  SessionStore
} from "@agent/core"
import { Layer } from "effect"

/**
 * The parts of the runtime each command needs, all from the same nodes as `makeAppLayer`.
 * Only `run` builds the whole graph; listing sessions or explaining a rule does not start
 * MCP servers or build providers.
 */

/** Everything a run needs, in `directory` (default: the current directory). */
export const app = (directory?: string) =>
  makeAppLayer(directory === undefined ? {} : { instance: Instance.layerWith({ directory }) })

/** The session store over the database. */
export const storage = SessionStore.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(Database.layer, Bus.layer)),
  Layer.provideMerge(Instance.layer)
)

/** Configuration and what is decided from it: agents, the enterprise policy. */
export const configured = Layer.mergeAll(AgentRegistry.layer, PermissionPolicy.layer).pipe(
  Layer.provideMerge(ConfigService.layer),
  Layer.provideMerge(Instance.layer)
)

/** `configured` plus the project's stored "always" approvals. */
export const decisions = Layer.mergeAll(AgentRegistry.layer, PermissionPolicy.layer, ApprovalStore.layerSql).pipe(
  Layer.provideMerge(Layer.mergeAll(ConfigService.layer, Database.layer)),
  Layer.provideMerge(Instance.layer)
)

/** The MCP servers of the configuration, connecting in the background. */
export const mcp = Mcp.layer.pipe(Layer.provideMerge(Layer.mergeAll(ConfigService.layer, Bus.layer)), Layer.provideMerge(Instance.layer))
