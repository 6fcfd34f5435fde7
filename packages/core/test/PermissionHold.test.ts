// PermissionService.hold (an ask of another process, `POST /permission/remote`) and the
// `permission.denied` event that names the deciding rule.
import type { PermissionID, PermissionRuleset, SessionID } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Exit, Fiber, Layer, Scope, Stream, TestClock } from "effect"
import { ApprovalStore } from "../src/permission/ApprovalStore.js"
import * as Permission from "../src/permission/Permission.js"
import { PermissionPolicy } from "../src/permission/PermissionPolicy.js"
import { PermissionService } from "../src/permission/PermissionService.js"
import { Bus } from "../src/runtime/Bus.js"
import { Instance, makeInstanceInfo } from "../src/runtime/Instance.js"

const session = "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa" as SessionID
const instance = Layer.succeed(Instance, makeInstanceInfo({ directory: "/tmp/project", home: "/tmp/home", env: {} }))
const deps = Layer.mergeAll(Bus.layer, ApprovalStore.layerMemory, PermissionPolicy.make({ rules: [] }), instance)
const testLayer = PermissionService.layer.pipe(Layer.provideMerge(deps))

const body = { sessionID: session, permission: "bash", patterns: ["git push"], always: ["git push *"], timeout: 60, directory: "/elsewhere" }

/** Holds `body` on a fiber; the id once the ask is pending. */
const holding = Effect.gen(function*() {
  const permissions = yield* PermissionService
  const asked = yield* Deferred.make<PermissionID>()
  const fiber = yield* Effect.fork(permissions.hold(body, (id) => Deferred.succeed(asked, id)))
  return { fiber, id: yield* Deferred.await(asked), permissions }
})

describe("PermissionService.hold", () => {
  it.scoped("is pending like an own ask (listed, published) and ends with the reply and its message", () =>
    Effect.gen(function*() {
      const bus = yield* Bus
      const events = yield* bus.subscribe({ types: ["permission.asked", "permission.replied"] })
      const { fiber, id, permissions } = yield* holding
      expect(yield* permissions.list()).toMatchObject([
        { id, sessionID: session, permission: "bash", patterns: ["git push"], metadata: { remote: true, directory: "/elsewhere" } }
      ])
      yield* permissions.reply({ requestID: id, reply: "reject", message: "not on Fridays" })
      expect(yield* Fiber.join(fiber)).toEqual({ _tag: "Replied", reply: "reject", message: "not on Fridays" })
      expect(yield* permissions.list()).toEqual([])
      const seen = Chunk.toArray(yield* Stream.runCollect(Stream.take(events, 2)))
      expect(seen.map((event) => event.type)).toEqual(["permission.asked", "permission.replied"])
    }).pipe(Effect.provide(testLayer)))

  it.effect("an \"always\" answers the asker but is not stored in this project", () =>
    Effect.gen(function*() {
      const { fiber, id, permissions } = yield* holding
      yield* permissions.reply({ requestID: id, reply: "always" })
      expect(yield* Fiber.join(fiber)).toEqual({ _tag: "Replied", reply: "always" })
      expect(yield* permissions.approvals()).toEqual([])
    }).pipe(Effect.provide(testLayer)))

  it.effect("times out, and the ask is withdrawn", () =>
    Effect.gen(function*() {
      const { fiber, permissions } = yield* holding
      yield* TestClock.adjust("61 seconds")
      expect(yield* Fiber.join(fiber)).toEqual({ _tag: "Timeout" })
      expect(yield* permissions.list()).toEqual([])
    }).pipe(Effect.provide(testLayer)))

  it.effect("an asker that goes away withdraws the ask", () =>
    Effect.gen(function*() {
      const { fiber, permissions } = yield* holding
      yield* Fiber.interrupt(fiber)
      expect(yield* permissions.list()).toEqual([])
    }).pipe(Effect.provide(testLayer)))

  it.effect("a runtime that stops does not answer \"reject\" for a person: the hold is interrupted", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(testLayer, scope)
      const { fiber } = yield* holding.pipe(Effect.provide(context))
      yield* Scope.close(scope, Exit.void)
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
    }))
})

describe("permission.denied", () => {
  it.scoped("names the rule that denied, with the file and key it came from", () =>
    Effect.gen(function*() {
      const bus = yield* Bus
      const events = yield* bus.subscribe({ types: ["permission.denied"] })
      const ruleset: PermissionRuleset = Permission.fromConfig(
        { bash: { "*": "allow", "rm *": "deny" } },
        { origin: (path) => ({ file: "/home/me/agent.json", key: path.join(".") }) }
      )
      const permissions = yield* PermissionService
      yield* Effect.flip(permissions.ask({ sessionID: session, permission: "bash", patterns: ["ls", "rm -rf x"], always: [], ruleset }))
      const [event] = Chunk.toArray(yield* Stream.runCollect(Stream.take(events, 1)))
      expect(event).toEqual({
        type: "permission.denied",
        properties: {
          sessionID: session,
          permission: "bash",
          patterns: ["rm -rf x"],
          decidedBy: { type: "rule", layer: "config", permission: "bash", pattern: "rm *", file: "/home/me/agent.json", key: "permission.bash.rm *" }
        }
      })
    }).pipe(Effect.provide(testLayer)))
})
