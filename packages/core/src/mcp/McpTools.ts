import type {
  CallToolResult,
  ContentBlock,
  Tool as McpToolDefinition
} from "@modelcontextprotocol/sdk/types.js"
import { Effect, Schema } from "effect"
import type { McpResourceContent, McpShape } from "./McpShape.js"
import * as Prompts from "../runtime/Prompts.js"
import * as Tool from "../tool/Tool.js"

/** OpenCode's sanitizer for server, tool, prompt and resource names. */
export const sanitize = (name: string): string => name.replace(/[^a-zA-Z0-9_-]/g, "_")

/** The id an MCP tool has in the registry and in permission rules: `<server>_<tool>`, sanitized. */
export const toolKey = (server: string, tool: string): string => `${sanitize(server)}_${sanitize(tool)}`

/** How prompts and resources of a server are keyed: `<server>:<name>`, sanitized. */
export const promptKey = (server: string, prompt: string): string => `${sanitize(server)}:${sanitize(prompt)}`

/**
 * Arguments are checked by the server, which knows its own schema; the runtime only makes
 * sure the model sent an object.
 */
const Arguments = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** The server's input schema as the model sees it: always an object without extra keys. */
export const inputJsonSchema = (definition: McpToolDefinition): Record<string, unknown> => {
  const { $schema: _ignored, ...schema } = definition.inputSchema as Record<string, unknown>
  return { ...schema, type: "object", properties: schema.properties ?? {}, additionalProperties: false }
}

/** Calls the tool on whichever connection the server has now; failures are already worded for the model. */
export type McpToolCall = (
  args: Record<string, unknown>,
  context: Tool.ToolContext
) => Effect.Effect<CallToolResult | { readonly toolResult: unknown }, Tool.ToolExecutionError>

/** An MCP tool as a runtime tool: asks permission under its key, calls the server, maps the result. */
export const makeTool = (server: string, definition: McpToolDefinition, call: McpToolCall): Tool.AnyTool => {
  const id = toolKey(server, definition.name)
  return Tool.make({
    id,
    description: definition.description ?? definition.title ?? `Tool ${definition.name} of the MCP server ${server}.`,
    parameters: Arguments,
    jsonSchema: inputJsonSchema(definition),
    execute: (params, context) =>
      Effect.gen(function*() {
        yield* context.ask({ permission: id, patterns: ["*"], always: ["*"] })
        const result = yield* call(params, context)
        return yield* toToolResult(id, server, definition.name, result)
      })
  })
}

const dataUrl = (mime: string, base64: string) => `data:${mime};base64,${base64}`

const fileName = (uri: string): string | undefined => {
  const last = uri.split(/[/\\]/).filter((segment) => segment.length > 0).at(-1)
  return last && last !== uri ? last : undefined
}

/** Text for the model and files for the user, from MCP content blocks. */
export const mapContent = (content: ReadonlyArray<ContentBlock>) => {
  const texts: Array<string> = []
  const attachments: Array<Tool.ToolAttachment> = []
  for (const block of content) {
    switch (block.type) {
      case "text":
        texts.push(block.text)
        break
      case "image":
        attachments.push({ mime: block.mimeType, url: dataUrl(block.mimeType, block.data) })
        break
      case "audio":
        // Providers do not take audio in tool results; say it was there rather than drop it silently.
        texts.push(`[audio content (${block.mimeType}) omitted]`)
        break
      case "resource": {
        const resource = block.resource
        if ("text" in resource && typeof resource.text === "string") {
          texts.push(resource.text)
        } else if ("blob" in resource && typeof resource.blob === "string") {
          const mime = resource.mimeType ?? "application/octet-stream"
          const name = fileName(resource.uri)
          attachments.push({ mime, url: dataUrl(mime, resource.blob), ...(name ? { filename: name } : {}) })
        }
        break
      }
      case "resource_link":
        texts.push(
          `Resource: ${block.uri}${block.name ? ` (${block.name}${block.mimeType ? `, ${block.mimeType}` : ""})` : ""}` +
            (block.description ? ` - ${block.description}` : "")
        )
        break
    }
  }
  return { texts, attachments }
}

/** Maps a `tools/call` result: `isError` fails the call, structured content without text becomes JSON. */
export const toToolResult = (
  id: string,
  server: string,
  tool: string,
  result: CallToolResult | { readonly toolResult: unknown }
): Effect.Effect<Tool.ToolResult, Tool.ToolExecutionError> => {
  const metadata = { server, tool }
  if (!("content" in result)) {
    // Results of servers on the 2024-10-07 protocol.
    return Effect.succeed({ title: tool, output: JSON.stringify(result.toolResult, null, 2) ?? "", metadata })
  }
  const { texts, attachments } = mapContent(result.content ?? [])
  if (result.isError) {
    return Effect.fail(
      new Tool.ToolExecutionError({
        tool: id,
        detail: texts.length > 0 ? texts.join("\n\n") : `The MCP tool ${tool} (server ${server}) reported an error without a message.`
      })
    )
  }
  if (texts.length === 0 && result.structuredContent !== undefined) {
    texts.push(JSON.stringify(result.structuredContent, null, 2))
  }
  return Effect.succeed({
    title: tool,
    output: texts.join("\n\n"),
    metadata,
    ...(attachments.length > 0 ? { attachments } : {})
  })
}

// ---------------------------------------------------------------------------------------------
// Resource tools

const ListParameters = Schema.Struct({
  server: Schema.optional(
    Schema.String.annotations({ description: "Only list the resources of this MCP server (default: all servers)" })
  )
})

const ReadParameters = Schema.Struct({
  server: Schema.String.annotations({ description: "The MCP server that provides the resource" }),
  uri: Schema.String.annotations({ description: "The resource URI, as listed by list_mcp_resources" })
})

const contentsResult = (server: string, uri: string, contents: ReadonlyArray<McpResourceContent>): Tool.ToolResult => {
  const texts: Array<string> = []
  const attachments: Array<Tool.ToolAttachment> = []
  for (const content of contents) {
    if (content.text !== undefined) texts.push(content.text)
    else if (content.blob !== undefined) {
      const mime = content.mimeType ?? "application/octet-stream"
      const name = fileName(content.uri)
      attachments.push({ mime, url: dataUrl(mime, content.blob), ...(name ? { filename: name } : {}) })
      texts.push(`[binary content ${content.uri} (${mime}) attached]`)
    }
  }
  return {
    title: uri,
    output: texts.length > 0 ? texts.join("\n\n") : "(the resource is empty)",
    metadata: { server, uri },
    ...(attachments.length > 0 ? { attachments } : {})
  }
}

const TemplateParameters = Schema.Struct({
  server: Schema.optional(
    Schema.String.annotations({ description: "Only list the resource templates of this MCP server (default: all servers)" })
  )
})

/**
 * `list_mcp_resources`, `list_mcp_resource_templates` and `read_mcp_resource` over the given `Mcp` service. Failures of the
 * server become tool errors the model can read.
 */
export const resourceTools = (mcp: McpShape): ReadonlyArray<Tool.AnyTool> => [
  Tool.make({
    id: "list_mcp_resources",
    fileEffects: "none",
    description: Prompts.read("tool/list_mcp_resources.txt"),
    parameters: ListParameters,
    execute: (params, context) =>
      Effect.gen(function*() {
        yield* context.ask({ permission: "list_mcp_resources", patterns: ["*"], always: ["*"] })
        const resources = yield* mcp.resources(params.server).pipe(
          Effect.mapError((error) => new Tool.ToolExecutionError({ tool: "list_mcp_resources", detail: error.message }))
        )
        const output = resources.length === 0
          ? params.server === undefined
            ? "No MCP server offers resources."
            : `The MCP server ${params.server} offers no resources.`
          : resources
            .map((resource) =>
              `${resource.server} ${resource.uri}` +
              ` (${[resource.name, resource.mimeType].filter((part) => part !== undefined).join(", ")})` +
              (resource.description ? ` - ${resource.description}` : "")
            )
            .join("\n")
        return { title: `${resources.length} resources`, output, metadata: { count: resources.length } }
      })
  }),
  Tool.make({
    id: "list_mcp_resource_templates",
    description: Prompts.read("tool/list_mcp_resource_templates.txt"),
    parameters: TemplateParameters,
    execute: (params, context) =>
      Effect.gen(function*() {
        yield* context.ask({ permission: "list_mcp_resource_templates", patterns: ["*"], always: ["*"] })
        const templates = yield* mcp.resourceTemplates(params.server).pipe(
          Effect.mapError((error) => new Tool.ToolExecutionError({ tool: "list_mcp_resource_templates", detail: error.message }))
        )
        const output = templates.length === 0
          ? params.server === undefined
            ? "No MCP server offers resource templates."
            : `The MCP server ${params.server} offers no resource templates.`
          : templates
            .map((template) =>
              `${template.server} ${template.uriTemplate}` +
              ` (${[template.name, template.mimeType].filter((part) => part !== undefined).join(", ")})` +
              (template.description ? ` - ${template.description}` : "")
            )
            .join("\n")
        return { title: `${templates.length} resource templates`, output, metadata: { count: templates.length } }
      })
  }),
  Tool.make({
    id: "read_mcp_resource",
    fileEffects: "none",
    description: Prompts.read("tool/read_mcp_resource.txt"),
    parameters: ReadParameters,
    execute: (params, context) =>
      Effect.gen(function*() {
        yield* context.ask({ permission: "read_mcp_resource", patterns: [params.uri], always: ["*"] })
        const contents = yield* mcp.readResource(params.server, params.uri).pipe(
          Effect.mapError((error) => new Tool.ToolExecutionError({ tool: "read_mcp_resource", detail: error.message }))
        )
        return contentsResult(params.server, params.uri, contents)
      })
  })
]
