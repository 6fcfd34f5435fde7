// hooks/: Claude Code's hooks: where they come from (HookConfig, ProjectTrust), which run at an event
// (HookMatcher), what they are told (ClaudeNames, Transcript), how they run (HookRunner), what their
// answers mean (HookOutcome), and the Hooks service the session loop calls.
// The names other subsystems use of it. Code imports the file that holds a name (see docs/architecture.md).

export * as ClaudeNames from "./ClaudeNames.js"
export * as HookMatcher from "./HookMatcher.js"
export * as HookOutcome from "./HookOutcome.js"
export { Hooks, type HooksShape, type ListedHook } from "./Hooks.js"
export * as ProjectTrust from "./ProjectTrust.js"
