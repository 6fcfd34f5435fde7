import { PermissionRuleset, type ProjectID } from "@agent/domain"
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Effect, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { openedFile, withBusyRetry } from "../store/Database.js"
import { Instance } from "../runtime/Instance.js"

/**
 * Where "always allow" answers are kept, per project, so they survive a restart: the
 * `permission_approval` table by default, a JSON file or memory as alternatives.
 */
export class ApprovalStore extends Context.Tag("@agent/core/ApprovalStore")<
  ApprovalStore,
  {
    readonly load: (projectID: ProjectID) => Effect.Effect<PermissionRuleset>
    readonly add: (projectID: ProjectID, rules: PermissionRuleset) => Effect.Effect<void>
    /** Where a project's approvals are kept, as the user is told before answering "always". */
    readonly location: (projectID: ProjectID) => string
  }
>() {
  /** The `permission_approval` table of the runtime's database. */
  static readonly layerSql: Layer.Layer<ApprovalStore, never, SqlClient.SqlClient | Instance> = Layer.effect(
    ApprovalStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const file = yield* openedFile
      const run = withBusyRetry(file)
      const decode = Schema.decodeUnknownSync(PermissionRuleset)
      return {
        location: () => (file === ":memory:" ? "memory (until this process ends)" : file),
        load: (projectID) =>
          run(sql`SELECT permission, pattern, action FROM permission_approval WHERE project_id = ${projectID} ORDER BY id`).pipe(
            Effect.map((rows) => decode(rows))
          ),
        add: (projectID, rules) =>
          rules.length === 0
            ? Effect.void
            : run(
              sql`INSERT INTO permission_approval ${
                sql.insert(rules.map(({ action, pattern, permission }) => ({
                  project_id: projectID,
                  permission,
                  pattern,
                  action,
                  time_created: Date.now()
                })))
              }`
            ).pipe(Effect.asVoid)
      }
    })
  )

  /** `<data>/approvals/<projectID>.json`, written atomically with mode 0600. */
  static readonly layerFile: Layer.Layer<ApprovalStore, never, Instance> = Layer.effect(
    ApprovalStore,
    Effect.gen(function*() {
      const instance = yield* Instance
      const dir = path.join(instance.paths.data, "approvals")
      const fileOf = (projectID: ProjectID) => path.join(dir, `${projectID}.json`)
      const decode = Schema.decodeUnknownEither(Schema.parseJson(PermissionRuleset))

      const read = (projectID: ProjectID) =>
        Effect.gen(function*() {
          const file = fileOf(projectID)
          const text = yield* Effect.sync(() => (fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined))
          if (text === undefined) return []
          const decoded = decode(text)
          if (decoded._tag === "Right") return decoded.right
          // Keep the unreadable file for the user instead of overwriting it on the next save.
          const aside = `${file}.corrupt-${Date.now()}`
          yield* Effect.sync(() => fs.renameSync(file, aside))
          yield* Effect.logWarning(`approvals file ${file} could not be read; moved it to ${aside} and started empty`)
          return []
        })

      return {
        location: fileOf,
        load: (projectID) => read(projectID),
        add: (projectID, rules) =>
          Effect.gen(function*() {
            const existing = yield* read(projectID)
            const next = [...existing, ...rules.map(({ action, pattern, permission }) => ({ permission, pattern, action }))]
            const file = fileOf(projectID)
            yield* Effect.sync(() => {
              fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
              const temp = `${file}.${process.pid}.tmp`
              fs.writeFileSync(temp, JSON.stringify(next, null, 2), { mode: 0o600 })
              fs.renameSync(temp, file)
            })
          }).pipe(Effect.catchAllDefect((defect) => Effect.logError("could not save permission approvals", defect)))
      }
    })
  )

  /** Approvals kept in memory only (tests). */
  static readonly layerMemory: Layer.Layer<ApprovalStore> = Layer.sync(ApprovalStore, () => {
    const byProject = new Map<string, PermissionRuleset>()
    return {
      location: () => "memory (until this process ends)",
      load: (projectID) => Effect.sync(() => byProject.get(projectID) ?? []),
      add: (projectID, rules) =>
        Effect.sync(() => {
          byProject.set(projectID, [...(byProject.get(projectID) ?? []), ...rules])
        })
    }
  })
}
