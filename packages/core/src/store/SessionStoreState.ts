import type { Message, Part } from "@agent/domain"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { Context, Scope } from "effect"
import type { Bus } from "../runtime/Bus.js"
import type { Instance } from "../runtime/Instance.js"
import type { withBusyRetry } from "./Database.js"
import type { DecodeCache, Statements } from "./StoreRows.js"
import type { StoreWrites } from "./StoreWrites.js"

// What the parts of the SessionStore share: the layer's dependencies and its mutable state, one
// value created by the layer and passed to the module functions of store/ (no module-level state).

/** A text or reasoning part still streaming: the newest text lives here until written. */
export interface OpenPart {
  part: Extract<Part, { type: "text" | "reasoning" }>
  dirty: boolean
}

/** The mutable state of one SessionStore layer. */
export class SessionStoreState {
  /** The project row was written by this layer. */
  projectSaved = false
  /** A write of buffered deltas is scheduled. */
  flushScheduled = false
  /** Text and reasoning parts still streaming, by part id. */
  readonly openParts = new Map<string, OpenPart>()
}

export interface StoreDeps {
  readonly sql: SqlClient.SqlClient
  readonly bus: Context.Tag.Service<Bus>
  readonly instance: Context.Tag.Service<Instance>
  /**
   * Runs a write after the writes issued before it, retrying while the database is busy
   * (infrastructure faults are defects).
   */
  readonly write: StoreWrites["write"]
  /** The hot writes of every step: part and message rows (grouped on PostgreSQL, StoreWrites.ts). */
  readonly upsert: StoreWrites["upsert"]
  /** A step's usage, added to its session and the ancestors (grouped on PostgreSQL too). */
  readonly addUsage: StoreWrites["addUsage"]
  /** Runs a read, retrying while the database is busy. */
  readonly read: ReturnType<typeof withBusyRetry>
  /** Background writes of streamed text run in the layer's scope. */
  readonly scope: Scope.Scope
  /** This layer's lease: tool parts it runs are marked with it. */
  readonly owner: string
  readonly partCache: DecodeCache<Part>
  readonly messageCache: DecodeCache<Message>
  readonly state: SessionStoreState
  /** The fixed statements of the hot writes, in the connection's dialect. */
  readonly statements: Statements
}
