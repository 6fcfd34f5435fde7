import {
  type Message,
  type MessageID,
  MessageNotFound,
  type MessageWithParts,
  Part,
  type PartID,
  type PermissionRuleset,
  type ProjectID,
  Session,
  type SessionExport,
  SessionExport as SessionExportSchema,
  type SessionID,
  SessionImportError,
  SessionNotFound,
  type Todo,
  type TokenUsage,
  Message as MessageSchema
} from "@agent/domain"
import * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import { Context, Effect, Layer, ParseResult, Schedule, Schema } from "effect"
import * as os from "node:os"
import * as Identifier from "../runtime/Identifier.js"
import { Bus } from "../runtime/Bus.js"
import { Instance } from "../runtime/Instance.js"
import { isAlive } from "../runtime/Pid.js"
import { VERSION } from "../runtime/Version.js"
import { isReadOnly, openedFile, withBusyRetry } from "./Database.js"
import { makeInPlaceDecoder } from "./InPlaceDecoder.js"

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

  readonly todos: (sessionID: SessionID) => Effect.Effect<ReadonlyArray<Todo>>
  readonly setTodos: (sessionID: SessionID, todos: ReadonlyArray<Todo>) => Effect.Effect<void>

  readonly exportSession: (id: SessionID) => Effect.Effect<SessionExport, SessionNotFound>
  readonly importSession: (data: unknown) => Effect.Effect<Session, SessionImportError>
}

/** How often buffered text deltas reach the database at most. */
const DELTA_FLUSH_MS = 50
/** A lease whose heartbeat is older than this belongs to a dead process. */
const LEASE_STALE_MS = 30_000
const LEASE_HEARTBEAT = "5 seconds"

interface SessionRow {
  readonly id: string
  readonly project_id: string
  readonly parent_id: string | null
  readonly slug: string
  readonly directory: string
  readonly title: string
  readonly version: string
  readonly agent: string | null
  readonly model: string | null
  readonly permission: string | null
  readonly summary: string | null
  readonly revert: string | null
  readonly share_url: string | null
  readonly cost: number
  readonly tokens_input: number
  readonly tokens_output: number
  readonly tokens_reasoning: number
  readonly tokens_cache_read: number
  readonly tokens_cache_write: number
  readonly time_created: number
  readonly time_updated: number
  readonly time_compacting: number | null
  readonly time_archived: number | null
}

interface DataRow {
  readonly id: string
  readonly data: string
}

/** A message or part row as loads read it: `rev` changes with every write of `data`. */
interface RevRow extends DataRow {
  readonly rev: number
}

interface PartRow extends RevRow {
  readonly message_id: string
}

const decodeSession = Schema.decodeUnknownSync(Session)
// Stored rows are checked where they lie rather than copied: a long session has thousands.
const checkMessage = makeInPlaceDecoder(MessageSchema)
const checkPart = makeInPlaceDecoder(Part)
const decodeMessage = (text: string) => checkMessage(JSON.parse(text))
const decodePart = (text: string) => checkPart(JSON.parse(text))
const decodeExport = Schema.decodeUnknownEither(SessionExportSchema)
const encodeExport = Schema.encodeSync(SessionExportSchema)

// The writes of every step, as fixed text: a `sql` template is compiled again on each call.
const PART_UPSERT = `INSERT INTO part (id, message_id, session_id, type, status, owner, data, rev) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT(id) DO UPDATE SET data = excluded.data, rev = excluded.rev, status = excluded.status, owner = excluded.owner`
// Fork and import insert without the upsert clause: a message id already taken there is an error.
const MESSAGE_INSERT = `INSERT INTO message (id, session_id, role, time_created, data, rev) VALUES (?, ?, ?, ?, ?, ?)`
const MESSAGE_UPSERT = `${MESSAGE_INSERT} ON CONFLICT(id) DO UPDATE SET data = excluded.data, rev = excluded.rev`

const ADD_USAGE = `WITH RECURSIVE chain(id) AS (
    SELECT ? UNION ALL SELECT s.parent_id FROM session s JOIN chain c ON s.id = c.id WHERE s.parent_id IS NOT NULL
  )
  UPDATE session SET
    cost = cost + ?, tokens_input = tokens_input + ?, tokens_output = tokens_output + ?,
    tokens_reasoning = tokens_reasoning + ?, tokens_cache_read = tokens_cache_read + ?,
    tokens_cache_write = tokens_cache_write + ?, time_updated = ?
  WHERE id IN (SELECT id FROM chain)
  RETURNING *`

/** A new revision for a row whose data is written (see migration 0003). */
const newRev = () => Math.floor(Math.random() * 2 ** 53)

const messageRow = (message: Message): ReadonlyArray<unknown> =>
  [message.id, message.sessionID, message.role, message.time.created, JSON.stringify(message), newRev()]

/**
 * Decoded rows by id, reused while the row's revision is unchanged: the loop reloads a
 * session's history every step, and decoding is most of the cost of a load. The row's text is
 * not kept: its length stands in for the decoded value's size.
 */
class DecodeCache<A> {
  private readonly entries = new Map<string, { readonly rev: number; readonly size: number; readonly value: A }>()
  private size = 0
  constructor(
    private readonly table: string,
    private readonly decode: (data: string) => A,
    /** Bound on the cached rows' JSON text, in characters (the decoded objects are of similar size). */
    private readonly maxChars: number
  ) {}

  get(row: RevRow): A {
    const hit = this.entries.get(row.id)
    if (hit) {
      this.entries.delete(row.id)
      if (hit.rev === row.rev) {
        this.entries.set(row.id, hit)
        return hit.value
      }
      this.size -= hit.size
    }
    const value = decodeRow(this.table, row.id, this.decode, row.data)
    const size = row.data.length
    if (size > this.maxChars / 16) return value // one huge row must not flush everything else
    this.entries.set(row.id, { rev: row.rev, size, value })
    this.size += size
    for (const [oldest, entry] of this.entries) {
      if (this.size <= this.maxChars) break
      this.entries.delete(oldest)
      this.size -= entry.size
    }
    return value
  }
}

/** A row that does not decode is damage, not a user error: die with where it is. */
const decodeRow = <I, A>(table: string, id: string, decode: (input: I) => A, input: I): A => {
  try {
    return decode(input)
  } catch (error) {
    throw new Error(`corrupt ${table} row ${id}: ${error instanceof Error ? error.message : String(error)}`)
  }
}

const json = (value: unknown) => (value === undefined || value === null ? null : JSON.stringify(value))
const parseJsonColumn = (value: string | null): unknown => (value === null ? undefined : JSON.parse(value))

const rowToSession = (row: SessionRow): Session =>
  decodeRow("session", row.id, decodeSession, {
    id: row.id,
    slug: row.slug,
    projectID: row.project_id,
    directory: row.directory,
    ...(row.parent_id ? { parentID: row.parent_id } : {}),
    title: row.title,
    version: row.version,
    ...(row.agent ? { agent: row.agent } : {}),
    ...(row.model ? { model: parseJsonColumn(row.model) } : {}),
    ...(row.permission ? { permission: parseJsonColumn(row.permission) } : {}),
    ...(row.summary ? { summary: parseJsonColumn(row.summary) } : {}),
    ...(row.revert ? { revert: parseJsonColumn(row.revert) } : {}),
    ...(row.share_url ? { share: { url: row.share_url } } : {}),
    cost: row.cost,
    tokens: {
      input: row.tokens_input,
      output: row.tokens_output,
      reasoning: row.tokens_reasoning,
      cache: { read: row.tokens_cache_read, write: row.tokens_cache_write }
    },
    time: {
      created: row.time_created,
      updated: row.time_updated,
      ...(row.time_compacting !== null ? { compacting: row.time_compacting } : {}),
      ...(row.time_archived !== null ? { archived: row.time_archived } : {})
    }
  })

const forkTitle = (title: string) => {
  const match = /^(.*) \(fork #(\d+)\)$/.exec(title)
  return match ? `${match[1]} (fork #${Number(match[2]) + 1})` : `${title} (fork #1)`
}

const SLUG_WORDS = [
  "amber", "brisk", "calm", "dawn", "ember", "fern", "gale", "harbor", "iris", "jade", "kite", "lumen",
  "maple", "north", "opal", "pine", "quartz", "river", "slate", "tide", "umber", "vale", "willow", "zephyr"
]
const slug = () => {
  const pick = () => SLUG_WORDS[Math.floor(Math.random() * SLUG_WORDS.length)]!
  return `${pick()}-${pick()}-${Math.random().toString(36).slice(2, 6)}`
}

const chunks = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, index) => items.slice(index * size, (index + 1) * size))

/**
 * What makes an export that decodes still unfit to import: a message, part or child listed
 * under a session or message it does not belong to, or an id used twice. Undefined when sound.
 */
const inconsistency = (nodes: ReadonlyArray<SessionExport>): string | undefined => {
  const seen = { session: new Set<string>(), message: new Set<string>(), part: new Set<string>() }
  const twice = (kind: keyof typeof seen, id: string) => {
    if (seen[kind].has(id)) return `${kind} ${id} appears twice in the file`
    seen[kind].add(id)
    return undefined
  }
  for (const node of nodes) {
    const session = node.info.id
    const duplicate = twice("session", session)
    if (duplicate) return duplicate
    for (const child of node.children ?? []) {
      if (child.info.parentID !== session) {
        return `session ${child.info.id} is listed as a child of ${session} but its parentID is ${child.info.parentID ?? "missing"}`
      }
    }
    for (const { info, parts } of node.messages) {
      const duplicate = twice("message", info.id)
      if (duplicate) return duplicate
      if (info.sessionID !== session) {
        return `message ${info.id} is listed under session ${session} but its sessionID is ${info.sessionID}`
      }
      for (const part of parts) {
        const duplicate = twice("part", part.id)
        if (duplicate) return duplicate
        if (part.messageID !== info.id || part.sessionID !== session) {
          return `part ${part.id} is listed under message ${info.id} of session ${session} but belongs to message ${part.messageID} of session ${part.sessionID}`
        }
      }
    }
  }
  return undefined
}

/**
 * A text or reasoning part the model is still streaming: started (`time.start`) and not ended. A
 * text part without `time` (a prompt's text, a synthetic note) is complete as written; it used to
 * count as open and so stayed in `openParts`, with its text, for the life of the process.
 */
const isOpenStreamingPart = (part: Part): part is Extract<Part, { type: "text" | "reasoning" }> =>
  (part.type === "text" || part.type === "reasoning") && part.time !== undefined && part.time.end === undefined

const toolStatus = (part: Part): string | null => (part.type === "tool" ? part.state.status : null)

/**
 * Sessions, messages, parts and todos in SQLite, with every change published on the bus.
 * Text deltas are published at once and written coalesced; a process that dies mid-run
 * leaves tool parts that the next process to open the database marks as interrupted.
 */
export class SessionStore extends Context.Tag("@agent/core/SessionStore")<SessionStore, SessionStoreShape>() {
  static readonly layer: Layer.Layer<SessionStore, never, SqlClient.SqlClient | Bus | Instance> = Layer.scoped(
    SessionStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const bus = yield* Bus
      const instance = yield* Instance
      const write = withBusyRetry(yield* openedFile)
      const read = <A, R>(effect: Effect.Effect<A, SqlError.SqlError, R>) => write(effect)
      const scope = yield* Effect.scope
      const partCache = new DecodeCache("part", decodePart, 32 * 1024 * 1024)
      const messageCache = new DecodeCache("message", decodeMessage, 8 * 1024 * 1024)

      const owner = `${os.hostname()}:${process.pid}:${Identifier.ascending("part").slice(4)}`

      // --- leases and crash recovery --------------------------------------------------------

      const heartbeat = write(
        sql`INSERT INTO lease (owner, pid, host, heartbeat) VALUES (${owner}, ${process.pid}, ${os.hostname()}, ${Date.now()})
            ON CONFLICT(owner) DO UPDATE SET heartbeat = excluded.heartbeat`
      )

      const recoverInterrupted = Effect.gen(function*() {
        const leases = yield* read(sql<{ owner: string; pid: number; host: string; heartbeat: number }>`SELECT * FROM lease`)
        const now = Date.now()
        const dead = new Set(
          leases
            .filter((lease) =>
              lease.owner !== owner &&
              (now - lease.heartbeat > LEASE_STALE_MS || (lease.host === os.hostname() && !isAlive(lease.pid)))
            )
            .map((lease) => lease.owner)
        )
        const live = new Set(leases.map((lease) => lease.owner).filter((id) => !dead.has(id)))
        const open = yield* read(
          sql<DataRow & { owner: string | null }>`SELECT id, data, owner FROM part WHERE status IN ('pending', 'running')`
        )
        const orphans = open.filter((row) => row.owner === null || !live.has(row.owner))
        if (orphans.length === 0 && dead.size === 0) return
        yield* write(
          sql.withTransaction(
            Effect.gen(function*() {
              for (const row of orphans) {
                const part = decodeRow("part", row.id, decodePart, row.data)
                if (part.type !== "tool" || (part.state.status !== "pending" && part.state.status !== "running")) continue
                const start = part.state.status === "running" ? part.state.time.start : now
                const interrupted: Part = {
                  ...part,
                  state: {
                    status: "error",
                    input: part.state.input,
                    error: "Tool execution was interrupted",
                    metadata: { ...(part.state.status === "running" ? part.state.metadata : {}), interrupted: true },
                    time: { start, end: now }
                  }
                }
                yield* sql`UPDATE part SET data = ${JSON.stringify(interrupted)}, rev = ${newRev()}, status = 'error', owner = NULL WHERE id = ${row.id}`
              }
              if (dead.size > 0) yield* sql`DELETE FROM lease WHERE ${sql.in("owner", [...dead])}`
            })
          )
        )
        if (orphans.length > 0) yield* Effect.logInfo(`marked ${orphans.length} tool call(s) of dead processes as interrupted`)
      })

      // A store that only reads (Database.layerReadOnly) runs nothing, so it holds no lease and
      // leaves the recovery to the next process that writes.
      if (!(yield* isReadOnly)) {
        yield* heartbeat
        yield* recoverInterrupted
        // A beat that fails (the file locked for a long time) is logged and the next one tried: a
        // heartbeat that stopped for good would let other processes take this one's calls for dead.
        yield* Effect.forkScoped(
          heartbeat.pipe(
            Effect.catchAllCause((cause) => Effect.logWarning("session store heartbeat failed; trying again", cause)),
            Effect.repeat(Schedule.spaced(LEASE_HEARTBEAT))
          )
        )
        yield* Effect.addFinalizer(() => write(sql`DELETE FROM lease WHERE owner = ${owner}`).pipe(Effect.ignore))
      }

      // --- projects and sessions -----------------------------------------------------------

      let projectSaved = false
      const ensureProject = Effect.suspend(() => {
        if (projectSaved) return Effect.void
        const now = Date.now()
        return write(
          sql`INSERT INTO project (id, worktree, vcs, time_created, time_updated)
              VALUES (${instance.projectID}, ${instance.worktree}, ${instance.vcs ? 1 : 0}, ${now}, ${now})
              ON CONFLICT(id) DO UPDATE SET time_updated = excluded.time_updated`
        ).pipe(Effect.tap(() => (projectSaved = true)))
      })

      const findSession = (id: string) =>
        read(sql<SessionRow>`SELECT * FROM session WHERE id = ${id}`).pipe(
          Effect.map((rows) => (rows[0] ? rowToSession(rows[0]) : undefined))
        )

      const get = Effect.fn("SessionStore.get")(function*(id: SessionID) {
        const session = yield* findSession(id)
        if (!session) return yield* new SessionNotFound({ sessionID: id })
        return session
      })

      const insertSession = (session: Session) =>
        sql`INSERT INTO session ${sql.insert({
          id: session.id,
          project_id: session.projectID,
          parent_id: session.parentID ?? null,
          slug: session.slug,
          directory: session.directory,
          title: session.title,
          version: session.version,
          agent: session.agent ?? null,
          model: json(session.model),
          permission: json(session.permission),
          summary: json(session.summary),
          revert: json(session.revert),
          share_url: session.share?.url ?? null,
          cost: session.cost ?? 0,
          tokens_input: session.tokens?.input ?? 0,
          tokens_output: session.tokens?.output ?? 0,
          tokens_reasoning: session.tokens?.reasoning ?? 0,
          tokens_cache_read: session.tokens?.cache.read ?? 0,
          tokens_cache_write: session.tokens?.cache.write ?? 0,
          time_created: session.time.created,
          time_updated: session.time.updated,
          time_compacting: session.time.compacting ?? null,
          time_archived: session.time.archived ?? null
        })}`

      const newSession = (input: CreateSessionInput, now = Date.now()) =>
        new Session({
          id: Identifier.descending("session", now) as SessionID,
          slug: slug(),
          projectID: instance.projectID,
          directory: input.directory ?? instance.directory,
          title: input.title ?? `${input.parentID ? "Child session" : "New session"} - ${new Date(now).toISOString()}`,
          version: VERSION,
          ...(input.parentID ? { parentID: input.parentID } : {}),
          ...(input.agent ? { agent: input.agent } : {}),
          ...(input.model ? { model: input.model } : {}),
          ...(input.permission ? { permission: input.permission } : {}),
          time: { created: now, updated: now }
        })

      const create = Effect.fn("SessionStore.create")(function*(input: CreateSessionInput = {}) {
        yield* ensureProject
        const session = newSession(input)
        yield* write(insertSession(session))
        const saved = (yield* findSession(session.id))!
        yield* bus.publish({ type: "session.created", properties: { info: saved } })
        return saved
      })

      const update = Effect.fn("SessionStore.update")(function*(id: SessionID, patch: SessionPatch) {
        yield* get(id)
        const set: Record<string, unknown> = { time_updated: Date.now() }
        if (patch.title !== undefined) set.title = patch.title
        if (patch.agent !== undefined) set.agent = patch.agent
        if (patch.model !== undefined) set.model = json(patch.model)
        if (patch.permission !== undefined) set.permission = json(patch.permission)
        if (patch.summary !== undefined) set.summary = json(patch.summary)
        if (patch.revert !== undefined) set.revert = json(patch.revert)
        if (patch.share !== undefined) set.share_url = patch.share?.url ?? null
        if (patch.archived !== undefined) set.time_archived = patch.archived
        if (patch.compacting !== undefined) set.time_compacting = patch.compacting
        yield* write(sql`UPDATE session SET ${sql.update(set)} WHERE id = ${id}`)
        const saved = yield* get(id)
        yield* bus.publish({ type: "session.updated", properties: { info: saved } })
        return saved
      })

      const list = Effect.fn("SessionStore.list")(function*(options: ListSessionsOptions = {}) {
        const limit = Math.max(1, Math.min(options.limit ?? 50, 1000))
        const search = options.search?.trim()
        const pattern = search ? `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : undefined
        const rows = yield* read(sql<SessionRow>`
          SELECT * FROM session
          WHERE project_id = ${instance.projectID} AND parent_id IS NULL
          ${pattern ? sql`AND title LIKE ${pattern} ESCAPE '\\'` : sql``}
          ${options.cursor ? sql`AND id > ${options.cursor}` : sql``}
          ORDER BY id LIMIT ${limit + 1}`)
        const items = rows.slice(0, limit).map(rowToSession)
        return rows.length > limit ? { items, next: items.at(-1)!.id } : { items }
      })

      const children = Effect.fn("SessionStore.children")(function*(id: SessionID) {
        const rows = yield* read(sql<SessionRow>`SELECT * FROM session WHERE parent_id = ${id} ORDER BY id`)
        return rows.map(rowToSession)
      })

      const descendantsAndSelf = (id: SessionID) =>
        read(sql<SessionRow>`
          WITH RECURSIVE tree(id) AS (
            SELECT ${id} UNION ALL SELECT s.id FROM session s JOIN tree t ON s.parent_id = t.id
          )
          SELECT session.* FROM session JOIN tree ON session.id = tree.id`).pipe(Effect.map((rows) => rows.map(rowToSession)))

      const remove = Effect.fn("SessionStore.remove")(function*(id: SessionID) {
        yield* get(id)
        const doomed = yield* descendantsAndSelf(id)
        const doomedIds = new Set<string>(doomed.map((session) => session.id))
        for (const [partID, entry] of openParts) if (doomedIds.has(entry.part.sessionID)) openParts.delete(partID)
        // Foreign keys cascade to children, messages, parts and todos.
        yield* write(sql`DELETE FROM session WHERE id = ${id}`)
        // Give the freed pages back to the file system, a bounded amount at a time.
        yield* write(sql`PRAGMA incremental_vacuum(2000)`)
        for (const session of doomed.reverse()) yield* bus.publish({ type: "session.deleted", properties: { info: session } })
      })

      // One statement per step: the session and all its ancestors in one UPDATE, rows returned for the events.
      const addUsage = Effect.fnUntraced(function*(id: SessionID, usage: Usage) {
        const rows = yield* write(sql.unsafe<SessionRow>(ADD_USAGE, [
          id,
          usage.cost,
          usage.tokens.input,
          usage.tokens.output,
          usage.tokens.reasoning,
          usage.tokens.cache.read,
          usage.tokens.cache.write,
          Date.now()
        ]))
        // Nearest first: a child is newer than its parent, and session ids sort newest first.
        const sessions = rows.map(rowToSession).sort((a, b) => (a.id < b.id ? -1 : 1))
        for (const session of sessions) yield* bus.publish({ type: "session.updated", properties: { info: session } })
      })

      // --- messages and parts --------------------------------------------------------------

      /** Text and reasoning parts still streaming: the newest text lives here until written. */
      const openParts = new Map<string, { part: Extract<Part, { type: "text" | "reasoning" }>; dirty: boolean }>()
      let flushScheduled = false

      const partRow = (part: Part): ReadonlyArray<unknown> => {
        const status = toolStatus(part)
        const partOwner = status === "pending" || status === "running" ? owner : null
        return [part.id, part.messageID, part.sessionID, part.type, status, partOwner, JSON.stringify(part), newRev()]
      }
      const writePart = (part: Part) => sql.unsafe(PART_UPSERT, partRow(part))

      const flush = Effect.fn("SessionStore.flush")(function*() {
        const dirty = [...openParts.values()].filter((entry) => entry.dirty)
        if (dirty.length === 0) return
        for (const entry of dirty) entry.dirty = false
        yield* write(sql.withTransaction(Effect.forEach(dirty, (entry) => writePart(entry.part), { discard: true })))
      })

      const scheduleFlush = Effect.suspend(() => {
        if (flushScheduled) return Effect.void
        flushScheduled = true
        return Effect.sleep(DELTA_FLUSH_MS).pipe(
          Effect.zipRight(Effect.sync(() => (flushScheduled = false))),
          Effect.zipRight(flush()),
          Effect.catchAllCause((cause) => Effect.logError("writing streamed text failed", cause)),
          Effect.forkIn(scope),
          Effect.asVoid
        )
      })

      yield* Effect.addFinalizer(() => flush().pipe(Effect.catchAllCause((cause) => Effect.logError("final flush failed", cause))))

      /** Overlay text that is still buffered, so readers see what subscribers saw. */
      const current = (part: Part): Part => openParts.get(part.id)?.part ?? part

      // Several times per step: untraced (a span costs more than the write it would describe).
      const upsertPart = Effect.fnUntraced(function*(part: Part) {
        if (isOpenStreamingPart(part)) openParts.set(part.id, { part, dirty: false })
        else openParts.delete(part.id)
        yield* write(writePart(part))
        yield* bus.publish({ type: "message.part.updated", properties: { part } })
      })

      const appendDelta = Effect.fnUntraced(function*(input: PartDeltaInput) {
        let entry = openParts.get(input.partID)
        if (!entry) {
          // Not opened by this process (or already finished): continue from what is stored.
          const rows = yield* read(sql<DataRow>`SELECT id, data FROM part WHERE id = ${input.partID}`)
          const stored = rows[0] ? decodeRow("part", rows[0].id, decodePart, rows[0].data) : undefined
          if (!stored || (stored.type !== "text" && stored.type !== "reasoning")) {
            return yield* Effect.dieMessage(`appendDelta: part ${input.partID} is not a stored text or reasoning part`)
          }
          entry = { part: stored, dirty: false }
          openParts.set(input.partID, entry)
        }
        entry.part = { ...entry.part, text: entry.part.text + input.delta }
        entry.dirty = true
        yield* bus.publish({ type: "message.part.delta", properties: input })
        yield* scheduleFlush
      })

      const removePart = Effect.fn("SessionStore.removePart")(function*(sessionID: SessionID, messageID: MessageID, partID: PartID) {
        openParts.delete(partID)
        yield* write(sql`DELETE FROM part WHERE id = ${partID}`)
        yield* bus.publish({ type: "message.part.removed", properties: { sessionID, messageID, partID } })
      })

      const upsertMessage = Effect.fnUntraced(function*(message: Message) {
        yield* write(
          sql.unsafe(MESSAGE_UPSERT, messageRow(message))
        )
        yield* bus.publish({ type: "message.updated", properties: { info: message } })
      })

      /** Messages (in the given order) joined with their parts (in id order). */
      const withParts = (messages: ReadonlyArray<RevRow>, parts: ReadonlyArray<PartRow>): Array<MessageWithParts> => {
        const byMessage = new Map<string, Array<Part>>()
        for (const row of parts) {
          const part = current(partCache.get(row))
          let list = byMessage.get(row.message_id)
          if (!list) byMessage.set(row.message_id, (list = []))
          list.push(part)
        }
        return messages.map((row) => ({
          info: messageCache.get(row),
          parts: byMessage.get(row.id) ?? []
        }))
      }

      const getMessage = Effect.fn("SessionStore.getMessage")(function*(sessionID: SessionID, messageID: MessageID) {
        const rows = yield* read(sql<RevRow>`SELECT id, data, rev FROM message WHERE id = ${messageID} AND session_id = ${sessionID}`)
        if (rows.length === 0) return yield* new MessageNotFound({ sessionID, messageID })
        const parts = yield* read(sql<PartRow>`SELECT id, message_id, data, rev FROM part WHERE message_id = ${messageID} ORDER BY id`)
        return withParts(rows, parts)[0]!
      })

      const messagesFrom = (sessionID: SessionID, fromID: string | undefined) =>
        Effect.gen(function*() {
          const from = fromID ?? ""
          const messages = yield* read(
            sql<RevRow>`SELECT id, data, rev FROM message WHERE session_id = ${sessionID} AND id >= ${from} ORDER BY id`
          )
          const parts = yield* read(
            sql<PartRow>`SELECT id, message_id, data, rev FROM part WHERE session_id = ${sessionID} AND message_id >= ${from} ORDER BY message_id, id`
          )
          return withParts(messages, parts)
        })

      const messages = Effect.fn("SessionStore.messages")(function*(sessionID: SessionID) {
        return yield* messagesFrom(sessionID, undefined)
      })

      const messagePage = Effect.fn("SessionStore.messagePage")(function*(
        sessionID: SessionID,
        options: { readonly limit: number; readonly before?: string }
      ) {
        const limit = Math.max(1, Math.min(options.limit, 1000))
        const rows = yield* read(sql<RevRow>`
          SELECT id, data, rev FROM message WHERE session_id = ${sessionID}
          ${options.before ? sql`AND id < ${options.before}` : sql``}
          ORDER BY id DESC LIMIT ${limit + 1}`)
        const page = rows.slice(0, limit)
        if (page.length === 0) return { items: [] }
        const parts = yield* read(
          sql<PartRow>`SELECT id, message_id, data, rev FROM part WHERE ${sql.in("message_id", page.map((row) => row.id))} ORDER BY message_id, id`
        )
        const items = withParts(page, parts)
        return rows.length > limit ? { items, next: page.at(-1)!.id } : { items }
      })

      const history = Effect.fn("SessionStore.history")(function*(sessionID: SessionID) {
        // The newest summary that finished without error marks a completed compaction; its
        // parent is the user message holding the compaction part (and maybe a kept tail).
        const summaries = yield* read(sql<{ parent: string }>`
          SELECT json_extract(data, '$.parentID') AS parent FROM message
          WHERE session_id = ${sessionID} AND role = 'assistant'
            AND json_extract(data, '$.summary') = 1
            AND json_extract(data, '$.finish') IS NOT NULL
            AND json_extract(data, '$.error') IS NULL
          ORDER BY id DESC`)
        for (const { parent } of summaries) {
          const compaction = yield* read(sql<{ tail: string | null }>`
            SELECT json_extract(data, '$.tail_start_id') AS tail FROM part
            WHERE message_id = ${parent} AND type = 'compaction' LIMIT 1`)
          if (compaction.length === 0) continue
          const start = compaction[0]!.tail ?? parent
          return yield* messagesFrom(sessionID, start < parent ? start : parent)
        }
        return yield* messagesFrom(sessionID, undefined)
      })

      const removeMessage = Effect.fn("SessionStore.removeMessage")(function*(sessionID: SessionID, messageID: MessageID) {
        for (const [partID, entry] of openParts) if (entry.part.messageID === messageID) openParts.delete(partID)
        yield* write(sql`DELETE FROM message WHERE id = ${messageID} AND session_id = ${sessionID}`)
        yield* bus.publish({ type: "message.removed", properties: { sessionID, messageID } })
      })

      // --- todos ---------------------------------------------------------------------------

      const todos = Effect.fn("SessionStore.todos")(function*(sessionID: SessionID) {
        return yield* read(
          sql<Todo>`SELECT content, status, priority FROM todo WHERE session_id = ${sessionID} ORDER BY position`
        )
      })

      const setTodos = Effect.fn("SessionStore.setTodos")(function*(sessionID: SessionID, list: ReadonlyArray<Todo>) {
        yield* write(
          sql.withTransaction(
            Effect.gen(function*() {
              yield* sql`DELETE FROM todo WHERE session_id = ${sessionID}`
              if (list.length > 0) {
                yield* sql`INSERT INTO todo ${sql.insert(list.map((todo, position) => ({ session_id: sessionID, position, ...todo })))}`
              }
            })
          )
        )
        yield* bus.publish({ type: "todo.updated", properties: { sessionID, todos: list } })
      })

      // --- fork, export, import ------------------------------------------------------------

      const fork = Effect.fn("SessionStore.fork")(function*(id: SessionID, options: { readonly messageID?: MessageID } = {}) {
        const source = yield* get(id)
        const all = yield* messages(id)
        const kept = options.messageID ? all.filter((message) => message.info.id < options.messageID!) : all
        yield* ensureProject
        const session = newSession({
          title: forkTitle(source.title),
          directory: source.directory,
          ...(source.agent ? { agent: source.agent } : {}),
          ...(source.model ? { model: source.model } : {}),
          ...(source.permission ? { permission: source.permission } : {})
        })
        const ids = new Map<string, MessageID>()
        for (const message of kept) ids.set(message.info.id, Identifier.ascending("message") as MessageID)
        const remap = (messageID: MessageID) => ids.get(messageID) ?? messageID
        yield* write(
          sql.withTransaction(
            Effect.gen(function*() {
              yield* insertSession(session)
              for (const message of kept) {
                const info: Message = message.info.role === "assistant"
                  ? { ...message.info, id: remap(message.info.id), sessionID: session.id, parentID: remap(message.info.parentID) }
                  : { ...message.info, id: remap(message.info.id), sessionID: session.id }
                yield* sql.unsafe(MESSAGE_INSERT, messageRow(info))
                for (const part of message.parts) {
                  const copy: Part = {
                    ...part,
                    id: Identifier.ascending("part") as PartID,
                    sessionID: session.id,
                    messageID: info.id,
                    ...(part.type === "compaction" && part.tail_start_id ? { tail_start_id: remap(part.tail_start_id) } : {})
                  }
                  yield* writePart(copy).pipe(Effect.asVoid)
                }
              }
            })
          )
        )
        const saved = (yield* findSession(session.id))!
        yield* bus.publish({ type: "session.created", properties: { info: saved } })
        return saved
      })

      const exportSession = Effect.fn("SessionStore.exportSession")(function*(id: SessionID): Effect.fn.Return<SessionExport, SessionNotFound> {
        const info = yield* get(id)
        const kids = yield* children(id)
        const exported: SessionExport = {
          info,
          messages: yield* messages(id),
          todos: yield* todos(id),
          children: yield* Effect.forEach(kids, (child) => exportSession(child.id))
        }
        return exported
      })

      const importSession = Effect.fn("SessionStore.importSession")(function*(data: unknown) {
        const decoded = decodeExport(data)
        if (decoded._tag === "Left") {
          // The paths that are wrong, not the whole schema: an export is large.
          const issues = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
          const shown = issues.slice(0, 5).map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "(root)"}: ${issue.message}`)
          const more = issues.length > shown.length ? `; and ${issues.length - shown.length} more` : ""
          return yield* new SessionImportError({ detail: `not a session export: ${shown.join("; ")}${more}` })
        }
        const tree = decoded.right
        const flat: Array<SessionExport> = []
        const walk = (node: SessionExport) => {
          flat.push(node)
          for (const child of node.children ?? []) walk(child)
        }
        walk(tree)
        const problem = inconsistency(flat)
        if (problem) return yield* new SessionImportError({ detail: problem })
        for (const node of flat) {
          if (yield* findSession(node.info.id)) {
            return yield* new SessionImportError({ detail: `session ${node.info.id} already exists` })
          }
        }
        // Message and part ids are unique across sessions: a copy of an export under another
        // session id would otherwise fail half-way with a constraint error.
        const taken = (table: "message" | "part", ids: ReadonlyArray<string>) =>
          Effect.forEach(chunks(ids, 500), (chunk) => read(sql<{ id: string }>`SELECT id FROM ${sql(table)} WHERE ${sql.in("id", chunk)} LIMIT 1`)).pipe(
            Effect.map((found) => found.flat()[0]?.id)
          )
        const messageIDs = flat.flatMap((node) => node.messages.map((message) => message.info.id))
        const partIDs = flat.flatMap((node) => node.messages.flatMap((message) => message.parts.map((part) => part.id)))
        const existingMessage = yield* taken("message", messageIDs)
        if (existingMessage) return yield* new SessionImportError({ detail: `message ${existingMessage} already exists in this database` })
        const existingPart = yield* taken("part", partIDs)
        if (existingPart) return yield* new SessionImportError({ detail: `part ${existingPart} already exists in this database` })
        yield* ensureProject
        const root = tree.info.parentID && !(yield* findSession(tree.info.parentID))
          ? (({ parentID: _, ...rest }) => rest)(tree.info)
          : tree.info
        yield* write(
          sql.withTransaction(
            Effect.forEach(flat, (node) =>
              Effect.gen(function*() {
                const info = new Session({ ...(node === tree ? root : node.info), projectID: instance.projectID as ProjectID })
                yield* insertSession(info)
                for (const message of node.messages) {
                  yield* sql.unsafe(MESSAGE_INSERT, messageRow(message.info))
                  for (const part of message.parts) yield* writePart(part)
                }
                if (node.todos && node.todos.length > 0) {
                  yield* sql`INSERT INTO todo ${sql.insert(node.todos.map((todo, position) => ({ session_id: info.id, position, ...todo })))}`
                }
              }), { discard: true })
          )
        )
        const saved = (yield* findSession(tree.info.id))!
        yield* bus.publish({ type: "session.created", properties: { info: saved } })
        return saved
      })

      return {
        create,
        get,
        update,
        list,
        children,
        remove,
        fork,
        addUsage,
        upsertMessage,
        getMessage,
        messages,
        messagePage,
        history,
        removeMessage,
        upsertPart,
        appendDelta,
        removePart,
        flush,
        todos,
        setTodos,
        exportSession,
        importSession
      }
    })
  )

  /** JSON for an export file (encoded with the domain schemas). */
  static readonly encodeExport = (data: SessionExport): unknown => encodeExport(data)
}

