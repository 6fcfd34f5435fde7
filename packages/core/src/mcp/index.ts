// mcp/: MCP servers: connections, OAuth, and their tools, prompts and resources as runtime tools.
// What other subsystems use of it; they import it from here, never from its files.
import type { McpAuthError } from "./McpOAuth.js"
import type { McpRequestError } from "./McpShape.js"

export { Mcp } from "./Mcp.js"
export type { McpPrompt } from "./Mcp.js"
export { resourceTools } from "./McpTools.js"

/** The errors this subsystem's services fail with. */
export type McpError = McpRequestError | McpAuthError
