/**
 * A real HTTP server on 127.0.0.1 that speaks the part of OpenAI's chat completions API that
 * `@ai-sdk/openai-compatible` uses, driven by the same script format as `ScriptedModel`. Use it
 * to test the real provider path: HTTP, SSE parsing, error statuses and headers.
 */
import { Effect, Schema, type Scope } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as Script from "./Script.js"

const Rest = Schema.Record({ key: Schema.String, value: Schema.Unknown })

const ChatMessage = Schema.Struct({ role: Schema.String }, Rest)

const ChatTool = Schema.Struct({
  type: Schema.String,
  function: Schema.Struct({ name: Schema.String }, Rest)
}, Rest)

/** The request body as received (unknown fields are kept). */
export const ChatCompletionRequest = Schema.Struct({
  model: Schema.String,
  messages: Schema.Array(ChatMessage),
  stream: Schema.optional(Schema.Boolean),
  stream_options: Schema.optional(Schema.NullOr(Schema.Struct({ include_usage: Schema.optional(Schema.Boolean) }))),
  tools: Schema.optional(Schema.Array(ChatTool))
}, Rest)
export type ChatCompletionRequest = typeof ChatCompletionRequest.Type

const decodeRequest = Schema.decodeUnknownEither(Schema.parseJson(ChatCompletionRequest), {
  onExcessProperty: "preserve"
})

export type ServerTurn = Script.ScriptTurn<ChatCompletionRequest>

export interface MockOpenAIServer {
  /** Base URL for `createOpenAICompatible({ baseURL })`, ending in `/v1`. */
  readonly url: string
  /** Every chat completion request received, in order (decoded JSON bodies). */
  readonly requests: ReadonlyArray<ChatCompletionRequest>
  /** Appends turns to the script. */
  readonly push: (...turns: ReadonlyArray<ServerTurn>) => void
  /** Turns not yet consumed. */
  readonly remaining: () => number
}

/**
 * Starts the server on a random port; it closes (dropping open connections) when the scope
 * closes. Each `POST /v1/chat/completions` consumes the next turn. Streaming requests get SSE
 * chunks (text per word, tool arguments in pieces, a usage chunk when
 * `stream_options.include_usage` is set, then `[DONE]`); other requests get one completion.
 * Error steps at the start of a turn answer with their HTTP status, headers and OpenAI's error
 * JSON; `at: "stream"` drops the connection mid-stream; `at: "part"` sends an error chunk.
 * When the script runs out, requests get a 400 saying so (400, so the SDK does not retry it).
 * `delay` steps wait in real time.
 */
export const start = (
  turns: ReadonlyArray<ServerTurn> = []
): Effect.Effect<MockOpenAIServer, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.async<{ server: http.Server; state: State }>((resume) => {
        const state: State = { turns: [...turns], requests: [] }
        const server = http.createServer((request, response) => {
          handle(state, request, response).catch((error: unknown) => {
            // A bug in the mock itself: report it to the client instead of hanging.
            if (!response.headersSent) {
              send(response, 500, {}, { error: { message: `MockOpenAIServer: ${String(error)}` } })
            } else response.destroy()
          })
        })
        server.once("error", (error) => resume(Effect.die(error)))
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, state })))
      }),
      ({ server }) =>
        Effect.async<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    ),
    ({ server, state }) => ({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
      requests: state.requests,
      push: (...more) => {
        state.turns.push(...more)
      },
      remaining: () => state.turns.length
    })
  )

interface State {
  readonly turns: Array<ServerTurn>
  readonly requests: Array<ChatCompletionRequest>
}

const handle = async (state: State, request: http.IncomingMessage, response: http.ServerResponse) => {
  const body = await readBody(request)
  const path = new URL(request.url ?? "/", "http://127.0.0.1").pathname
  if (request.method !== "POST" || path !== "/v1/chat/completions") {
    return send(response, 404, {}, errorJson(`MockOpenAIServer: no route for ${request.method} ${path}`))
  }
  const decoded = decodeRequest(body)
  if (decoded._tag === "Left") {
    return send(response, 400, {}, errorJson(`MockOpenAIServer: unexpected request body: ${String(decoded.left)}`))
  }
  const chat = decoded.right
  state.requests.push(chat)
  const turn = state.turns.shift()
  if (turn === undefined) {
    const count = state.requests.length
    return send(
      response,
      400,
      {},
      errorJson(`MockOpenAIServer: no turn left for request ${count} (all ${count - 1} scripted turns were consumed)`)
    )
  }

  // The client hanging up (an aborted call) stops any pending delay.
  const hangup = new AbortController()
  response.on("close", () => {
    if (!response.writableFinished) hangup.abort()
  })

  const steps = Script.resolveTurn(turn, chat)
  const plan = Script.planTurn(steps)
  if (plan.callError) {
    for (const ms of plan.callError.delays) await Script.sleep(ms, hangup.signal)
    const error = plan.callError.error
    if (Script.isApiError(error)) return send(response, error.statusCode, error.headers ?? {}, Script.errorBody(error))
    return send(response, 500, {}, errorJson(error.message))
  }
  const meta = { id: `chatcmpl-mock-${state.requests.length}`, created: Math.floor(Date.now() / 1000), model: chat.model }
  if (chat.stream === true) {
    await streamTurn(response, plan.steps, meta, chat.stream_options?.include_usage === true, hangup.signal)
  } else {
    await completeTurn(response, plan.steps, meta, hangup.signal)
  }
}

interface Meta {
  readonly id: string
  readonly created: number
  readonly model: string
}

const streamTurn = async (
  response: http.ServerResponse,
  steps: ReadonlyArray<Script.ScriptStep>,
  meta: Meta,
  includeUsage: boolean,
  signal: AbortSignal
) => {
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" })
  const write = (data: unknown) => {
    response.write(`data: ${JSON.stringify(data)}\n\n`)
  }
  const chunk = (delta: object, finishReason: string | null = null) =>
    write({
      ...meta,
      object: "chat.completion.chunk",
      choices: [{ index: 0, delta, finish_reason: finishReason }]
    })
  chunk({ role: "assistant", content: "" })
  let toolIndex = 0
  for (const step of steps) {
    if ("text" in step) {
      for (const piece of Script.textDeltas(step.text)) chunk({ content: piece })
    } else if ("reasoning" in step) {
      for (const piece of Script.textDeltas(step.reasoning)) chunk({ reasoning_content: piece })
    } else if ("toolCall" in step) {
      const index = toolIndex++
      const id = step.toolCall.id ?? `call_mock_${meta.id}_${index}`
      chunk({ tool_calls: [{ index, id, type: "function", function: { name: step.toolCall.name, arguments: "" } }] })
      for (const piece of Script.argumentDeltas(Script.toolInput(step.toolCall.input))) {
        chunk({ tool_calls: [{ index, function: { arguments: piece } }] })
      }
    } else if ("delay" in step) {
      await Script.sleep(Script.toMillis(step.delay), signal)
    } else if ("error" in step) {
      if (Script.placementInStream(step) === "stream") {
        // A dropped connection: what was written arrives, then the body ends without `[DONE]`.
        await new Promise<void>((resolve) => response.write("\n", () => resolve()))
        response.destroy()
        return
      }
      write(Script.isApiError(step.error) ? Script.errorBody(step.error) : errorJson(step.error.message))
    }
  }
  const outcome = Script.outcomeOf(steps)
  chunk({}, FINISH[outcome.finish])
  if (includeUsage) write({ ...meta, object: "chat.completion.chunk", choices: [], usage: usageJson(outcome.usage) })
  response.end("data: [DONE]\n\n")
}

const completeTurn = async (
  response: http.ServerResponse,
  steps: ReadonlyArray<Script.ScriptStep>,
  meta: Meta,
  signal: AbortSignal
) => {
  let content = ""
  let reasoning = ""
  const toolCalls: Array<object> = []
  for (const step of steps) {
    if ("text" in step) content += step.text
    else if ("reasoning" in step) reasoning += step.reasoning
    else if ("toolCall" in step) {
      toolCalls.push({
        id: step.toolCall.id ?? `call_mock_${meta.id}_${toolCalls.length}`,
        type: "function",
        function: { name: step.toolCall.name, arguments: Script.toolInput(step.toolCall.input) }
      })
    } else if ("delay" in step) await Script.sleep(Script.toMillis(step.delay), signal)
    else if ("error" in step) {
      // Without a stream an error can only be the response itself.
      const error = step.error
      if (Script.isApiError(error)) return send(response, error.statusCode, error.headers ?? {}, Script.errorBody(error))
      return send(response, 500, {}, errorJson(error.message))
    }
  }
  const outcome = Script.outcomeOf(steps)
  send(response, 200, {}, {
    ...meta,
    object: "chat.completion",
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: content.length > 0 ? content : null,
        ...(reasoning.length > 0 ? { reasoning_content: reasoning } : {}),
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {})
      },
      finish_reason: FINISH[outcome.finish]
    }],
    usage: usageJson(outcome.usage)
  })
}

const FINISH: Record<Script.ScriptFinishReason, string> = {
  "stop": "stop",
  "tool-calls": "tool_calls",
  "length": "length",
  "content-filter": "content_filter",
  "other": "other"
}

/** OpenAI usage; `cacheWrite` has no OpenAI field and is dropped. */
const usageJson = (usage: Script.ScriptUsage) => ({
  prompt_tokens: usage.input,
  completion_tokens: usage.output,
  total_tokens: usage.input + usage.output,
  prompt_tokens_details: { cached_tokens: usage.cacheRead ?? 0 },
  completion_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 }
})

const errorJson = (message: string) => ({ error: { message, type: "mock_error", param: null, code: null } })

const send = (
  response: http.ServerResponse,
  status: number,
  headers: Readonly<Record<string, string>>,
  body: unknown
) => {
  response.writeHead(status, { ...headers, "content-type": "application/json" })
  response.end(JSON.stringify(body))
}

const readBody = (request: http.IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    request.on("error", reject)
  })
