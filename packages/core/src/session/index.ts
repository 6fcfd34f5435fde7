// session/: The session loop (prompt, steps, tool calls, abort) and commands (`/name` templates).
// What other subsystems use of it; they import it from here, never from its files.
import type { CommandError, CommandNotFound } from "@agent/domain"
import type { LoopError } from "./SessionLoop.js"

export { CommandRegistry } from "./CommandRegistry.js"
export { SessionLoop } from "./SessionLoop.js"

/** The errors this subsystem's services fail with. */
export type SessionError = LoopError | CommandNotFound | CommandError
