import { AgentApi, ApproverFallback } from "@agent/domain"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Effect, Option, Schema, Stream } from "effect"
import type { ServerEvent } from "./EventHub.js"

export interface ClientOptions {
  readonly baseUrl: string
  /** HTTP Basic credentials for a server started with `AGENT_SERVER_PASSWORD`. */
  readonly password?: string
  readonly username?: string
}

const authorize = (options: ClientOptions) => (client: HttpClient.HttpClient) =>
  options.password
    ? HttpClient.mapRequest(client, HttpClientRequest.basicAuth(options.username ?? "agent", options.password))
    : client

/**
 * A typed client for a running `agent serve`, derived from the same HttpApi definition the
 * server implements (used by `agent run --attach`).
 */
export const make = (options: ClientOptions) =>
  HttpApiClient.make(AgentApi, { baseUrl: options.baseUrl, transformClient: authorize(options) }).pipe(
    Effect.provide(FetchHttpClient.layer)
  )

export type AgentClient = Effect.Effect.Success<ReturnType<typeof make>>

const WireEvent = Schema.parseJson(Schema.Struct({
  id: Schema.optionalWith(Schema.Number, { exact: true }),
  type: Schema.String,
  properties: Schema.Unknown
}))
const decodeEvent = Schema.decodeUnknownOption(WireEvent)

/** The server's event stream as decoded events, starting with `server.connected`. */
export const events = (options: ClientOptions): Stream.Stream<ServerEvent, Error> =>
  Stream.unwrapScoped(
    Effect.gen(function*() {
      const client = HttpClient.filterStatusOk(authorize(options)(yield* HttpClient.HttpClient))
      const response = yield* client.get(new URL("/event", options.baseUrl).toString()).pipe(
        Effect.mapError((error) => new Error(`cannot subscribe to ${options.baseUrl}/event: ${error.message}`))
      )
      return response.stream.pipe(
        Stream.decodeText(),
        Stream.splitLines,
        Stream.filter((line) => line.startsWith("data: ")),
        Stream.filterMap((line) => decodeEvent(line.slice(6))),
        Stream.mapError((error) => new Error(`event stream from ${options.baseUrl} failed: ${String(error)}`))
      )
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )

/**
 * `permission.approver` as the server's `GET /config` shows it, read on its own: a webhook url the
 * server masks (it came from `{env:...}`) is no valid url here, yet still says there is a webhook.
 */
const ShownApprover = Schema.Struct({
  approver: Schema.optional(Schema.Union(
    Schema.String,
    Schema.Struct({
      webhook: Schema.optional(Schema.String),
      timeout: Schema.optional(Schema.Number),
      fallback: Schema.optional(ApproverFallback)
    })
  ))
})
const decodeShownApprover = Schema.decodeUnknownOption(ShownApprover)

/** The server's approver settings as shown (`undefined`: none, or a config this client cannot read). */
export const shownApprover = (options: ClientOptions) =>
  Effect.gen(function*() {
    const client = HttpClient.filterStatusOk(authorize(options)(yield* HttpClient.HttpClient))
    const response = yield* client.get(new URL("/config", options.baseUrl).toString())
    const shown = decodeShownApprover(yield* response.json)
    return Option.isSome(shown) ? shown.value.approver : undefined
  }).pipe(Effect.scoped, Effect.provide(FetchHttpClient.layer))
