// permission/: Permissions: the rule engine (Permission), the policy of a run, the service that asks and
// waits for replies, and the store of approvals.
// The names other subsystems use of it, and its errors. Code imports the file that holds a name (see
// docs/architecture.md: barrels would put every member into each CLI chunk that imports one).
import type { CorrectedError, DeniedError, PermissionRequestNotFound, RejectedError } from "@agent/domain"

export { ApprovalStore } from "./ApprovalStore.js"
export * as Permission from "./Permission.js"
export { PermissionPolicy } from "./PermissionPolicy.js"
export { PermissionService } from "./PermissionService.js"

/** The errors this subsystem's services fail with. */
export type PermissionError = DeniedError | RejectedError | CorrectedError | PermissionRequestNotFound
