// session/: The session loop (prompt, steps, tool calls, abort) and commands (`/name` templates).
// The names other subsystems use of it, and its errors. Code imports the file that holds a name (see
// docs/architecture.md: barrels would put every member into each CLI chunk that imports one).
import type { CommandError, CommandNotFound } from "@agent/domain"
import type { LoopError } from "./SessionLoop.js"

export { CommandRegistry } from "./CommandRegistry.js"
export { SessionLoop } from "./SessionLoop.js"

/** The errors this subsystem's services fail with. */
export type SessionError = LoopError | CommandNotFound | CommandError
