// permission/: Permissions: the rule engine (Permission), the policy of a run, the service that asks and
// waits for replies, and the store of approvals.
// What other subsystems use of it; they import it from here, never from its files.
import type { CorrectedError, DeniedError, PermissionRequestNotFound, RejectedError } from "@agent/domain"

export { ApprovalStore } from "./ApprovalStore.js"
export * as Permission from "./Permission.js"
export { PermissionPolicy } from "./PermissionPolicy.js"
export { PermissionService } from "./PermissionService.js"

/** The errors this subsystem's services fail with. */
export type PermissionError = DeniedError | RejectedError | CorrectedError | PermissionRequestNotFound
