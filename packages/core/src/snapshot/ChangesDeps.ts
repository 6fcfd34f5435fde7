import { type FileDiff, RevertError, type SessionID } from "@agent/domain"
import type * as SqlClient from "@effect/sql/SqlClient"
import { type Context, Effect, Schema } from "effect"
import * as path from "node:path"
import type { Bus } from "../runtime/Bus.js"
import type { withBusyRetry } from "../store/Database.js"
import type { SessionStore } from "../store/SessionStore.js"
import { compare as compareTexts } from "../tool/FileDiff.js"
import type { Snapshot } from "./Snapshot.js"
import type { SnapshotError } from "./SnapshotTypes.js"
import type * as Tree from "./Tree.js"
import type { SessionStatusesShape } from "../runtime/SessionStatuses.js"

// What the parts of SessionChanges share: the layer's dependencies and state, and the helpers
// both the summary and revert use.

export interface ChangesDeps {
  readonly store: Context.Tag.Service<SessionStore>
  readonly snapshot: Context.Tag.Service<Snapshot>
  readonly bus: Context.Tag.Service<Bus>
  readonly sql: SqlClient.SqlClient
  readonly write: ReturnType<typeof withBusyRetry>
  /** Which sessions have a run in progress (the session loop writes it). */
  readonly statuses: SessionStatusesShape
}

/** A path relative to the project root as an absolute one. */
export const absolute = (deps: ChangesDeps, file: string) => path.join(deps.snapshot.root, file)
/** An absolute path as relative to the project root, `/`-separated. */
export const relative = (deps: ChangesDeps, file: string) => path.relative(deps.snapshot.root, file).split(path.sep).join("/")

/** One file of the kept diff: content ids into the snapshot store. */
export const StoredChange = Schema.Struct({
  file: Schema.String,
  status: Schema.Literal("added", "deleted", "modified"),
  additions: Schema.Number,
  deletions: Schema.Number,
  binary: Schema.optional(Schema.Boolean),
  before: Schema.optional(Schema.String),
  after: Schema.optional(Schema.String)
})
export type StoredChange = typeof StoredChange.Type
export const decodeStored = Schema.decodeUnknownSync(Schema.parseJson(Schema.Array(StoredChange)))

/** The unified diff of one file's change, for display (bounded in time and size like the edit tools' diffs). */
export const unifiedDiff = (diff: FileDiff): string =>
  diff.binary ? `Binary file ${diff.file} changed\n` : compareTexts(`a/${diff.file}`, diff.before, diff.after, `b/${diff.file}`).diff

export const isBinary = (content: Buffer) => content.subarray(0, 8000).includes(0)

export const textOf = (content: Buffer | undefined) => (content === undefined || isBinary(content) ? "" : content.toString("utf8"))

export const fail = (sessionID: SessionID, reason: RevertError["reason"], detail: string) =>
  new RevertError({ sessionID, reason, detail })

export const storeFailure = (sessionID: SessionID) => (error: SnapshotError) =>
  fail(
    sessionID,
    error._tag === "SnapshotMissing" ? "snapshot_missing" : "snapshots_off",
    `Cannot change the files of session ${sessionID}: ${error.message}`
  )

/** Looks up files in several snapshots, one read per snapshot. */
export const lookupAll = (deps: ChangesDeps, requests: ReadonlyMap<string, Set<string>>) =>
  Effect.gen(function*() {
    const found = new Map<string, ReadonlyMap<string, Tree.FileEntry | undefined>>()
    for (const [id, files] of requests) found.set(id, yield* deps.snapshot.entries(id, [...files]))
    return (id: string, file: string) => found.get(id)?.get(file)
  })
