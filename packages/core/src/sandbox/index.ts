// sandbox/: The sandbox commands run in (bubblewrap, network proxy), its settings and how it is probed and
// reported.
// The names other subsystems use of it, and its errors. Code imports the file that holds a name (see
// docs/architecture.md: barrels would put every member into each CLI chunk that imports one).
import type { SandboxUnavailable } from "./Sandbox.js"

export { exec } from "./Exec.js"
export type { ExecResult } from "./Exec.js"
export { notice } from "./Report.js"
export { Sandbox, SandboxUnavailable, describePlan } from "./Sandbox.js"
export type { Launch, SandboxCheck, SandboxPlan, SandboxShape } from "./Sandbox.js"
export { describeNetwork, resolveSettings } from "./Settings.js"
export type { SandboxSettings } from "./Settings.js"

/** The errors this subsystem's services fail with. */
export type SandboxError = SandboxUnavailable
