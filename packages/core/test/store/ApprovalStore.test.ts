import { type ProjectID } from "@agent/domain"
import { TestDatabase, TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ApprovalStore } from "../../src/permission/ApprovalStore.js"
import { Instance } from "../../src/runtime/Instance.js"
import * as Database from "../../src/store/Database.js"

// The "always" approvals in the database (ApprovalStore.layerSql), on both backends.
describe.each(TestDatabase.backends())("approvals kept in %s", (backend) => {
  it.scopedLive("are kept per project in the order given, survive a reopen, and say where they are", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const database = yield* TestDatabase.target(backend, box)
      const layer = ApprovalStore.layerSql.pipe(
        Layer.provideMerge(Database.layerTarget(database)),
        Layer.provide(Layer.succeed(Instance, box.instance))
      )
      const project = "prj_one" as ProjectID
      const other = "prj_two" as ProjectID
      yield* Effect.gen(function*() {
        const approvals = yield* ApprovalStore
        yield* approvals.add(project, [{ permission: "bash", pattern: "git status*", action: "allow" }])
        yield* approvals.add(project, [
          { permission: "edit", pattern: "src/**", action: "allow" },
          { permission: "bash", pattern: "rm *", action: "deny" }
        ])
        yield* approvals.add(other, [{ permission: "read", pattern: "*", action: "allow" }])
        yield* approvals.add(other, [])
      }).pipe(Effect.provide(layer))
      yield* Effect.gen(function*() {
        const approvals = yield* ApprovalStore
        expect(yield* approvals.load(project)).toEqual([
          { permission: "bash", pattern: "git status*", action: "allow" },
          { permission: "edit", pattern: "src/**", action: "allow" },
          { permission: "bash", pattern: "rm *", action: "deny" }
        ])
        expect(yield* approvals.load(other)).toEqual([{ permission: "read", pattern: "*", action: "allow" }])
        const location = approvals.location(project)
        if (backend === "sqlite") expect(location).toBe(database)
        else expect(location).toMatch(/^postgres:\/\/agent@127\.0\.0\.1:\d+\/postgres$/)
      }).pipe(Effect.provide(layer))
    }))
})
