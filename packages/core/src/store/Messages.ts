import { type Message, type MessageID, MessageNotFound, type MessageWithParts, type Part, type PartID, type SessionID, type Todo } from "@agent/domain"
import { Effect } from "effect"
import { jsonField, jsonTrue } from "./Dialect.js"
import type { StoreDeps } from "./SessionStoreState.js"
import type { PartDeltaInput } from "./SessionStoreTypes.js"
import {
  type DataRow,
  decodePart,
  decodeRow,
  isOpenStreamingPart,
  messageRow,
  newRev,
  type PartRow,
  type RevRow,
  toolStatus
} from "./StoreRows.js"

// Messages, parts and todos: the writes of every step (with streamed text buffered and written
// coalesced) and the loads of a session's messages.

/** How often buffered text deltas reach the database at most. */
const DELTA_FLUSH_MS = 50

const partRow = (owner: string, part: Part): ReadonlyArray<unknown> => {
  const status = toolStatus(part)
  const partOwner = status === "pending" || status === "running" ? owner : null
  return [part.id, part.messageID, part.sessionID, part.type, status, partOwner, JSON.stringify(part), newRev()]
}

/** A part's upsert as a bare statement, for transactions (fork, import). */
export const writePart = (deps: StoreDeps, part: Part) => deps.sql.unsafe(deps.statements.partUpsert, partRow(deps.owner, part))

export const flush = Effect.fn("SessionStore.flush")(function*(deps: StoreDeps) {
  const dirty = [...deps.state.openParts.values()].filter((entry) => entry.dirty)
  if (dirty.length === 0) return
  for (const entry of dirty) entry.dirty = false
  yield* deps.upsert("part", dirty.map((entry) => partRow(deps.owner, entry.part)))
})

const scheduleFlush = (deps: StoreDeps) =>
  Effect.suspend(() => {
    const { state } = deps
    if (state.flushScheduled) return Effect.void
    state.flushScheduled = true
    return Effect.sleep(DELTA_FLUSH_MS).pipe(
      Effect.zipRight(Effect.sync(() => (state.flushScheduled = false))),
      Effect.zipRight(flush(deps)),
      Effect.catchAllCause((cause) => Effect.logError("writing streamed text failed", cause)),
      Effect.forkIn(deps.scope),
      Effect.asVoid
    )
  })

// Several times per step: untraced (a span costs more than the write it would describe).
export const upsertPart = Effect.fnUntraced(function*(deps: StoreDeps, part: Part) {
  const { openParts } = deps.state
  if (isOpenStreamingPart(part)) openParts.set(part.id, { part, dirty: false })
  else openParts.delete(part.id)
  yield* deps.upsert("part", [partRow(deps.owner, part)])
  yield* deps.bus.publish({ type: "message.part.updated", properties: { part } })
})

export const appendDelta = Effect.fnUntraced(function*(deps: StoreDeps, input: PartDeltaInput) {
  const { openParts } = deps.state
  let entry = openParts.get(input.partID)
  if (!entry) {
    // Not opened by this process (or already finished): continue from what is stored.
    const rows = yield* deps.read(deps.sql<DataRow>`SELECT id, data FROM part WHERE id = ${input.partID}`)
    const stored = rows[0] ? decodeRow("part", rows[0].id, decodePart, rows[0].data) : undefined
    if (!stored || (stored.type !== "text" && stored.type !== "reasoning")) {
      return yield* Effect.dieMessage(`appendDelta: part ${input.partID} is not a stored text or reasoning part`)
    }
    entry = { part: stored, dirty: false }
    openParts.set(input.partID, entry)
  }
  entry.part = { ...entry.part, text: entry.part.text + input.delta }
  entry.dirty = true
  yield* deps.bus.publish({ type: "message.part.delta", properties: input })
  yield* scheduleFlush(deps)
})

export const removePart = Effect.fn("SessionStore.removePart")(function*(
  deps: StoreDeps,
  sessionID: SessionID,
  messageID: MessageID,
  partID: PartID
) {
  deps.state.openParts.delete(partID)
  yield* deps.write(deps.sql`DELETE FROM part WHERE id = ${partID}`)
  yield* deps.bus.publish({ type: "message.part.removed", properties: { sessionID, messageID, partID } })
})

export const upsertMessage = Effect.fnUntraced(function*(deps: StoreDeps, message: Message) {
  yield* deps.upsert("message", [messageRow(message)])
  yield* deps.bus.publish({ type: "message.updated", properties: { info: message } })
})

export const removeMessage = Effect.fn("SessionStore.removeMessage")(function*(deps: StoreDeps, sessionID: SessionID, messageID: MessageID) {
  const { openParts } = deps.state
  for (const [partID, entry] of openParts) if (entry.part.messageID === messageID) openParts.delete(partID)
  yield* deps.write(deps.sql`DELETE FROM message WHERE id = ${messageID} AND session_id = ${sessionID}`)
  yield* deps.bus.publish({ type: "message.removed", properties: { sessionID, messageID } })
})

// --- loading -----------------------------------------------------------------------------

/** Messages (in the given order) joined with their parts (in id order). */
const withParts = (deps: StoreDeps, messages: ReadonlyArray<RevRow>, parts: ReadonlyArray<PartRow>): Array<MessageWithParts> => {
  const { openParts } = deps.state
  const byMessage = new Map<string, Array<Part>>()
  for (const row of parts) {
    const decoded = deps.partCache.get(row)
    // Overlay text that is still buffered, so readers see what subscribers saw.
    const part = openParts.get(decoded.id)?.part ?? decoded
    let list = byMessage.get(row.message_id)
    if (!list) byMessage.set(row.message_id, (list = []))
    list.push(part)
  }
  return messages.map((row) => ({
    info: deps.messageCache.get(row),
    parts: byMessage.get(row.id) ?? []
  }))
}

export const getMessage = Effect.fn("SessionStore.getMessage")(function*(deps: StoreDeps, sessionID: SessionID, messageID: MessageID) {
  const { sql, read } = deps
  const rows = yield* read(sql<RevRow>`SELECT id, data, rev FROM message WHERE id = ${messageID} AND session_id = ${sessionID}`)
  if (rows.length === 0) return yield* new MessageNotFound({ sessionID, messageID })
  const parts = yield* read(sql<PartRow>`SELECT id, message_id, data, rev FROM part WHERE message_id = ${messageID} ORDER BY id`)
  return withParts(deps, rows, parts)[0]!
})

const messagesFrom = (deps: StoreDeps, sessionID: SessionID, fromID: string | undefined) =>
  Effect.gen(function*() {
    const { sql, read } = deps
    const from = fromID ?? ""
    const messages = yield* read(
      sql<RevRow>`SELECT id, data, rev FROM message WHERE session_id = ${sessionID} AND id >= ${from} ORDER BY id`
    )
    const parts = yield* read(
      sql<PartRow>`SELECT id, message_id, data, rev FROM part WHERE session_id = ${sessionID} AND message_id >= ${from} ORDER BY message_id, id`
    )
    return withParts(deps, messages, parts)
  })

export const messages = Effect.fn("SessionStore.messages")(function*(deps: StoreDeps, sessionID: SessionID) {
  return yield* messagesFrom(deps, sessionID, undefined)
})

export const messagePage = Effect.fn("SessionStore.messagePage")(function*(
  deps: StoreDeps,
  sessionID: SessionID,
  options: { readonly limit: number; readonly before?: string }
) {
  const { sql, read } = deps
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
  const items = withParts(deps, page, parts)
  return rows.length > limit ? { items, next: page.at(-1)!.id } : { items }
})

export const history = Effect.fn("SessionStore.history")(function*(deps: StoreDeps, sessionID: SessionID) {
  const { sql, read } = deps
  // The newest summary that finished without error marks a completed compaction; its
  // parent is the user message holding the compaction part (and maybe a kept tail).
  const field = (key: string) => jsonField(sql, "data", key)
  const summaries = yield* read(sql<{ parent: string }>`
    SELECT ${field("parentID")} AS parent FROM message
    WHERE session_id = ${sessionID} AND role = 'assistant'
      AND ${field("summary")} = ${jsonTrue(sql)}
      AND ${field("finish")} IS NOT NULL
      AND ${field("error")} IS NULL
    ORDER BY id DESC`)
  for (const { parent } of summaries) {
    const compaction = yield* read(sql<{ tail: string | null }>`
      SELECT ${field("tail_start_id")} AS tail FROM part
      WHERE message_id = ${parent} AND type = 'compaction' LIMIT 1`)
    if (compaction.length === 0) continue
    const start = compaction[0]!.tail ?? parent
    return yield* messagesFrom(deps, sessionID, start < parent ? start : parent)
  }
  return yield* messagesFrom(deps, sessionID, undefined)
})

// --- todos -------------------------------------------------------------------------------

export const todos = Effect.fn("SessionStore.todos")(function*(deps: StoreDeps, sessionID: SessionID) {
  return yield* deps.read(
    deps.sql<Todo>`SELECT content, status, priority FROM todo WHERE session_id = ${sessionID} ORDER BY position`
  )
})

export const setTodos = Effect.fn("SessionStore.setTodos")(function*(deps: StoreDeps, sessionID: SessionID, list: ReadonlyArray<Todo>) {
  const { sql } = deps
  yield* deps.write(
    sql.withTransaction(
      Effect.gen(function*() {
        yield* sql`DELETE FROM todo WHERE session_id = ${sessionID}`
        if (list.length > 0) {
          yield* sql`INSERT INTO todo ${sql.insert(list.map((todo, position) => ({ session_id: sessionID, position, ...todo })))}`
        }
      })
    )
  )
  yield* deps.bus.publish({ type: "todo.updated", properties: { sessionID, todos: list } })
})
