// agent/: The agents: their registry (built-in, configured and file-defined agents) and the generator that
// writes new agent files with the model.
// The names other subsystems use of it, and its errors. Code imports the file that holds a name (see
// docs/architecture.md: barrels would put every member into each CLI chunk that imports one).
import type { AgentNotFound, DefaultAgentError } from "@agent/domain"
import type { AgentGenerationError } from "./AgentGenerator.js"

export { AgentGenerator } from "./AgentGenerator.js"
export { AgentRegistry } from "./AgentRegistry.js"

/** The errors this subsystem's services fail with. */
export type AgentError = AgentNotFound | DefaultAgentError | AgentGenerationError
