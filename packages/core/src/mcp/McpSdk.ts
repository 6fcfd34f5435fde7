/**
 * The parts of the MCP SDK the runtime uses at run time. The SDK (with its zod schemas) is
 * loaded only when an MCP server is configured: `load()` on the way to the first connection.
 */
export { auth, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js"
export { Client } from "@modelcontextprotocol/sdk/client/index.js"
export { SSEClientTransport, SseError } from "@modelcontextprotocol/sdk/client/sse.js"
export { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
export { deserializeMessage, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js"
export {
  ErrorCode,
  McpError,
  PromptListChangedNotificationSchema,
  ToolListChangedNotificationSchema
} from "@modelcontextprotocol/sdk/types.js"
