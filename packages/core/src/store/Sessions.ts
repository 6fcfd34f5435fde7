import { Session, type SessionID, SessionNotFound } from "@agent/domain"
import { Effect } from "effect"
import * as Identifier from "../runtime/Identifier.js"
import { VERSION } from "../runtime/Version.js"
import { caseInsensitiveLike } from "./Dialect.js"
import type { StoreDeps } from "./SessionStoreState.js"
import type { CreateSessionInput, ListSessionsOptions, SessionPatch, Usage } from "./SessionStoreTypes.js"
import { json, rowToSession, type SessionRow } from "./StoreRows.js"

// Projects and sessions: creating, reading, listing, changing and deleting session rows.

const SLUG_WORDS = [
  "amber", "brisk", "calm", "dawn", "ember", "fern", "gale", "harbor", "iris", "jade", "kite", "lumen",
  "maple", "north", "opal", "pine", "quartz", "river", "slate", "tide", "umber", "vale", "willow", "zephyr"
]
const slug = () => {
  const pick = () => SLUG_WORDS[Math.floor(Math.random() * SLUG_WORDS.length)]!
  return `${pick()}-${pick()}-${Math.random().toString(36).slice(2, 6)}`
}

/** Writes this project's row (once per layer). */
export const ensureProject = ({ sql, write, instance, state }: StoreDeps) =>
  Effect.suspend(() => {
    if (state.projectSaved) return Effect.void
    const now = Date.now()
    return write(
      sql`INSERT INTO project (id, worktree, vcs, time_created, time_updated)
          VALUES (${instance.projectID}, ${instance.worktree}, ${instance.vcs ? 1 : 0}, ${now}, ${now})
          ON CONFLICT(id) DO UPDATE SET time_updated = excluded.time_updated`
    ).pipe(Effect.tap(() => (state.projectSaved = true)))
  })

export const findSession = ({ sql, read }: StoreDeps, id: string) =>
  read(sql<SessionRow>`SELECT * FROM session WHERE id = ${id}`).pipe(
    Effect.map((rows) => (rows[0] ? rowToSession(rows[0]) : undefined))
  )

export const get = Effect.fn("SessionStore.get")(function*(deps: StoreDeps, id: SessionID) {
  const session = yield* findSession(deps, id)
  if (!session) return yield* new SessionNotFound({ sessionID: id })
  return session
})

export const insertSession = ({ sql }: StoreDeps, session: Session) =>
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

export const newSession = ({ instance }: StoreDeps, input: CreateSessionInput, now = Date.now()) =>
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

export const create = Effect.fn("SessionStore.create")(function*(deps: StoreDeps, input: CreateSessionInput = {}) {
  yield* ensureProject(deps)
  const session = newSession(deps, input)
  yield* deps.write(insertSession(deps, session))
  const saved = (yield* findSession(deps, session.id))!
  yield* deps.bus.publish({ type: "session.created", properties: { info: saved } })
  return saved
})

export const update = Effect.fn("SessionStore.update")(function*(deps: StoreDeps, id: SessionID, patch: SessionPatch) {
  const { sql } = deps
  yield* get(deps, id)
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
  yield* deps.write(sql`UPDATE session SET ${sql.update(set)} WHERE id = ${id}`)
  const saved = yield* get(deps, id)
  yield* deps.bus.publish({ type: "session.updated", properties: { info: saved } })
  return saved
})

export const list = Effect.fn("SessionStore.list")(function*(deps: StoreDeps, options: ListSessionsOptions = {}) {
  const { sql } = deps
  const limit = Math.max(1, Math.min(options.limit ?? 50, 1000))
  const search = options.search?.trim()
  const pattern = search ? `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : undefined
  const rows = yield* deps.read(sql<SessionRow>`
    SELECT * FROM session
    WHERE project_id = ${deps.instance.projectID} AND parent_id IS NULL
    ${pattern ? sql`AND title ${caseInsensitiveLike(sql)} ${pattern} ESCAPE '\\'` : sql``}
    ${options.cursor ? sql`AND id > ${options.cursor}` : sql``}
    ORDER BY id LIMIT ${limit + 1}`)
  const items = rows.slice(0, limit).map(rowToSession)
  return rows.length > limit ? { items, next: items.at(-1)!.id } : { items }
})

export const children = Effect.fn("SessionStore.children")(function*(deps: StoreDeps, id: SessionID) {
  const rows = yield* deps.read(deps.sql<SessionRow>`SELECT * FROM session WHERE parent_id = ${id} ORDER BY id`)
  return rows.map(rowToSession)
})

const descendantsAndSelf = ({ sql, read }: StoreDeps, id: SessionID) =>
  read(sql<SessionRow>`
    WITH RECURSIVE tree(id) AS (
      SELECT CAST(${id} AS TEXT) UNION ALL SELECT s.id FROM session s JOIN tree t ON s.parent_id = t.id
    )
    SELECT session.* FROM session JOIN tree ON session.id = tree.id`).pipe(Effect.map((rows) => rows.map(rowToSession)))

export const remove = Effect.fn("SessionStore.remove")(function*(deps: StoreDeps, id: SessionID) {
  const { sql, write, state } = deps
  yield* get(deps, id)
  const doomed = yield* descendantsAndSelf(deps, id)
  const doomedIds = new Set<string>(doomed.map((session) => session.id))
  for (const [partID, entry] of state.openParts) if (doomedIds.has(entry.part.sessionID)) state.openParts.delete(partID)
  // Foreign keys cascade to children, messages, parts and todos.
  yield* write(sql`DELETE FROM session WHERE id = ${id}`)
  // Give the freed pages back to the file system, a bounded amount at a time (PostgreSQL's autovacuum does its own).
  yield* sql.onDialectOrElse({ pg: () => Effect.void, orElse: () => write(sql`PRAGMA incremental_vacuum(2000)`) })
  for (const session of doomed.reverse()) yield* deps.bus.publish({ type: "session.deleted", properties: { info: session } })
})

// One statement per step (on PostgreSQL often part of a grouped one, StoreWrites.ts): the session and
// all its ancestors in one UPDATE, rows returned for the events.
export const addUsage = Effect.fnUntraced(function*(deps: StoreDeps, id: SessionID, usage: Usage) {
  const rows = yield* deps.addUsage([
    id,
    usage.cost,
    usage.tokens.input,
    usage.tokens.output,
    usage.tokens.reasoning,
    usage.tokens.cache.read,
    usage.tokens.cache.write,
    Date.now()
  ])
  // Nearest first: a child is newer than its parent, and session ids sort newest first.
  const sessions = rows.map(rowToSession).sort((a, b) => (a.id < b.id ? -1 : 1))
  for (const session of sessions) yield* deps.bus.publish({ type: "session.updated", properties: { info: session } })
})
