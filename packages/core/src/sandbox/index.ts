// sandbox/: The sandbox commands run in (bubblewrap, network proxy), its settings and how it is probed and
// reported.
// What other subsystems use of it; they import it from here, never from its files.
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
