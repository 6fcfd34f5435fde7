import {
  type Message,
  type MessageID,
  type Part,
  type PartID,
  type ProjectID,
  Session,
  type SessionExport,
  type SessionID,
  SessionImportError,
  type SessionNotFound
} from "@agent/domain"
import { Effect, ParseResult } from "effect"
import * as Identifier from "../runtime/Identifier.js"
import { messages, todos, writePart } from "./Messages.js"
import { children, ensureProject, findSession, get, insertSession, newSession } from "./Sessions.js"
import type { StoreDeps } from "./SessionStoreState.js"
import { chunks, decodeExport, messageRow } from "./StoreRows.js"

// Copies of sessions: a fork under new ids, and export to and import from a file.

const forkTitle = (title: string) => {
  const match = /^(.*) \(fork #(\d+)\)$/.exec(title)
  return match ? `${match[1]} (fork #${Number(match[2]) + 1})` : `${title} (fork #1)`
}

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

export const fork = Effect.fn("SessionStore.fork")(function*(
  deps: StoreDeps,
  id: SessionID,
  options: { readonly messageID?: MessageID } = {}
) {
  const { sql } = deps
  const source = yield* get(deps, id)
  const all = yield* messages(deps, id)
  const kept = options.messageID ? all.filter((message) => message.info.id < options.messageID!) : all
  yield* ensureProject(deps)
  const session = newSession(deps, {
    title: forkTitle(source.title),
    directory: source.directory,
    ...(source.agent ? { agent: source.agent } : {}),
    ...(source.model ? { model: source.model } : {}),
    ...(source.permission ? { permission: source.permission } : {})
  })
  const ids = new Map<string, MessageID>()
  for (const message of kept) ids.set(message.info.id, Identifier.ascending("message") as MessageID)
  const remap = (messageID: MessageID) => ids.get(messageID) ?? messageID
  yield* deps.write(
    sql.withTransaction(
      Effect.gen(function*() {
        yield* insertSession(deps, session)
        for (const message of kept) {
          const info: Message = message.info.role === "assistant"
            ? { ...message.info, id: remap(message.info.id), sessionID: session.id, parentID: remap(message.info.parentID) }
            : { ...message.info, id: remap(message.info.id), sessionID: session.id }
          yield* sql.unsafe(deps.statements.messageInsert, messageRow(info))
          for (const part of message.parts) {
            const copy: Part = {
              ...part,
              id: Identifier.ascending("part") as PartID,
              sessionID: session.id,
              messageID: info.id,
              ...(part.type === "compaction" && part.tail_start_id ? { tail_start_id: remap(part.tail_start_id) } : {})
            }
            yield* writePart(deps, copy).pipe(Effect.asVoid)
          }
        }
      })
    )
  )
  const saved = (yield* findSession(deps, session.id))!
  yield* deps.bus.publish({ type: "session.created", properties: { info: saved } })
  return saved
})

export const exportSession = Effect.fn("SessionStore.exportSession")(function*(
  deps: StoreDeps,
  id: SessionID
): Effect.fn.Return<SessionExport, SessionNotFound> {
  const info = yield* get(deps, id)
  const kids = yield* children(deps, id)
  const exported: SessionExport = {
    info,
    messages: yield* messages(deps, id),
    todos: yield* todos(deps, id),
    children: yield* Effect.forEach(kids, (child) => exportSession(deps, child.id))
  }
  return exported
})

export const importSession = Effect.fn("SessionStore.importSession")(function*(deps: StoreDeps, data: unknown) {
  const { sql } = deps
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
    if (yield* findSession(deps, node.info.id)) {
      return yield* new SessionImportError({ detail: `session ${node.info.id} already exists` })
    }
  }
  // Message and part ids are unique across sessions: a copy of an export under another
  // session id would otherwise fail half-way with a constraint error.
  const taken = (table: "message" | "part", ids: ReadonlyArray<string>) =>
    Effect.forEach(chunks(ids, 500), (chunk) => deps.read(sql<{ id: string }>`SELECT id FROM ${sql(table)} WHERE ${sql.in("id", chunk)} LIMIT 1`)).pipe(
      Effect.map((found) => found.flat()[0]?.id)
    )
  const messageIDs = flat.flatMap((node) => node.messages.map((message) => message.info.id))
  const partIDs = flat.flatMap((node) => node.messages.flatMap((message) => message.parts.map((part) => part.id)))
  const existingMessage = yield* taken("message", messageIDs)
  if (existingMessage) return yield* new SessionImportError({ detail: `message ${existingMessage} already exists in this database` })
  const existingPart = yield* taken("part", partIDs)
  if (existingPart) return yield* new SessionImportError({ detail: `part ${existingPart} already exists in this database` })
  yield* ensureProject(deps)
  const root = tree.info.parentID && !(yield* findSession(deps, tree.info.parentID))
    ? (({ parentID: _, ...rest }) => rest)(tree.info)
    : tree.info
  yield* deps.write(
    sql.withTransaction(
      Effect.forEach(flat, (node) =>
        Effect.gen(function*() {
          const info = new Session({ ...(node === tree ? root : node.info), projectID: deps.instance.projectID as ProjectID })
          yield* insertSession(deps, info)
          for (const message of node.messages) {
            yield* sql.unsafe(deps.statements.messageInsert, messageRow(message.info))
            for (const part of message.parts) yield* writePart(deps, part)
          }
          if (node.todos && node.todos.length > 0) {
            yield* sql`INSERT INTO todo ${sql.insert(node.todos.map((todo, position) => ({ session_id: info.id, position, ...todo })))}`
          }
        }), { discard: true })
    )
  )
  const saved = (yield* findSession(deps, tree.info.id))!
  yield* deps.bus.publish({ type: "session.created", properties: { info: saved } })
  return saved
})
