import type { FileDiff, MessageWithParts, Session, SessionID } from "@agent/domain"
import { Effect, Option } from "effect"
import * as LineDiff from "../tool/LineDiff.js"
import {
  type ChangesDeps,
  decodeStored,
  isBinary,
  lookupAll,
  relative,
  type StoredChange,
  textOf,
  unifiedDiff
} from "./ChangesDeps.js"
import { endSnapshot, isHidden, visible } from "./RevertPoint.js"
import type { FileChange } from "./SessionChangesTypes.js"

// A session's net change to the project's files (children included): computed from its patch
// parts, kept in `session_diff` with content ids, and read back with texts or unified diffs.

/** Lines added and removed (near-linear however large the change: a bounded Myers search, then patience). */
const countLines = LineDiff.count

export const descendants = (deps: ChangesDeps, sessionID: SessionID): Effect.Effect<Array<Session>> =>
  Effect.gen(function*() {
    const out: Array<Session> = []
    for (const child of yield* deps.store.children(sessionID)) {
      out.push(child, ...(yield* descendants(deps, child.id)))
    }
    return out
  })

/** The visible messages of a session and of its subagent sessions, except those a revert hid the run of. */
const shownTree = (deps: ChangesDeps, session: Session): Effect.Effect<Array<ReadonlyArray<MessageWithParts>>> =>
  Effect.gen(function*() {
    const messages = yield* deps.store.messages(session.id)
    const hiddenRuns = new Set<string>()
    for (const message of messages) {
      for (const part of message.parts) {
        if (part.type !== "tool" || part.tool !== "task" || part.state.status === "pending") continue
        const child = part.state.metadata?.sessionId
        if (typeof child === "string" && isHidden(session.revert, message.info.id, part.id)) hiddenRuns.add(child)
      }
    }
    const out: Array<ReadonlyArray<MessageWithParts>> = [visible(session.revert, messages)]
    for (const child of yield* deps.store.children(session.id)) {
      if (!hiddenRuns.has(child.id)) out.push(...(yield* shownTree(deps, child)))
    }
    return out
  })

const computeChanges = (deps: ChangesDeps, session: Session) =>
  Effect.gen(function*() {
    const patches: Array<{ readonly id: string; readonly from: string; readonly to: string; readonly files: ReadonlyArray<string> }> = []
    for (const shown of yield* shownTree(deps, session)) {
      for (const message of shown) {
        const end = endSnapshot(message.parts)
        if (!end) continue
        for (const part of message.parts) {
          if (part.type === "patch") patches.push({ id: part.id, from: part.hash, to: end, files: part.files.map((file) => relative(deps, file)) })
        }
      }
    }
    patches.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    const first = new Map<string, string>()
    const last = new Map<string, string>()
    for (const patch of patches) {
      for (const file of patch.files) {
        if (!first.has(file)) first.set(file, patch.from)
        last.set(file, patch.to)
      }
    }
    const requests = new Map<string, Set<string>>()
    const want = (id: string, file: string) => {
      let set = requests.get(id)
      if (!set) requests.set(id, (set = new Set()))
      set.add(file)
    }
    for (const [file, id] of first) want(id, file)
    for (const [file, id] of last) want(id, file)
    const lookup = yield* lookupAll(deps, requests)
    const changed = [...first.keys()].sort().flatMap((file) => {
      const before = lookup(first.get(file)!, file)
      const after = lookup(last.get(file)!, file)
      if (before?.id === after?.id && before?.mode === after?.mode) return []
      return [{ file, before, after }]
    })
    const contents = yield* deps.snapshot.read(
      changed.flatMap((change) => [change.before?.id, change.after?.id]).filter((id): id is string => id !== undefined)
    )
    return changed.map(({ file, before, after }): StoredChange => {
      const a = before && contents.get(before.id)
      const b = after && contents.get(after.id)
      const binary = (a !== undefined && isBinary(a)) || (b !== undefined && isBinary(b))
      const counts = binary ? { additions: 0, deletions: 0 } : countLines(textOf(a), textOf(b))
      return {
        file,
        status: before === undefined ? "added" : after === undefined ? "deleted" : "modified",
        ...counts,
        ...(binary ? { binary } : {}),
        ...(before ? { before: before.id } : {}),
        ...(after ? { after: after.id } : {})
      }
    })
  })

const materialize = (deps: ChangesDeps, changes: ReadonlyArray<StoredChange>) =>
  Effect.gen(function*() {
    const ids = changes.flatMap((change) => [change.before, change.after]).filter((id): id is string => id !== undefined)
    // Content collected with old snapshots is gone; the counts are still right.
    const contents = yield* deps.snapshot.read(ids).pipe(Effect.orElseSucceed(() => new Map<string, Buffer>()))
    return changes.map((change): FileDiff => ({
      file: change.file,
      before: change.binary ? "" : textOf(change.before ? contents.get(change.before) : undefined),
      after: change.binary ? "" : textOf(change.after ? contents.get(change.after) : undefined),
      additions: change.additions,
      deletions: change.deletions,
      status: change.status,
      ...(change.binary ? { binary: true } : {})
    }))
  })

export const summarize = Effect.fn("SessionChanges.summarize")(function*(deps: ChangesDeps, sessionID: SessionID) {
  const { store, sql } = deps
  const session = yield* store.get(sessionID)
  const changes = yield* computeChanges(deps, session).pipe(
    Effect.catchAll((error) => Effect.as(Effect.logWarning(`session diff of ${sessionID} unavailable: ${error.message}`), undefined))
  )
  if (!changes) return []
  yield* deps.write(sql`INSERT INTO session_diff (session_id, data, time_updated)
    VALUES (${sessionID}, ${JSON.stringify(changes)}, ${Date.now()})
    ON CONFLICT(session_id) DO UPDATE SET data = excluded.data, time_updated = excluded.time_updated`)
  const summary = {
    additions: changes.reduce((sum, change) => sum + change.additions, 0),
    deletions: changes.reduce((sum, change) => sum + change.deletions, 0),
    files: changes.length
  }
  const previous = session.summary
  if (
    previous?.additions !== summary.additions || previous.deletions !== summary.deletions || previous.files !== summary.files
  ) {
    yield* store.update(sessionID, { summary })
  }
  const diffs = yield* materialize(deps, changes)
  yield* deps.bus.publish({ type: "session.diff", properties: { sessionID, diff: diffs } })
  return diffs
})

const storedRow = ({ sql, write }: ChangesDeps, sessionID: SessionID) =>
  Effect.map(
    write(sql<{ data: string }>`SELECT data FROM session_diff WHERE session_id = ${sessionID}`),
    (rows) => (rows.length === 0 ? undefined : decodeStored(rows[0]!.data))
  )

export const diff = Effect.fn("SessionChanges.diff")(function*(deps: ChangesDeps, sessionID: SessionID) {
  yield* deps.store.get(sessionID)
  const stored = yield* storedRow(deps, sessionID)
  if (!stored) return yield* summarize(deps, sessionID)
  return yield* materialize(deps, stored)
})

export const changes = Effect.fn("SessionChanges.changes")(function*(
  deps: ChangesDeps,
  sessionID: SessionID,
  options: { readonly patches?: boolean } = {}
) {
  const { snapshot } = deps
  const session = yield* deps.store.get(sessionID)
  // Not kept yet (no run of it changed files): computed, not stored, so reading changes nothing.
  const stored = (yield* storedRow(deps, sessionID)) ?? (yield* computeChanges(deps, session).pipe(
    Effect.catchAll((error) => Effect.as(Effect.logWarning(`session diff of ${sessionID} unavailable: ${error.message}`), []))
  ))
  const counts = stored.map(({ additions, binary, deletions, file, status }): FileChange => ({
    file,
    status,
    additions,
    deletions,
    ...(binary ? { binary } : {})
  }))
  if (!options.patches) return counts
  const idsOf = (change: StoredChange) => [change.before, change.after].filter((id): id is string => id !== undefined)
  // One read for all; if the store lost some content, file by file, so the rest still shows.
  const all = yield* Effect.option(snapshot.read(stored.flatMap(idsOf)))
  const contents = new Map(Option.getOrElse(all, () => new Map<string, Buffer>()))
  if (Option.isNone(all)) {
    for (const change of stored) {
      const some = yield* Effect.option(snapshot.read(idsOf(change)))
      if (Option.isSome(some)) for (const [id, content] of some.value) contents.set(id, content)
    }
  }
  return stored.map((change, index): FileChange => {
    const missing = idsOf(change).some((id) => !contents.has(id))
    if (missing && !change.binary) return counts[index]!
    const text = (id: string | undefined) => textOf(id === undefined ? undefined : contents.get(id))
    return {
      ...counts[index]!,
      patch: unifiedDiff({ ...counts[index]!, before: change.binary ? "" : text(change.before), after: change.binary ? "" : text(change.after) })
    }
  })
})
