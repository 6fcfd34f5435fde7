// mcp/: MCP servers: connections, OAuth, and their tools, prompts and resources as runtime tools.
// The names other subsystems use of it, and its errors. Code imports the file that holds a name (see
// docs/architecture.md: barrels would put every member into each CLI chunk that imports one).
import type { McpAuthError } from "./McpOAuth.js"
import type { McpRequestError } from "./McpShape.js"

export { Mcp } from "./Mcp.js"
export type { McpPrompt } from "./Mcp.js"
export { resourceTools } from "./McpTools.js"

/** The errors this subsystem's services fail with. */
export type McpError = McpRequestError | McpAuthError
