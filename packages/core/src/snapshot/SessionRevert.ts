import type { Part, Session, SessionID, SessionRevert } from "@agent/domain"
import { Effect } from "effect"
import { descendants, summarize } from "./ChangeSummary.js"
import {
  absolute,
  type ChangesDeps,
  fail,
  isBinary,
  lookupAll,
  relative,
  storeFailure,
  textOf,
  unifiedDiff
} from "./ChangesDeps.js"
import { isHidden, visible } from "./RevertPoint.js"
import type { RevertInput, RevertResult } from "./SessionChangesTypes.js"

// Revert and unrevert: the files the undone steps changed are put back exactly (conflicts are
// reported, not overwritten) and the later messages hidden until the next prompt removes them.

/** The unified diff text of a restore, kept on the revert for display. */
const restoreDiff = ({ snapshot }: ChangesDeps, before: string, after: string, files: ReadonlyArray<string>) =>
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

const ensureIdle = (deps: ChangesDeps, sessionID: SessionID) =>
  Effect.flatMap(deps.statuses.running(sessionID), (running) =>
    running
      ? Effect.fail(fail(sessionID, "busy", `Session ${sessionID} is running; abort it or wait before reverting.`))
      : Effect.void)

/** Puts the reverted files back (conflicts are reported, not overwritten) and clears the revert. */
const undoRevert = (deps: ChangesDeps, session: Session) =>
  Effect.gen(function*() {
    const { snapshot } = deps
    const revert = session.revert
    const files = (revert?.files ?? []).map((file) => relative(deps, file))
    let result: { readonly restored: ReadonlyArray<string>; readonly conflicts: ReadonlyArray<string> } = { restored: [], conflicts: [] }
    if (revert?.snapshot && revert.applied && files.length > 0) {
      const { applied, snapshot: before } = revert
      result = yield* Effect.gen(function*() {
        const target = yield* snapshot.entries(before, files)
        const expected = yield* snapshot.entries(applied, files)
        return yield* snapshot.restore(files.map((file) => ({ file, target: target.get(file), expected: expected.get(file) })))
      }).pipe(Effect.mapError(storeFailure(session.id)))
    }
    yield* deps.store.update(session.id, { revert: null })
    return { restored: result.restored.map((file) => absolute(deps, file)), conflicts: result.conflicts.map((file) => absolute(deps, file)) }
  })

/** Patches and snapshots of the sessions a task part ran, made after that part began. */
const childRecords = (deps: ChangesDeps, sessionID: SessionID, after: string) =>
  Effect.gen(function*() {
    const { store } = deps
    const out: Array<Part> = []
    const sessions = [yield* store.get(sessionID), ...(yield* descendants(deps, sessionID))]
    for (const each of sessions) {
      for (const message of yield* store.messages(each.id)) {
        for (const part of message.parts) {
          if (part.id > after && (part.type === "patch" || part.type === "step-finish" || part.type === "snapshot")) out.push(part)
        }
      }
    }
    return out
  }).pipe(Effect.orElseSucceed(() => [] as Array<Part>))

export const revert = Effect.fn("SessionChanges.revert")(function*(deps: ChangesDeps, input: RevertInput) {
  const { store } = deps
  const { sessionID } = input
  yield* ensureIdle(deps, sessionID)
  let session = yield* store.get(sessionID)
  // A revert on top of a revert: first put everything back, then revert from the new point.
  if (session.revert) {
    yield* undoRevert(deps, session)
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
        for (const record of yield* childRecords(deps, child as SessionID, part.id)) records.push({ part: record, undone: true })
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
    for (const file of part.files.map((file) => relative(deps, file))) if (!targets.has(file)) targets.set(file, part.hash)
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
      const lookup = yield* lookupAll(deps, requests)
      const outcome = yield* deps.snapshot.restore(
        files.map((file) => ({ file, target: lookup(targets.get(file)!, file), expected: lookup(expectedIn, file) }))
      )
      const text = yield* restoreDiff(deps, outcome.before, outcome.after, outcome.restored)
      return { outcome, text }
    }).pipe(Effect.mapError(storeFailure(sessionID)))
    result = restored.outcome
    revertInfo = {
      ...point,
      snapshot: restored.outcome.before,
      applied: restored.outcome.after,
      ...(restored.text ? { diff: restored.text } : {}),
      files: restored.outcome.restored.map((file) => absolute(deps, file)),
      conflicts: restored.outcome.conflicts.map((file) => absolute(deps, file))
    }
  }
  const updated = yield* store.update(sessionID, { revert: revertInfo })
  yield* summarize(deps, sessionID)
  return {
    session: updated,
    restored: result.restored.map((file) => absolute(deps, file)),
    conflicts: result.conflicts.map((file) => absolute(deps, file))
  } satisfies RevertResult
})

export const unrevert = Effect.fn("SessionChanges.unrevert")(function*(deps: ChangesDeps, sessionID: SessionID) {
  const { store } = deps
  yield* ensureIdle(deps, sessionID)
  const session = yield* store.get(sessionID)
  if (!session.revert) return yield* fail(sessionID, "not_reverted", `Session ${sessionID} has no revert to undo.`)
  const result = yield* undoRevert(deps, session)
  yield* summarize(deps, sessionID)
  return { session: yield* store.get(sessionID), ...result } satisfies RevertResult
})

export const cleanup = Effect.fn("SessionChanges.cleanup")(function*(deps: ChangesDeps, sessionID: SessionID) {
  const { store } = deps
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
  yield* summarize(deps, sessionID)
})

export const visibleMessages = Effect.fn("SessionChanges.visibleMessages")(function*(deps: ChangesDeps, sessionID: SessionID) {
  const { store } = deps
  const session = yield* store.get(sessionID)
  return visible(session.revert, yield* store.messages(sessionID))
})
