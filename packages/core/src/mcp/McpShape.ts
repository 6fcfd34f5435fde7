import type { McpServerStatus } from "@agent/domain"
import { type Duration, type Effect, Schema } from "effect"
import type { McpAuthError } from "./McpOAuth.js"
import type * as Tool from "../tool/Tool.js"

// The Mcp service's interface, data and errors, apart from the service so that the tools built
// over it (McpTools.ts) and the service itself (Mcp.ts, which builds those tools) do not import
// each other.

/** A prompt offered by a connected server; `key` is `<server>:<prompt>`, sanitized. */
export interface McpPrompt {
  readonly key: string
  readonly server: string
  readonly name: string
  readonly description?: string
  readonly arguments: ReadonlyArray<{ readonly name: string; readonly description?: string; readonly required?: boolean }>
}

export interface McpPromptMessage {
  readonly role: "user" | "assistant"
  readonly text: string
}

/** A rendered prompt: its messages' text content (images and binary resources are left out). */
export interface McpPromptResult {
  readonly description?: string
  readonly messages: ReadonlyArray<McpPromptMessage>
}

export interface McpResource {
  readonly server: string
  readonly uri: string
  readonly name: string
  readonly mimeType?: string
  readonly description?: string
}

/** A parameterized resource (RFC 6570 URI template) a server can read. */
export interface McpResourceTemplate {
  readonly server: string
  readonly uriTemplate: string
  readonly name: string
  readonly mimeType?: string
  readonly description?: string
}

/** One part of a read resource: `text`, or `blob` (base64). */
export interface McpResourceContent {
  readonly uri: string
  readonly mimeType?: string
  readonly text?: string
  readonly blob?: string
}

/** What a server tells its clients about using it (the `instructions` of its initialize answer). */
export interface McpInstructions {
  readonly server: string
  readonly text: string
}

/** A prompt or resource request to a server failed, or the server is unknown or not connected. */
export class McpRequestError extends Schema.TaggedError<McpRequestError>()("McpRequestError", {
  server: Schema.String,
  detail: Schema.String
}) {
  override get message() {
    return this.detail
  }
}

export interface AuthenticateOptions {
  /** Shows (and opens) the authorization URL; the flow then waits for the browser to come back. */
  readonly onAuthorizationUrl: (url: string) => Effect.Effect<void>
  /** How long to wait for the browser (default 5 minutes). */
  readonly timeout?: Duration.DurationInput
}

/** What the `Mcp` service offers. */
export interface McpShape {
  /** The tools of the servers connected right now, as runtime tools (`<server>_<tool>`). */
  readonly tools: () => Effect.Effect<ReadonlyArray<Tool.AnyTool>>
  /** Waits until every enabled server has connected or failed once, for at most `grace` (default `AGENT_MCP_GRACE_MS` or 3 s). */
  readonly ready: (grace?: Duration.DurationInput) => Effect.Effect<void>
  /** Every configured server, by config name. */
  readonly status: () => Effect.Effect<Record<string, McpServerStatus>>
  readonly prompts: () => Effect.Effect<ReadonlyArray<McpPrompt>>
  /** Renders the prompt `key` (`<server>:<prompt>`) with the given arguments. */
  readonly getPrompt: (key: string, args?: Record<string, string>) => Effect.Effect<McpPromptResult, McpRequestError>
  /** The resources of one server, or of every connected server (servers that fail to answer are skipped). */
  readonly resources: (server?: string) => Effect.Effect<ReadonlyArray<McpResource>, McpRequestError>
  /** The resource templates of one server, or of every connected server (servers that fail to answer are skipped). */
  readonly resourceTemplates: (server?: string) => Effect.Effect<ReadonlyArray<McpResourceTemplate>, McpRequestError>
  readonly readResource: (server: string, uri: string) => Effect.Effect<ReadonlyArray<McpResourceContent>, McpRequestError>
  /** The instructions connected servers gave, for the system prompt. */
  readonly instructions: () => Effect.Effect<ReadonlyArray<McpInstructions>>
  /**
   * (Re)connects one server now, also one that `enabled: false` keeps off, and answers with
   * its status once the attempt has ended (a failing server keeps retrying in the background).
   */
  readonly connect: (server: string) => Effect.Effect<McpServerStatus, McpRequestError>
  /** Closes one server's connection and stops reconnecting it (status `disabled`) until `connect`. */
  readonly disconnect: (server: string) => Effect.Effect<void, McpRequestError>
  /**
   * Runs the OAuth flow for a remote server (the URL goes to `onAuthorizationUrl`, the
   * browser comes back to the loopback callback), stores the tokens and reconnects it.
   */
  readonly authenticate: (server: string, options: AuthenticateOptions) => Effect.Effect<McpServerStatus, McpAuthError>
  /** Forgets a server's stored OAuth credentials; tells whether there were any. Reconnects it if it was running. */
  readonly logout: (server: string) => Effect.Effect<{ readonly removed: boolean; readonly status: McpServerStatus }, McpAuthError>
  /** Where OAuth credentials are kept (`<data>/mcp-auth.json`, mode 0600). */
  readonly credentialsFile: string
}
