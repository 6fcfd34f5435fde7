// runtime/: Shared basics of a running instance: the event bus, ids, the instance (project and paths), prompt
// files, wildcards, pids and the version.
// What other subsystems use of it; they import it from here, never from its files.

export { Bus } from "./Bus.js"
export * as Identifier from "./Identifier.js"
export { ascending } from "./Identifier.js"
export { Instance } from "./Instance.js"
export type { InstanceInfo } from "./Instance.js"
export { isAlive } from "./Pid.js"
export * as Prompts from "./Prompts.js"
export { VERSION } from "./Version.js"
export * as Wildcard from "./Wildcard.js"
