import type { ConfigError } from "@agent/domain"
import { Layer } from "effect"
import { AgentRegistry } from "./AgentRegistry.js"
import { ApprovalStore } from "./ApprovalStore.js"
import { Bus } from "./Bus.js"
import { ConfigService } from "./ConfigService.js"
import { Instance } from "./Instance.js"
import { PermissionPolicy } from "./PermissionPolicy.js"
import { PermissionService } from "./PermissionService.js"

export interface AppLayerOptions<PolicyError = never> {
  /** Which directory, home and env the runtime sees (default: the process's). */
  readonly instance?: Layer.Layer<Instance>
  /** The enterprise policy (default: the managed config's `permission` key, no audit). */
  readonly policy?: Layer.Layer<PermissionPolicy, PolicyError, ConfigService | Instance>
  /** Where "always" approvals are kept (default: a JSON file per project in the data dir). */
  readonly approvals?: Layer.Layer<ApprovalStore, never, Instance>
}

export type AppServices = Instance | ConfigService | Bus | ApprovalStore | PermissionPolicy | AgentRegistry | PermissionService

/**
 * The one composition root: the CLI, the server and the tests all build their runtime
 * here and replace single nodes through the options. Every node is built once.
 */
export const makeAppLayer = <PolicyError = never>(
  options: AppLayerOptions<PolicyError> = {}
): Layer.Layer<AppServices, ConfigError | PolicyError> => {
  const instance = options.instance ?? Instance.layer
  const configured = ConfigService.layer.pipe(Layer.provideMerge(instance))
  const services = Layer.mergeAll(
    Bus.layer,
    options.approvals ?? ApprovalStore.layerFile,
    options.policy ?? PermissionPolicy.layer,
    AgentRegistry.layer
  ).pipe(Layer.provideMerge(configured))
  return PermissionService.layer.pipe(Layer.provideMerge(services))
}
