import { type Message, Message as MessageSchema, Part, Session, SessionExport as SessionExportSchema } from "@agent/domain"
import { Schema } from "effect"
import { makeInPlaceDecoder } from "./InPlaceDecoder.js"

// The session store's rows: their shapes, the fixed statements of the hot writes, and decoding
// rows back into domain values (with a cache of decoded rows by revision).

export interface SessionRow {
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

export interface DataRow {
  readonly id: string
  readonly data: string
}

/** A message or part row as loads read it: `rev` changes with every write of `data`. */
export interface RevRow extends DataRow {
  readonly rev: number
}

export interface PartRow extends RevRow {
  readonly message_id: string
}

export const decodeSession = Schema.decodeUnknownSync(Session)
// Stored rows are checked where they lie rather than copied: a long session has thousands.
const checkMessage = makeInPlaceDecoder(MessageSchema)
const checkPart = makeInPlaceDecoder(Part)
export const decodeMessage = (text: string) => checkMessage(JSON.parse(text))
export const decodePart = (text: string) => checkPart(JSON.parse(text))
export const decodeExport = Schema.decodeUnknownEither(SessionExportSchema)
export const encodeExport = Schema.encodeSync(SessionExportSchema)

// The writes of every step, as fixed text: a `sql` template is compiled again on each call.
// The columns are in the order of `partRow` (Messages.ts) and `messageRow` (below).
export const PART_COLUMNS = "id, message_id, session_id, type, status, owner, data, rev"
export const PART_CONFLICT = "ON CONFLICT(id) DO UPDATE SET data = excluded.data, rev = excluded.rev, status = excluded.status, owner = excluded.owner"
export const MESSAGE_COLUMNS = "id, session_id, role, time_created, data, rev"
export const MESSAGE_CONFLICT = "ON CONFLICT(id) DO UPDATE SET data = excluded.data, rev = excluded.rev"
export const PART_UPSERT = `INSERT INTO part (${PART_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
  ${PART_CONFLICT}`
// Fork and import insert without the upsert clause: a message id already taken there is an error.
export const MESSAGE_INSERT = `INSERT INTO message (${MESSAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)`
export const MESSAGE_UPSERT = `${MESSAGE_INSERT} ${MESSAGE_CONFLICT}`

export const ADD_USAGE = `WITH RECURSIVE chain(id) AS (
    SELECT CAST(? AS TEXT) UNION ALL SELECT s.parent_id FROM session s JOIN chain c ON s.id = c.id WHERE s.parent_id IS NOT NULL
  )
  UPDATE session SET
    cost = cost + ?, tokens_input = tokens_input + ?, tokens_output = tokens_output + ?,
    tokens_reasoning = tokens_reasoning + ?, tokens_cache_read = tokens_cache_read + ?,
    tokens_cache_write = tokens_cache_write + ?, time_updated = ?
  WHERE id IN (SELECT id FROM chain)
  RETURNING *`

/** The fixed statements in one dialect's placeholders. */
export interface Statements {
  readonly partUpsert: string
  readonly messageInsert: string
  readonly messageUpsert: string
  readonly addUsage: string
}

/** SQLite's `?` placeholders as PostgreSQL's `$1, $2, ...` (the fixed statements hold no `?` in strings). */
const numbered = (text: string) => {
  let index = 0
  return text.replace(/\?/g, () => `$${++index}`)
}

export const sqliteStatements: Statements = {
  partUpsert: PART_UPSERT,
  messageInsert: MESSAGE_INSERT,
  messageUpsert: MESSAGE_UPSERT,
  addUsage: ADD_USAGE
}

export const postgresStatements: Statements = {
  partUpsert: numbered(PART_UPSERT),
  messageInsert: numbered(MESSAGE_INSERT),
  messageUpsert: numbered(MESSAGE_UPSERT),
  addUsage: numbered(ADD_USAGE)
}

/** A new revision for a row whose data is written (see migration 0003). */
export const newRev = () => Math.floor(Math.random() * 2 ** 53)

export const messageRow = (message: Message): ReadonlyArray<unknown> =>
  [message.id, message.sessionID, message.role, message.time.created, JSON.stringify(message), newRev()]

/**
 * Decoded rows by id, reused while the row's revision is unchanged: the loop reloads a
 * session's history every step, and decoding is most of the cost of a load. The row's text is
 * not kept: its length stands in for the decoded value's size.
 */
export class DecodeCache<A> {
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
export const decodeRow = <I, A>(table: string, id: string, decode: (input: I) => A, input: I): A => {
  try {
    return decode(input)
  } catch (error) {
    throw new Error(`corrupt ${table} row ${id}: ${error instanceof Error ? error.message : String(error)}`)
  }
}

export const json = (value: unknown) => (value === undefined || value === null ? null : JSON.stringify(value))
const parseJsonColumn = (value: string | null): unknown => (value === null ? undefined : JSON.parse(value))

export const rowToSession = (row: SessionRow): Session =>
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

export const chunks = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, index) => items.slice(index * size, (index + 1) * size))

/**
 * A text or reasoning part the model is still streaming: started (`time.start`) and not ended. A
 * text part without `time` (a prompt's text, a synthetic note) is complete as written; it used to
 * count as open and so stayed in `openParts`, with its text, for the life of the process.
 */
export const isOpenStreamingPart = (part: Part): part is Extract<Part, { type: "text" | "reasoning" }> =>
  (part.type === "text" || part.type === "reasoning") && part.time !== undefined && part.time.end === undefined

export const toolStatus = (part: Part): string | null => (part.type === "tool" ? part.state.status : null)
