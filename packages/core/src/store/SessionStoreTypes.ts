import type {
  Message,
  MessageID,
  MessageNotFound,
  MessageWithParts,
  Part,
  PartID,
  PermissionRuleset,
  Session,
  SessionExport,
  SessionID,
  SessionImportError,
  SessionNotFound,
  Todo,
  TokenUsage
} from "@agent/domain"
import type { Effect } from "effect"

// The SessionStore service's vocabulary: its shape and what its methods take (re-exported by SessionStore.ts).

export interface CreateSessionInput {
  readonly parentID?: SessionID
  readonly title?: string
  readonly agent?: string
  readonly model?: Session["model"]
  readonly permission?: PermissionRuleset
  readonly directory?: string
}

/** Fields of a session that can change; `null` clears an optional field. */
export interface SessionPatch {
  readonly title?: string
  readonly agent?: string
  readonly model?: Session["model"]
  readonly permission?: PermissionRuleset
  readonly summary?: Session["summary"] | null
  readonly revert?: Session["revert"] | null
  readonly share?: Session["share"] | null
  readonly archived?: number | null
  readonly compacting?: number | null
}

export interface ListSessionsOptions {
  /** Case-insensitive substring of the title. */
  readonly search?: string
  readonly limit?: number
  /** The `next` of the previous page. */
  readonly cursor?: string
}

export interface Page<A> {
  readonly items: ReadonlyArray<A>
  /** Pass as `cursor`/`before` to get the next page; absent on the last page. */
  readonly next?: string
}

export interface Usage {
  readonly cost: number
  readonly tokens: TokenUsage
}

export interface PartDeltaInput {
  readonly sessionID: SessionID
  readonly messageID: MessageID
  readonly partID: PartID
  readonly field: "text"
  readonly delta: string
}

export interface SessionStoreShape {
  readonly create: (input?: CreateSessionInput) => Effect.Effect<Session>
  readonly get: (id: SessionID) => Effect.Effect<Session, SessionNotFound>
  readonly update: (id: SessionID, patch: SessionPatch) => Effect.Effect<Session, SessionNotFound>
  /** Root sessions of this project, newest first. */
  readonly list: (options?: ListSessionsOptions) => Effect.Effect<Page<Session>>
  readonly children: (id: SessionID) => Effect.Effect<ReadonlyArray<Session>>
  /** Deletes the session, its descendants and everything they hold. */
  readonly remove: (id: SessionID) => Effect.Effect<void, SessionNotFound>
  /** A copy of the session with the messages before `messageID` (all when absent), under new ids. */
  readonly fork: (id: SessionID, options?: { readonly messageID?: MessageID }) => Effect.Effect<Session, SessionNotFound>
  /** Adds one step's usage to the session and every ancestor. */
  readonly addUsage: (id: SessionID, usage: Usage) => Effect.Effect<void>

  readonly upsertMessage: (message: Message) => Effect.Effect<void>
  readonly getMessage: (sessionID: SessionID, messageID: MessageID) => Effect.Effect<MessageWithParts, MessageNotFound>
  /** Every message with its parts, oldest first. */
  readonly messages: (sessionID: SessionID) => Effect.Effect<ReadonlyArray<MessageWithParts>>
  /** The newest `limit` messages before the cursor, newest first. */
  readonly messagePage: (
    sessionID: SessionID,
    options: { readonly limit: number; readonly before?: string }
  ) => Effect.Effect<Page<MessageWithParts>>
  /** What the model sees: the messages from the last completed compaction on (tail included), oldest first. */
  readonly history: (sessionID: SessionID) => Effect.Effect<ReadonlyArray<MessageWithParts>>
  readonly removeMessage: (sessionID: SessionID, messageID: MessageID) => Effect.Effect<void>

  readonly upsertPart: (part: Part) => Effect.Effect<void>
  /** Streams text into an open text or reasoning part: published now, written coalesced. */
  readonly appendDelta: (input: PartDeltaInput) => Effect.Effect<void>
  readonly removePart: (sessionID: SessionID, messageID: MessageID, partID: PartID) => Effect.Effect<void>
  /** Writes buffered deltas now. */
  readonly flush: () => Effect.Effect<void>
  /**
   * Takes the session over from a process that ran it and is dead or gone (a replica's failover):
   * its tool calls left pending or running are marked interrupted. Returns how many were.
   */
  readonly takeOver: (sessionID: SessionID) => Effect.Effect<number>

  readonly todos: (sessionID: SessionID) => Effect.Effect<ReadonlyArray<Todo>>
  readonly setTodos: (sessionID: SessionID, todos: ReadonlyArray<Todo>) => Effect.Effect<void>

  readonly exportSession: (id: SessionID) => Effect.Effect<SessionExport, SessionNotFound>
  readonly importSession: (data: unknown) => Effect.Effect<Session, SessionImportError>
}
