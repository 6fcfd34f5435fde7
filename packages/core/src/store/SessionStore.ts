import type { SessionExport } from "@agent/domain"
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Effect, Layer } from "effect"
import * as os from "node:os"
import * as Identifier from "../runtime/Identifier.js"
import { Bus } from "../runtime/Bus.js"
import { Instance } from "../runtime/Instance.js"
import { openedFile, withBusyRetry } from "./Database.js"
import { holdLease, takeOver } from "./Lease.js"
import {
  appendDelta,
  flush,
  getMessage,
  history,
  messagePage,
  messages,
  removeMessage,
  removePart,
  setTodos,
  todos,
  upsertMessage,
  upsertPart
} from "./Messages.js"
import { addUsage, children, create, get, list, remove, update } from "./Sessions.js"
import { SessionStoreState, type StoreDeps } from "./SessionStoreState.js"
import type { SessionStoreShape } from "./SessionStoreTypes.js"
import { DecodeCache, decodeMessage, decodePart, encodeExport, postgresStatements, sqliteStatements } from "./StoreRows.js"
import { direct, groupCommit } from "./StoreWrites.js"
import { exportSession, fork, importSession } from "./Transfer.js"

export * from "./SessionStoreTypes.js"

/**
 * Sessions, messages, parts and todos in SQLite or PostgreSQL (whichever SqlClient it is given), with every change published on the bus.
 * Text deltas are published at once and written coalesced; a process that dies mid-run
 * leaves tool parts that the next process to open the database marks as interrupted.
 *
 * This file holds the service and its layer; the work is in store/Sessions.ts (session rows),
 * Messages.ts (messages, parts, todos), Transfer.ts (fork, export, import), Lease.ts (leases and
 * crash recovery) and StoreRows.ts (rows and their decoding), which share one StoreDeps value
 * (SessionStoreState.ts) that this layer creates.
 */
export class SessionStore extends Context.Tag("@agent/core/SessionStore")<SessionStore, SessionStoreShape>() {
  static readonly layer: Layer.Layer<SessionStore, never, SqlClient.SqlClient | Bus | Instance> = Layer.scoped(
    SessionStore,
    Effect.gen(function*() {
      const retrying = withBusyRetry(yield* openedFile)
      const sql = yield* SqlClient.SqlClient
      const postgres = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
      const statements = postgres ? postgresStatements : sqliteStatements
      const writes = (postgres ? groupCommit : direct)(sql, statements, retrying)
      const deps: StoreDeps = {
        sql,
        bus: yield* Bus,
        instance: yield* Instance,
        write: writes.write,
        upsert: writes.upsert,
        addUsage: writes.addUsage,
        read: retrying,
        scope: yield* Effect.scope,
        owner: `${os.hostname()}:${process.pid}:${Identifier.ascending("part").slice(4)}`,
        partCache: new DecodeCache("part", decodePart, 32 * 1024 * 1024),
        messageCache: new DecodeCache("message", decodeMessage, 8 * 1024 * 1024),
        state: new SessionStoreState(),
        statements
      }
      yield* holdLease(deps)
      yield* Effect.addFinalizer(() => flush(deps).pipe(Effect.catchAllCause((cause) => Effect.logError("final flush failed", cause))))

      return {
        create: (input) => create(deps, input),
        get: (id) => get(deps, id),
        update: (id, patch) => update(deps, id, patch),
        list: (options) => list(deps, options),
        children: (id) => children(deps, id),
        remove: (id) => remove(deps, id),
        fork: (id, options) => fork(deps, id, options),
        addUsage: (id, usage) => addUsage(deps, id, usage),
        upsertMessage: (message) => upsertMessage(deps, message),
        getMessage: (sessionID, messageID) => getMessage(deps, sessionID, messageID),
        messages: (sessionID) => messages(deps, sessionID),
        messagePage: (sessionID, options) => messagePage(deps, sessionID, options),
        history: (sessionID) => history(deps, sessionID),
        removeMessage: (sessionID, messageID) => removeMessage(deps, sessionID, messageID),
        upsertPart: (part) => upsertPart(deps, part),
        appendDelta: (input) => appendDelta(deps, input),
        removePart: (sessionID, messageID, partID) => removePart(deps, sessionID, messageID, partID),
        flush: () => flush(deps),
        takeOver: (sessionID) =>
          takeOver(deps, sessionID, (part) => deps.bus.publish({ type: "message.part.updated", properties: { part } })),
        todos: (sessionID) => todos(deps, sessionID),
        setTodos: (sessionID, list) => setTodos(deps, sessionID, list),
        exportSession: (id) => exportSession(deps, id),
        importSession: (data) => importSession(deps, data)
      } satisfies SessionStoreShape
    })
  )

  /** JSON for an export file (encoded with the domain schemas). */
  static readonly encodeExport = (data: SessionExport): unknown => encodeExport(data)
}
