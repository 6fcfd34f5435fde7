// What `serveAcp` is given, and what the client offered: shared by the connection and its session methods.
import type { AcpRuntimesOptions } from "./AcpRuntimes.js"

export interface AcpOptions extends AcpRuntimesOptions {
  /** What the agent reads: the client's messages (stdin). */
  readonly input: ReadableStream<Uint8Array>
  /** Where the agent writes: protocol messages only (stdout). */
  readonly output: WritableStream<Uint8Array>
  /** Directory for `session/list` without a `cwd` (default: the process's). */
  readonly directory: string
  /** The primary agent new sessions start in (default: the configured default agent). */
  readonly agent?: string
  /** `provider/model` new sessions use (default: the agent's or config's). */
  readonly model?: string
}

/** What the client offered at `initialize`. */
export interface ClientFeatures {
  readonly readTextFile: boolean
  readonly writeTextFile: boolean
  readonly terminal: boolean
}
