import {
  type FileDiff,
  type MessageID,
  type MessageWithParts,
  type Part,
  type PartID,
  RevertError,
  type Session,
  type SessionID,
  type SessionNotFound,
  type SessionRevert
} from "@agent/domain"
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Effect, Layer, Option, Schema, Stream } from "effect"
import * as path from "node:path"
import { Bus } from "../runtime/Bus.js"
import { Instance } from "../runtime/Instance.js"
import { filename as databaseFile, withBusyRetry } from "../store/Database.js"
import { SessionStore } from "../store/SessionStore.js"
import { Snapshot, type SnapshotError } from "./Snapshot.js"
import type * as Tree from "./Tree.js"
import * as LineDiff from "../tool/LineDiff.js"
import { compare as compareTexts } from "../tool/FileDiff.js"

/**
 * What sessions did to the project's files: the net diff of a session (children included), and
 * revert / unrevert.
 *
 * Revert is exact: it puts back the files named by the patch parts from the revert point on, as
 * they were before the first of those steps, and nothing else. A file that changed after the
 * session last touched it (by the user, another session) is reported as a conflict and left alone.
 * Later messages are hidden (`session.revert`) until the next prompt removes them; unrevert puts
 * the reverted files back as they were, with the same conflict check.
 */

export interface RevertInput {
  readonly sessionID: SessionID
  /** The first message to undo: it and every later message are hidden. */
  readonly messageID: MessageID
  /** Undo from this part of the message on (the parts before it stay). */
  readonly partID?: PartID
}

export interface RevertResult {
  readonly session: Session
  /** Files put back (absolute paths). */
  readonly restored: ReadonlyArray<string>
  /** Files left alone because they changed after the session last touched them (absolute). */
  readonly conflicts: ReadonlyArray<string>
}

/** One file of a session's net change, without its texts. */
export interface FileChange {
  /** Relative to the project root, `/`-separated. */
  readonly file: string
  readonly status: "added" | "deleted" | "modified"
  readonly additions: number
  readonly deletions: number
  readonly binary?: boolean
  /**
   * With `patches`: the unified diff (for a binary file, one line saying so); absent when the
   * snapshot store no longer holds the content (collected with old snapshots).
   */
  readonly patch?: string
}

export interface SessionChangesShape {
  /** Undoes the files and hides the messages from the given message (or part) on. */
  readonly revert: (input: RevertInput) => Effect.Effect<RevertResult, RevertError | SessionNotFound>
  /** Puts back what the revert undid and shows the hidden messages again. */
  readonly unrevert: (sessionID: SessionID) => Effect.Effect<RevertResult, RevertError | SessionNotFound>
  /** Removes the messages a revert hid and ends it (a new prompt does this first). */
  readonly cleanup: (sessionID: SessionID) => Effect.Effect<void, SessionNotFound>
  /** Recomputes the session's net changes (children included), keeps them and publishes `session.diff`. */
  readonly summarize: (sessionID: SessionID) => Effect.Effect<ReadonlyArray<FileDiff>, SessionNotFound>
  /** The kept per-file diffs of the session, with their texts. */
  readonly diff: (sessionID: SessionID) => Effect.Effect<ReadonlyArray<FileDiff>, SessionNotFound>
  /** The kept per-file changes with their line counts; with `patches`, their unified diffs too. */
  readonly changes: (
    sessionID: SessionID,
    options?: { readonly patches?: boolean }
  ) => Effect.Effect<ReadonlyArray<FileChange>, SessionNotFound>
  /** The messages to show: those before the revert point while a revert is in effect. */
  readonly visibleMessages: (sessionID: SessionID) => Effect.Effect<ReadonlyArray<MessageWithParts>, SessionNotFound>
}

/** Whether a message (or one of its parts) is hidden by a revert. */
export const isHidden = (revert: SessionRevert | undefined, messageID: string, partID?: string): boolean => {
  if (!revert) return false
  if (messageID > revert.messageID) return true
  if (messageID < revert.messageID) return false
  if (revert.partID === undefined) return true
  return partID !== undefined && partID >= revert.partID
}

/** The messages and parts before the revert point. */
export const visible = (
  revert: SessionRevert | undefined,
  messages: ReadonlyArray<MessageWithParts>
): Array<MessageWithParts> =>
  messages.flatMap((message) => {
    if (!revert) return [message]
    if (message.info.id === revert.messageID && revert.partID !== undefined) {
      return [{ info: message.info, parts: message.parts.filter((part) => !isHidden(revert, message.info.id, part.id)) }]
    }
    return isHidden(revert, message.info.id) ? [] : [message]
  })

/** One file of the kept diff: content ids into the snapshot store. */
const StoredChange = Schema.Struct({
  file: Schema.String,
  status: Schema.Literal("added", "deleted", "modified"),
  additions: Schema.Number,
  deletions: Schema.Number,
  binary: Schema.optional(Schema.Boolean),
  before: Schema.optional(Schema.String),
  after: Schema.optional(Schema.String)
})
type StoredChange = typeof StoredChange.Type
const decodeStored = Schema.decodeUnknownSync(Schema.parseJson(Schema.Array(StoredChange)))

/** The unified diff of one file's change, for display (bounded in time and size like the edit tools' diffs). */
export const unifiedDiff = (diff: FileDiff): string =>
  diff.binary ? `Binary file ${diff.file} changed\n` : compareTexts(`a/${diff.file}`, diff.before, diff.after, `b/${diff.file}`).diff

const isBinary = (content: Buffer) => content.subarray(0, 8000).includes(0)

/** Lines added and removed (near-linear however large the change: a bounded Myers search, then patience). */
const countLines = LineDiff.count

/** Snapshot ids written by steps: the one each message ended with. */
const endSnapshot = (parts: ReadonlyArray<Part>): string | undefined => {
  let last: string | undefined
  for (const part of parts) {
    if (part.type === "step-finish" && part.snapshot) last = part.snapshot
    if (part.type === "snapshot") last = part.snapshot
  }
  return last
}

export class SessionChanges extends Context.Tag("@agent/core/SessionChanges")<SessionChanges, SessionChangesShape>() {
  static readonly layer: Layer.Layer<
    SessionChanges,
    never,
    SessionStore | Snapshot | Bus | SqlClient.SqlClient | Instance
  > = Layer.scoped(SessionChanges, make())
}

function make() {
  return Effect.gen(function*() {
    const store = yield* SessionStore
    const snapshot = yield* Snapshot
    const bus = yield* Bus
    const sql = yield* SqlClient.SqlClient
    const instance = yield* Instance
    const write = withBusyRetry(instance.env.AGENT_DB === ":memory:" ? ":memory:" : databaseFile(instance))
    const root = snapshot.root
    const absolute = (file: string) => path.join(root, file)
    const relative = (file: string) => path.relative(root, file).split(path.sep).join("/")

    // Runs in progress, so a revert never races the loop writing messages.
    const busy = new Set<string>()
    const statuses = yield* bus.subscribe({ types: ["session.status"] })
    yield* statuses.pipe(
      Stream.runForEach((event) =>
        Effect.sync(() => {
          if (event.properties.status.type === "idle") busy.delete(event.properties.sessionID)
          else busy.add(event.properties.sessionID)
        })
      ),
      Effect.catchAllCause((cause) => Effect.logError("session status watcher stopped", cause)),
      Effect.forkScoped
    )

    const fail = (sessionID: SessionID, reason: RevertError["reason"], detail: string) =>
      new RevertError({ sessionID, reason, detail })

    const storeFailure = (sessionID: SessionID) => (error: SnapshotError) =>
      fail(
        sessionID,
        error._tag === "SnapshotMissing" ? "snapshot_missing" : "snapshots_off",
        `Cannot change the files of session ${sessionID}: ${error.message}`
      )

    /** Looks up files in several snapshots, one read per snapshot. */
    const lookupAll = (requests: ReadonlyMap<string, Set<string>>) =>
      Effect.gen(function*() {
        const found = new Map<string, ReadonlyMap<string, Tree.FileEntry | undefined>>()
        for (const [id, files] of requests) found.set(id, yield* snapshot.entries(id, [...files]))
        return (id: string, file: string) => found.get(id)?.get(file)
      })

    const textOf = (content: Buffer | undefined) => (content === undefined || isBinary(content) ? "" : content.toString("utf8"))

    /** The unified diff text of a restore, kept on the revert for display. */
    const restoreDiff = (before: string, after: string, files: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        if (files.length === 0) return ""
        const [a, b] = [yield* snapshot.entries(before, files), yield* snapshot.entries(after, files)]
        const ids = files.flatMap((file) => [a.get(file)?.id, b.get(file)?.id]).filter((id): id is string => id !== undefined)
        const contents = yield* snapshot.read(ids)
        return files.map((file) => {
          const x = a.get(file)
          const y = b.get(file)
          const binary = [x, y].some((entry) => entry && isBinary(contents.get(entry.id)!))
          return unifiedDiff({
            file,
            before: textOf(x && contents.get(x.id)),
            after: textOf(y && contents.get(y.id)),
            additions: 0,
            deletions: 0,
            ...(binary ? { binary } : {})
          })
        }).join("")
      })

    // --- summary -------------------------------------------------------------------------------

    const descendants = (sessionID: SessionID): Effect.Effect<Array<Session>> =>
      Effect.gen(function*() {
        const out: Array<Session> = []
        for (const child of yield* store.children(sessionID)) {
          out.push(child, ...(yield* descendants(child.id)))
        }
        return out
      })

    /** The visible messages of a session and of its subagent sessions, except those a revert hid the run of. */
    const shownTree = (session: Session): Effect.Effect<Array<ReadonlyArray<MessageWithParts>>> =>
      Effect.gen(function*() {
        const messages = yield* store.messages(session.id)
        const hiddenRuns = new Set<string>()
        for (const message of messages) {
          for (const part of message.parts) {
            if (part.type !== "tool" || part.tool !== "task" || part.state.status === "pending") continue
            const child = part.state.metadata?.sessionId
            if (typeof child === "string" && isHidden(session.revert, message.info.id, part.id)) hiddenRuns.add(child)
          }
        }
        const out: Array<ReadonlyArray<MessageWithParts>> = [visible(session.revert, messages)]
        for (const child of yield* store.children(session.id)) {
          if (!hiddenRuns.has(child.id)) out.push(...(yield* shownTree(child)))
        }
        return out
      })

    const computeChanges = (session: Session) =>
      Effect.gen(function*() {
        const patches: Array<{ readonly id: string; readonly from: string; readonly to: string; readonly files: ReadonlyArray<string> }> = []
        for (const shown of yield* shownTree(session)) {
          for (const message of shown) {
            const end = endSnapshot(message.parts)
            if (!end) continue
            for (const part of message.parts) {
              if (part.type === "patch") patches.push({ id: part.id, from: part.hash, to: end, files: part.files.map(relative) })
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
        const lookup = yield* lookupAll(requests)
        const changed = [...first.keys()].sort().flatMap((file) => {
          const before = lookup(first.get(file)!, file)
          const after = lookup(last.get(file)!, file)
          if (before?.id === after?.id && before?.mode === after?.mode) return []
          return [{ file, before, after }]
        })
        const contents = yield* snapshot.read(
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

    const materialize = (changes: ReadonlyArray<StoredChange>) =>
      Effect.gen(function*() {
        const ids = changes.flatMap((change) => [change.before, change.after]).filter((id): id is string => id !== undefined)
        // Content collected with old snapshots is gone; the counts are still right.
        const contents = yield* snapshot.read(ids).pipe(Effect.orElseSucceed(() => new Map<string, Buffer>()))
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

    const summarize = Effect.fn("SessionChanges.summarize")(function*(sessionID: SessionID) {
      const session = yield* store.get(sessionID)
      const changes = yield* computeChanges(session).pipe(
        Effect.catchAll((error) => Effect.as(Effect.logWarning(`session diff of ${sessionID} unavailable: ${error.message}`), undefined))
      )
      if (!changes) return []
      yield* write(sql`INSERT INTO session_diff (session_id, data, time_updated)
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
      const diffs = yield* materialize(changes)
      yield* bus.publish({ type: "session.diff", properties: { sessionID, diff: diffs } })
      return diffs
    })

    const storedRow = (sessionID: SessionID) =>
      Effect.map(
        write(sql<{ data: string }>`SELECT data FROM session_diff WHERE session_id = ${sessionID}`),
        (rows) => (rows.length === 0 ? undefined : decodeStored(rows[0]!.data))
      )

    const diff = Effect.fn("SessionChanges.diff")(function*(sessionID: SessionID) {
      yield* store.get(sessionID)
      const stored = yield* storedRow(sessionID)
      if (!stored) return yield* summarize(sessionID)
      return yield* materialize(stored)
    })

    const changes = Effect.fn("SessionChanges.changes")(function*(sessionID: SessionID, options: { readonly patches?: boolean } = {}) {
      const session = yield* store.get(sessionID)
      // Not kept yet (no run of it changed files): computed, not stored, so reading changes nothing.
      const stored = (yield* storedRow(sessionID)) ?? (yield* computeChanges(session).pipe(
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

    // --- revert ----------------------------------------------------------------------------

    const ensureIdle = (sessionID: SessionID) =>
      busy.has(sessionID)
        ? Effect.fail(fail(sessionID, "busy", `Session ${sessionID} is running; abort it or wait before reverting.`))
        : Effect.void

    /** Puts the reverted files back (conflicts are reported, not overwritten) and clears the revert. */
    const undoRevert = (session: Session) =>
      Effect.gen(function*() {
        const revert = session.revert
        const files = (revert?.files ?? []).map(relative)
        let result: { readonly restored: ReadonlyArray<string>; readonly conflicts: ReadonlyArray<string> } = { restored: [], conflicts: [] }
        if (revert?.snapshot && revert.applied && files.length > 0) {
          const { applied, snapshot: before } = revert
          result = yield* Effect.gen(function*() {
            const target = yield* snapshot.entries(before, files)
            const expected = yield* snapshot.entries(applied, files)
            return yield* snapshot.restore(files.map((file) => ({ file, target: target.get(file), expected: expected.get(file) })))
          }).pipe(Effect.mapError(storeFailure(session.id)))
        }
        yield* store.update(session.id, { revert: null })
        return { restored: result.restored.map(absolute), conflicts: result.conflicts.map(absolute) }
      })

    /** Patches and snapshots of the sessions a task part ran, made after that part began. */
    const childRecords = (sessionID: SessionID, after: string) =>
      Effect.gen(function*() {
        const out: Array<Part> = []
        const sessions = [yield* store.get(sessionID), ...(yield* descendants(sessionID))]
        for (const each of sessions) {
          for (const message of yield* store.messages(each.id)) {
            for (const part of message.parts) {
              if (part.id > after && (part.type === "patch" || part.type === "step-finish" || part.type === "snapshot")) out.push(part)
            }
          }
        }
        return out
      }).pipe(Effect.orElseSucceed(() => [] as Array<Part>))

    const revert = Effect.fn("SessionChanges.revert")(function*(input: RevertInput) {
      const { sessionID } = input
      yield* ensureIdle(sessionID)
      let session = yield* store.get(sessionID)
      // A revert on top of a revert: first put everything back, then revert from the new point.
      if (session.revert) {
        yield* undoRevert(session)
        session = yield* store.get(sessionID)
      }
      const messages = yield* store.messages(sessionID)
      const target = messages.find((message) => message.info.id === input.messageID)
      if (!target) {
        return yield* fail(sessionID, "point_not_found", `Message ${input.messageID} is not in session ${sessionID}.`)
      }
      if (input.partID !== undefined && !target.parts.some((part) => part.id === input.partID)) {
        return yield* fail(sessionID, "point_not_found", `Part ${input.partID} is not in message ${input.messageID}.`)
      }
      const point: SessionRevert = { messageID: input.messageID, ...(input.partID !== undefined ? { partID: input.partID } : {}) }
      // Every record of file changes: the session's own, and those of subagents run after the point.
      const records: Array<{ readonly part: Part; readonly undone: boolean }> = []
      for (const message of messages) {
        for (const part of message.parts) {
          const undone = isHidden(point, message.info.id, part.id)
          records.push({ part, undone })
          const child = part.type === "tool" && part.tool === "task" && part.state.status !== "pending"
            ? part.state.metadata?.sessionId
            : undefined
          if (undone && typeof child === "string" && child !== sessionID) {
            for (const record of yield* childRecords(child as SessionID, part.id)) records.push({ part: record, undone: true })
          }
        }
      }
      records.sort((a, b) => (a.part.id < b.part.id ? -1 : a.part.id > b.part.id ? 1 : 0))
      // The files the undone steps changed, each as it was before the first of them.
      const targets = new Map<string, string>()
      let latest: string | undefined
      for (const { part, undone } of records) {
        if (part.type === "step-finish" && part.snapshot) latest = part.snapshot
        if (part.type === "snapshot") latest = part.snapshot
        if (part.type !== "patch" || !undone) continue
        for (const file of part.files.map(relative)) if (!targets.has(file)) targets.set(file, part.hash)
      }
      let revertInfo: SessionRevert = point
      let result: { readonly restored: ReadonlyArray<string>; readonly conflicts: ReadonlyArray<string> } = { restored: [], conflicts: [] }
      if (targets.size > 0) {
        // What the files should be now: as the session's last step left them.
        if (!latest) {
          return yield* fail(sessionID, "snapshot_missing", `Session ${sessionID} has patches but no snapshot to check them against.`)
        }
        const expectedIn = latest
        const files = [...targets.keys()]
        const requests = new Map<string, Set<string>>([[expectedIn, new Set(files)]])
        for (const [file, id] of targets) {
          const set = requests.get(id) ?? new Set<string>()
          set.add(file)
          requests.set(id, set)
        }
        const restored = yield* Effect.gen(function*() {
          const lookup = yield* lookupAll(requests)
          const outcome = yield* snapshot.restore(
            files.map((file) => ({ file, target: lookup(targets.get(file)!, file), expected: lookup(expectedIn, file) }))
          )
          const text = yield* restoreDiff(outcome.before, outcome.after, outcome.restored)
          return { outcome, text }
        }).pipe(Effect.mapError(storeFailure(sessionID)))
        result = restored.outcome
        revertInfo = {
          ...point,
          snapshot: restored.outcome.before,
          applied: restored.outcome.after,
          ...(restored.text ? { diff: restored.text } : {}),
          files: restored.outcome.restored.map(absolute),
          conflicts: restored.outcome.conflicts.map(absolute)
        }
      }
      const updated = yield* store.update(sessionID, { revert: revertInfo })
      yield* summarize(sessionID)
      return {
        session: updated,
        restored: result.restored.map(absolute),
        conflicts: result.conflicts.map(absolute)
      } satisfies RevertResult
    })

    const unrevert = Effect.fn("SessionChanges.unrevert")(function*(sessionID: SessionID) {
      yield* ensureIdle(sessionID)
      const session = yield* store.get(sessionID)
      if (!session.revert) return yield* fail(sessionID, "not_reverted", `Session ${sessionID} has no revert to undo.`)
      const result = yield* undoRevert(session)
      yield* summarize(sessionID)
      return { session: yield* store.get(sessionID), ...result } satisfies RevertResult
    })

    const cleanup = Effect.fn("SessionChanges.cleanup")(function*(sessionID: SessionID) {
      const session = yield* store.get(sessionID)
      const revert = session.revert
      if (!revert) return
      for (const message of yield* store.messages(sessionID)) {
        if (message.info.id === revert.messageID && revert.partID !== undefined) {
          for (const part of message.parts) {
            if (isHidden(revert, message.info.id, part.id)) yield* store.removePart(sessionID, message.info.id, part.id)
          }
        } else if (isHidden(revert, message.info.id)) {
          yield* store.removeMessage(sessionID, message.info.id)
        }
      }
      yield* store.update(sessionID, { revert: null })
      yield* summarize(sessionID)
    })

    const visibleMessages = Effect.fn("SessionChanges.visibleMessages")(function*(sessionID: SessionID) {
      const session = yield* store.get(sessionID)
      return visible(session.revert, yield* store.messages(sessionID))
    })

    return { revert, unrevert, cleanup, summarize, diff, changes, visibleMessages } satisfies SessionChangesShape
  })
}
