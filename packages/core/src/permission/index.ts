export { ApprovalStore } from "./ApprovalStore.js"
export * as Permission from "./Permission.js"
export { PermissionPolicy } from "./PermissionPolicy.js"
export { PermissionService } from "./PermissionService.js"
