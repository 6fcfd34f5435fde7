import type { ContentBlock } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Ref } from "effect"
import { errorText, paginate, request } from "./McpConnect.js"
import { type Connection, connectionOf, connections, type McpState, type ServerEntry } from "./McpServerState.js"
import {
  McpRequestError,
  type McpInstructions,
  type McpPrompt,
  type McpPromptMessage,
  type McpResource,
  type McpResourceContent,
  type McpResourceTemplate
} from "./McpShape.js"

// What connected servers offer besides tools: prompts, resources, resource templates and instructions.

/** The text a prompt message carries, if any. */
const promptText = (content: ContentBlock): string | undefined => {
  if (content.type === "text") return content.text
  if (content.type === "resource" && "text" in content.resource && typeof content.resource.text === "string") {
    return content.resource.text
  }
  return undefined
}

/** The Mcp methods over prompts, resources and instructions. */
export const makeCatalog = (state: McpState) => {
  const connected = connections(state)

  const prompts = Effect.fn("Mcp.prompts")(function*() {
    const all: Array<McpPrompt> = []
    for (const { connection } of yield* connected) all.push(...(yield* Ref.get(connection.prompts)))
    return all as ReadonlyArray<McpPrompt>
  })

  const getPrompt = Effect.fn("Mcp.getPrompt")(function*(key: string, args: Record<string, string> = {}) {
    for (const { entry, connection } of yield* connected) {
      const prompt = (yield* Ref.get(connection.prompts)).find((candidate) => candidate.key === key)
      if (!prompt) continue
      const result = yield* request(
        entry,
        (signal) => connection.client.getPrompt({ name: prompt.name, arguments: args }, { signal, timeout: entry.timeout })
      ).pipe(
        Effect.mapError((error) =>
          new McpRequestError({ server: entry.name, detail: `The MCP prompt ${key} failed: ${errorText(error)}` })
        )
      )
      const messages: Array<McpPromptMessage> = []
      for (const message of result.messages) {
        const text = promptText(message.content)
        if (text !== undefined) messages.push({ role: message.role, text })
      }
      return { ...(result.description === undefined ? {} : { description: result.description }), messages }
    }
    const server = key.includes(":") ? key.slice(0, key.indexOf(":")) : key
    return yield* new McpRequestError({ server, detail: `No connected MCP server offers the prompt ${key}.` })
  })

  /** A paged resource listing of one server (empty when it offers no resources), as our records. */
  const listPaged = <Raw, A>(
    entry: ServerEntry,
    connection: Connection,
    what: string,
    page: (cursor: string | undefined, signal: AbortSignal) => Promise<{ items: ReadonlyArray<Raw>; nextCursor?: string | undefined }>,
    toItem: (raw: Raw) => A
  ): Effect.Effect<ReadonlyArray<A>, McpRequestError> =>
    (connection.client.getServerCapabilities()?.resources
      ? request(entry, (signal) => paginate((cursor) => page(cursor, signal)))
      : Effect.succeed([])).pipe(
        Effect.map((items) => items.map(toItem)),
        Effect.mapError((error) =>
          new McpRequestError({ server: entry.name, detail: `Listing the ${what} of ${entry.name} failed: ${errorText(error)}` })
        )
      )

  /** One server's list, or every connected server's (a server that fails is logged and left out). */
  const fromServers = <A>(list: (entry: ServerEntry, connection: Connection) => Effect.Effect<ReadonlyArray<A>, McpRequestError>) =>
    (server?: string) =>
      Effect.gen(function*() {
        if (server !== undefined) {
          const { entry, connection } = yield* connectionOf(state, server)
          return yield* list(entry, connection)
        }
        const lists = yield* Effect.forEach(
          yield* connected,
          ({ entry, connection }) =>
            list(entry, connection).pipe(
              Effect.tapError((error) => Effect.logWarning(error.detail)),
              Effect.orElseSucceed((): ReadonlyArray<A> => [])
            ),
          { concurrency: "unbounded" }
        )
        return lists.flat() as ReadonlyArray<A>
      })

  const listResources = (entry: ServerEntry, connection: Connection) =>
    listPaged(entry, connection, "resources", async (cursor, signal) => {
      const page = await connection.client.listResources(cursor ? { cursor } : {}, { signal, timeout: entry.timeout })
      return { items: page.resources, nextCursor: page.nextCursor }
    }, (resource): McpResource => ({
      server: entry.name,
      uri: resource.uri,
      name: resource.name,
      ...(resource.mimeType === undefined ? {} : { mimeType: resource.mimeType }),
      ...(resource.description === undefined ? {} : { description: resource.description })
    }))

  const resources = Effect.fn("Mcp.resources")(function*(server?: string) {
    return yield* fromServers(listResources)(server)
  })

  const readResource = Effect.fn("Mcp.readResource")(function*(server: string, uri: string) {
    const { entry, connection } = yield* connectionOf(state, server)
    const result = yield* request(
      entry,
      (signal) => connection.client.readResource({ uri }, { signal, timeout: entry.timeout })
    ).pipe(
      Effect.mapError((error) =>
        new McpRequestError({ server: entry.name, detail: `Reading ${uri} from ${entry.name} failed: ${errorText(error)}` })
      )
    )
    return result.contents.map((content): McpResourceContent => ({
      uri: content.uri,
      ...(content.mimeType === undefined ? {} : { mimeType: content.mimeType }),
      ...("text" in content && typeof content.text === "string" ? { text: content.text } : {}),
      ...("blob" in content && typeof content.blob === "string" ? { blob: content.blob } : {})
    }))
  })

  // Called every step (or every tool call): untraced, a span would cost more than the call.
  const instructions = Effect.fnUntraced(function*() {
    const all: Array<McpInstructions> = []
    for (const { entry, connection } of yield* connected) {
      const text = connection.client.getInstructions()?.trim()
      if (text) all.push({ server: entry.name, text })
    }
    return all as ReadonlyArray<McpInstructions>
  })

  const listTemplates = (entry: ServerEntry, connection: Connection) =>
    listPaged(entry, connection, "resource templates", async (cursor, signal) => {
      const page = await connection.client.listResourceTemplates(cursor ? { cursor } : {}, { signal, timeout: entry.timeout })
      return { items: page.resourceTemplates, nextCursor: page.nextCursor }
    }, (template): McpResourceTemplate => ({
      server: entry.name,
      uriTemplate: template.uriTemplate,
      name: template.name,
      ...(template.mimeType === undefined ? {} : { mimeType: template.mimeType }),
      ...(template.description === undefined ? {} : { description: template.description })
    }))

  const resourceTemplates = Effect.fn("Mcp.resourceTemplates")(function*(server?: string) {
    return yield* fromServers(listTemplates)(server)
  })

  return { prompts, getPrompt, resources, resourceTemplates, readResource, instructions }
}
