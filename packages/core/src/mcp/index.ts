export { Mcp } from "./Mcp.js"
export type { McpPrompt } from "./Mcp.js"
export { resourceTools } from "./McpTools.js"
