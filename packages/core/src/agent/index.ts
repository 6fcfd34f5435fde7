// agent/: The agents: their registry (built-in, configured and file-defined agents) and the generator that
// writes new agent files with the model.
// What other subsystems use of it; they import it from here, never from its files.
import type { AgentNotFound, DefaultAgentError } from "@agent/domain"
import type { AgentGenerationError } from "./AgentGenerator.js"

export { AgentGenerator } from "./AgentGenerator.js"
export { AgentRegistry } from "./AgentRegistry.js"

/** The errors this subsystem's services fail with. */
export type AgentError = AgentNotFound | DefaultAgentError | AgentGenerationError
