// runtime/: Shared basics of a running instance: the event bus, ids, the instance (project and paths), prompt
// files, wildcards, pids and the version.
// The names other subsystems use of it, and its errors. Code imports the file that holds a name (see
// docs/architecture.md: barrels would put every member into each CLI chunk that imports one).

export { Bus } from "./Bus.js"
export { DeltaMerge, makeTimedDeltaMerge, type TimedDeltaMerge } from "./DeltaMerge.js"
export * as Identifier from "./Identifier.js"
export { ascending } from "./Identifier.js"
export { Instance } from "./Instance.js"
export type { InstanceInfo } from "./Instance.js"
export { isAlive } from "./Pid.js"
export * as Prompts from "./Prompts.js"
export { VERSION } from "./Version.js"
export * as Tracing from "./Tracing.js"
export * as Wildcard from "./Wildcard.js"
