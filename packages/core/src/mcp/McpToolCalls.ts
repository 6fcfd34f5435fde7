import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { Tool as McpToolDefinition } from "@modelcontextprotocol/sdk/types.js"
import { Deferred, Effect, Fiber, Ref, Runtime } from "effect"
import type * as Tool from "../tool/Tool.js"
import { ToolExecutionError } from "../tool/Tool.js"
import { errorText, isMcpError, isTimeout, paginate, request } from "./McpConnect.js"
import { connections, type McpState, type ServerEntry, statusOf, statusText } from "./McpServerState.js"
import type { McpPrompt } from "./McpShape.js"
import * as McpTools from "./McpTools.js"

// The tools and prompts a server lists, and calling its tools.

const callTool = (state: McpState, entry: ServerEntry, tool: string): McpTools.McpToolCall => (args, context) =>
  Effect.gen(function*() {
    const id = McpTools.toolKey(entry.name, tool)
    const connection = yield* Ref.get(entry.connection)
    if (!connection) {
      return yield* new ToolExecutionError({
        tool: id,
        detail: `The MCP server ${entry.name} is not connected (${statusText(yield* statusOf(state, entry.name))}), so ${tool} cannot be called right now.`
      })
    }
    const fork = Runtime.runFork(yield* Effect.runtime<never>())
    // Progress arrives on the SDK's callback; every report is recorded before the result is returned.
    const reports: Array<Fiber.RuntimeFiber<void>> = []
    const run = (effect: Effect.Effect<void>) => void reports.push(fork(effect))
    return yield* Effect.tryPromise({
      try: (signal) =>
        connection.client.callTool({ name: tool, arguments: args }, undefined, {
          signal: AbortSignal.any([signal, context.abort]),
          timeout: entry.callTimeout,
          resetTimeoutOnProgress: true,
          onprogress: (progress) => {
            run(context.metadata({
              metadata: {
                progress: progress.progress,
                ...(progress.total === undefined ? {} : { total: progress.total }),
                ...(progress.message === undefined ? {} : { message: progress.message })
              }
            }))
          }
        }),
      catch: (error) => error
    }).pipe(
      Effect.ensuring(Effect.suspend(() => Fiber.awaitAll(reports))),
      Effect.catchAll((error) =>
        Effect.gen(function*() {
          let detail: string
          if (context.abort.aborted) {
            detail = `The call to ${tool} was aborted.`
          } else if (isTimeout(error)) {
            detail = `The MCP tool ${tool} (server ${entry.name}) did not answer within ${entry.callTimeout} ms (the timeout restarts with every progress report).`
          } else if (isMcpError(error, "ConnectionClosed")) {
            detail = `The MCP server ${entry.name} closed the connection during the call to ${tool}: ${connection.describeClose()}.`
          } else if (connection.remote && !isMcpError(error)) {
            detail = `The MCP server ${entry.name} could not be reached during the call to ${tool}: ${errorText(error)}.`
            // Drop the connection and reconnect instead of failing every later call the same way.
            yield* Deferred.succeed(connection.closed, `the server could not be reached: ${errorText(error)}`)
          } else {
            detail = `The MCP tool ${tool} (server ${entry.name}) failed: ${errorText(error)}`
          }
          return yield* new ToolExecutionError({ tool: id, detail })
        })
      )
    )
  })

const buildTools = (state: McpState, entry: ServerEntry, definitions: ReadonlyArray<McpToolDefinition>) =>
  definitions
    // Tools that only run as tasks cannot be called with a plain `tools/call`.
    .filter((definition) => definition.execution?.taskSupport !== "required")
    .map((definition) => McpTools.makeTool(entry.name, definition, callTool(state, entry, definition.name)))

export const listTools = (state: McpState, entry: ServerEntry, client: Client) =>
  request(entry, (signal) =>
    paginate(async (cursor) => {
      const page = await client.listTools(cursor ? { cursor } : {}, { signal, timeout: entry.timeout })
      return { items: page.tools, nextCursor: page.nextCursor }
    })
  ).pipe(Effect.map((definitions) => buildTools(state, entry, definitions)))

export const listPrompts = (entry: ServerEntry, client: Client) =>
  request(entry, (signal) =>
    paginate(async (cursor) => {
      const page = await client.listPrompts(cursor ? { cursor } : {}, { signal, timeout: entry.timeout })
      return { items: page.prompts, nextCursor: page.nextCursor }
    })
  ).pipe(
    Effect.map((prompts) =>
      prompts.map((prompt): McpPrompt => ({
        key: McpTools.promptKey(entry.name, prompt.name),
        server: entry.name,
        name: prompt.name,
        ...(prompt.description === undefined ? {} : { description: prompt.description }),
        arguments: (prompt.arguments ?? []).map((argument) => ({
          name: argument.name,
          ...(argument.description === undefined ? {} : { description: argument.description }),
          ...(argument.required === undefined ? {} : { required: argument.required })
        }))
      }))
    )
  )


/** The tools of every connected server; the first server offering an id wins. */
export const makeTools = (state: McpState) => {
  const connected = connections(state)
  // Called every step (or every tool call): untraced, a span would cost more than the call.
  return Effect.fnUntraced(function*() {
    const all: Array<Tool.AnyTool> = []
    const seen = new Set<string>()
    for (const { connection } of yield* connected) {
      for (const tool of yield* Ref.get(connection.tools)) {
        if (seen.has(tool.id)) continue
        seen.add(tool.id)
        all.push(tool)
      }
    }
    return all as ReadonlyArray<Tool.AnyTool>
  })
}
