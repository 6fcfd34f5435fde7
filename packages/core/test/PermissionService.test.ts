import {
  CorrectedError,
  DeniedError,
  PermissionRequestNotFound,
  RejectedError,
  type PermissionRuleset,
  type SessionID
} from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Layer, Stream } from "effect"
import { ApprovalStore } from "../src/permission/ApprovalStore.js"
import { Bus } from "../src/runtime/Bus.js"
import { Instance, makeInstanceInfo } from "../src/runtime/Instance.js"
import * as Permission from "../src/permission/Permission.js"
import { PermissionPolicy } from "../src/permission/PermissionPolicy.js"
import { PermissionService } from "../src/permission/PermissionService.js"
import { TestInstance } from "@agent/testing"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeAppLayer } from "../src/AppLayer.js"

const sessionA = "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa" as SessionID
const sessionB = "ses_bbbbbbbbbbbbbbbbbbbbbbbbbb" as SessionID
const ruleset: PermissionRuleset = Permission.fromConfig({
  "*": "allow",
  bash: { "*": "ask", "ls *": "allow", "rm *": "deny" },
  webfetch: "ask"
})

const instance = Layer.succeed(Instance, makeInstanceInfo({ directory: "/tmp/project", home: "/tmp/home", env: {} }))
const testLayer = PermissionService.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(Bus.layer, ApprovalStore.layerMemory, PermissionPolicy.make({ rules: [] }), instance))
)

/** Waits until `count` requests are pending and returns them. */
const waitForPending = (count: number) =>
  Effect.gen(function*() {
    const permissions = yield* PermissionService
    while ((yield* permissions.list()).length < count) yield* Effect.yieldNow()
    return yield* permissions.list()
  })

const bash = (sessionID: SessionID, command: string, always = [`${command.split(" ")[0]} *`]) =>
  Effect.gen(function*() {
    const permissions = yield* PermissionService
    return yield* permissions.ask({ sessionID, permission: "bash", patterns: [command], always, ruleset })
  })

describe("PermissionService.ask", () => {
  it.effect("allows without asking when every pattern is allowed", () =>
    Effect.gen(function*() {
      yield* bash(sessionA, "ls -la")
      expect(yield* (yield* PermissionService).list()).toEqual([])
    }).pipe(Effect.provide(testLayer)))

  it.effect("denies with the relevant rules when any pattern is denied", () =>
    Effect.gen(function*() {
      const permissions = yield* PermissionService
      const error = yield* Effect.flip(
        permissions.ask({ sessionID: sessionA, permission: "bash", patterns: ["ls", "rm -rf /"], always: [], ruleset })
      )
      expect(error).toBeInstanceOf(DeniedError)
      expect(error.message).toMatch(/^Blocked by the user's permission rules: bash is denied for "rm -rf \/"\./)
      expect((error as DeniedError).rules.map((rule) => rule.pattern)).toEqual(["*", "*", "ls *", "rm *"])
      expect(yield* permissions.list()).toEqual([])
    }).pipe(Effect.provide(testLayer)))

  it.scoped("publishes permission.asked and waits for the reply (once)", () =>
    Effect.gen(function*() {
      const bus = yield* Bus
      const events = yield* bus.subscribe({ types: ["permission.asked", "permission.replied"] })
      const permissions = yield* PermissionService
      const fiber = yield* Effect.fork(bash(sessionA, "git status"))
      const [request] = yield* waitForPending(1)
      expect(request).toMatchObject({ sessionID: sessionA, permission: "bash", patterns: ["git status"], always: ["git *"] })
      expect(fiber.unsafePoll()).toBeNull()
      yield* permissions.reply({ requestID: request!.id, reply: "once" })
      expect(yield* Fiber.join(fiber)).toBeUndefined()
      const seen = yield* Stream.runCollect(Stream.take(events, 2))
      expect(Chunk.toArray(seen).map((event) => event.type)).toEqual(["permission.asked", "permission.replied"])
      // once does not remember anything: the same command asks again
      const again = yield* Effect.fork(bash(sessionA, "git status"))
      yield* waitForPending(1)
      yield* Fiber.interrupt(again)
    }).pipe(Effect.provide(testLayer)))

  it.effect("always records approvals and resolves the session's other requests they cover", () =>
    Effect.gen(function*() {
      const permissions = yield* PermissionService
      const first = yield* Effect.fork(bash(sessionA, "git status"))
      const second = yield* Effect.fork(bash(sessionA, "git diff"))
      const third = yield* Effect.fork(bash(sessionA, "npm test"))
      const pending = yield* waitForPending(3)
      yield* permissions.reply({ requestID: pending[0]!.id, reply: "always" })
      yield* Fiber.join(first)
      yield* Fiber.join(second)
      const left = yield* permissions.list()
      expect(left.map((request) => request.patterns[0])).toEqual(["npm test"])
      expect(Permission.strip(yield* permissions.approvals())).toEqual([{ permission: "bash", pattern: "git *", action: "allow" }])
      // later calls covered by the approval no longer ask, in any session
      yield* bash(sessionB, "git log --oneline")
      yield* permissions.reply({ requestID: left[0]!.id, reply: "once" })
      yield* Fiber.join(third)
    }).pipe(Effect.provide(testLayer)))

  it.effect("an approval never overrides a deny rule", () =>
    Effect.gen(function*() {
      const permissions = yield* PermissionService
      const fiber = yield* Effect.fork(bash(sessionA, "rmdir build", ["*"]))
      const [request] = yield* waitForPending(1)
      yield* permissions.reply({ requestID: request!.id, reply: "always" })
      yield* Fiber.join(fiber)
      const error = yield* Effect.flip(bash(sessionA, "rm -rf build"))
      expect(error).toBeInstanceOf(DeniedError)
    }).pipe(Effect.provide(testLayer)))

  it.effect("reject with remember stores a deny: the same call is denied from then on, in any session, without asking", () =>
    Effect.gen(function*() {
      const permissions = yield* PermissionService
      const fiber = yield* Effect.fork(bash(sessionA, "npm publish"))
      const [request] = yield* waitForPending(1)
      yield* permissions.reply({ requestID: request!.id, reply: "reject", remember: true })
      expect(yield* Effect.flip(Fiber.join(fiber))).toBeInstanceOf(RejectedError)
      const error = yield* Effect.flip(bash(sessionB, "npm install"))
      expect(error).toBeInstanceOf(DeniedError)
      expect(yield* permissions.list()).toEqual([])
      expect(yield* permissions.approvals()).toContainEqual(expect.objectContaining({ permission: "bash", pattern: "npm *", action: "deny" }))
      // Other commands still ask.
      const other = yield* Effect.fork(bash(sessionA, "make"))
      const [asked] = yield* waitForPending(1)
      yield* permissions.reply({ requestID: asked!.id, reply: "once" })
      yield* Fiber.join(other)
    }).pipe(Effect.provide(testLayer)))

  it.effect("reject fails the call and every other pending request of the session", () =>
    Effect.gen(function*() {
      const permissions = yield* PermissionService
      const first = yield* Effect.fork(bash(sessionA, "git push"))
      const second = yield* Effect.fork(bash(sessionA, "curl example.com"))
      const other = yield* Effect.fork(bash(sessionB, "make"))
      const pending = yield* waitForPending(3)
      yield* permissions.reply({ requestID: pending[0]!.id, reply: "reject" })
      const firstError = yield* Effect.flip(Fiber.join(first))
      expect(firstError).toBeInstanceOf(RejectedError)
      expect(firstError.message).toBe("The user said no to this tool call; it did not run.")
      expect(yield* Effect.flip(Fiber.join(second))).toBeInstanceOf(RejectedError)
      // another session's request is untouched
      expect((yield* permissions.list()).map((request) => request.sessionID)).toEqual([sessionB])
      yield* Fiber.interrupt(other)
    }).pipe(Effect.provide(testLayer)))

  it.effect("reject with a message becomes feedback for the model", () =>
    Effect.gen(function*() {
      const permissions = yield* PermissionService
      const fiber = yield* Effect.fork(bash(sessionA, "git push --force"))
      const [request] = yield* waitForPending(1)
      yield* permissions.reply({ requestID: request!.id, reply: "reject", message: "push to a branch, not main" })
      const error = yield* Effect.flip(Fiber.join(fiber))
      expect(error).toBeInstanceOf(CorrectedError)
      expect(error.message).toBe(
        "The user said no to this tool call; it did not run. Their instructions: push to a branch, not main"
      )
    }).pipe(Effect.provide(testLayer)))

  it.effect("replying to an unknown request fails with PermissionRequestNotFound", () =>
    Effect.gen(function*() {
      const permissions = yield* PermissionService
      const error = yield* Effect.flip(permissions.reply({ requestID: "per_missing", reply: "once" }))
      expect(error).toBeInstanceOf(PermissionRequestNotFound)
      expect(error.message).toContain("per_missing")
    }).pipe(Effect.provide(testLayer)))

  it.effect("an aborted caller withdraws its request", () =>
    Effect.gen(function*() {
      const permissions = yield* PermissionService
      const fiber = yield* Effect.fork(bash(sessionA, "git status"))
      yield* waitForPending(1)
      yield* Fiber.interrupt(fiber)
      expect(yield* permissions.list()).toEqual([])
    }).pipe(Effect.provide(testLayer)))

  it.live("pending requests are rejected when the runtime shuts down", () =>
    Effect.gen(function*() {
      let fiber: Fiber.RuntimeFiber<void, unknown> | undefined
      yield* Effect.scoped(
        Effect.gen(function*() {
          const context = yield* Layer.build(testLayer)
          fiber = yield* Effect.fork(Effect.provide(bash(sessionA, "git status"), context))
          yield* Effect.provide(waitForPending(1), context)
        })
      )
      expect(yield* Effect.flip(Fiber.join(fiber!))).toBeInstanceOf(RejectedError)
    }))
})

describe("approvals persist per project", () => {
  it.live("an always answer is stored in the database and survives a restart of the whole runtime", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const app = makeAppLayer({ instance: Layer.succeed(Instance, box.instance) })
      yield* Effect.scoped(
        Effect.gen(function*() {
          const permissions = yield* PermissionService
          const fiber = yield* Effect.fork(bash(sessionA, "cargo build --release"))
          const [request] = yield* waitForPending(1)
          yield* permissions.reply({ requestID: request!.id, reply: "always" })
          yield* Fiber.join(fiber)
        }).pipe(Effect.provide(app))
      )
      expect(fs.existsSync(path.join(box.instance.paths.data, "agent.db"))).toBe(true)
      yield* Effect.scoped(
        Effect.gen(function*() {
          yield* bash(sessionB, "cargo build")
          const approvals = yield* (yield* PermissionService).approvals()
          expect(Permission.strip(approvals)).toEqual([{ permission: "bash", pattern: "cargo *", action: "allow" }])
        }).pipe(Effect.provide(app))
      )
    }).pipe(Effect.scoped))


  it.live("approvals belong to their project: another project in the same database still asks", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({ files: { "other/.git/HEAD": "ref: refs/heads/main\n" } })
      const other = makeInstanceInfo({ directory: box.path("other"), home: box.instance.home, env: box.instance.env })
      expect(other.projectID).not.toBe(box.instance.projectID)
      const appOf = (info: typeof other) => makeAppLayer({ instance: Layer.succeed(Instance, info) })
      yield* Effect.scoped(
        Effect.gen(function*() {
          const permissions = yield* PermissionService
          const fiber = yield* Effect.fork(bash(sessionA, "cargo test"))
          const [request] = yield* waitForPending(1)
          yield* permissions.reply({ requestID: request!.id, reply: "always" })
          yield* Fiber.join(fiber)
        }).pipe(Effect.provide(appOf(box.instance)))
      )
      // same user, same database file, another repository: the approval does not apply
      yield* Effect.scoped(
        Effect.gen(function*() {
          const permissions = yield* PermissionService
          expect(yield* permissions.approvals()).toEqual([])
          const fiber = yield* Effect.fork(bash(sessionB, "cargo test"))
          const [request] = yield* waitForPending(1)
          expect(request!.patterns).toEqual(["cargo test"])
          yield* permissions.reply({ requestID: request!.id, reply: "once" })
          yield* Fiber.join(fiber)
        }).pipe(Effect.provide(appOf(other)))
      )
      // and the first project still has it
      yield* Effect.scoped(
        Effect.gen(function*() {
          yield* bash(sessionB, "cargo test --release")
          expect((yield* (yield* PermissionService).list())).toEqual([])
        }).pipe(Effect.provide(appOf(box.instance)))
      )
    }).pipe(Effect.scoped))


  it.live("an always answer survives a restart", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const layer = PermissionService.layer.pipe(
        Layer.provideMerge(
          Layer.mergeAll(Bus.layer, ApprovalStore.layerFile, PermissionPolicy.make({ rules: [] })).pipe(
            Layer.provideMerge(Layer.succeed(Instance, box.instance))
          )
        )
      )
      // first run: the user answers "always"
      yield* Effect.scoped(
        Effect.gen(function*() {
          const permissions = yield* PermissionService
          const fiber = yield* Effect.fork(bash(sessionA, "npm run build"))
          const [request] = yield* waitForPending(1)
          yield* permissions.reply({ requestID: request!.id, reply: "always" })
          yield* Fiber.join(fiber)
        }).pipe(Effect.provide(layer))
      )
      // second run, fresh runtime: no question for a covered command
      yield* Effect.scoped(
        Effect.gen(function*() {
          yield* bash(sessionB, "npm install")
          expect(yield* (yield* PermissionService).list()).toEqual([])
        }).pipe(Effect.provide(layer))
      )
    }).pipe(Effect.scoped))
})

describe("PermissionService.ask with autoApprove (--auto-approve)", () => {
  it.scoped("answers the ask once by itself: asked and replied are published, nothing stays pending", () =>
    Effect.gen(function*() {
      const bus = yield* Bus
      const events = yield* bus.subscribe({ types: ["permission.asked", "permission.replied"] })
      const permissions = yield* PermissionService
      yield* permissions.ask({ sessionID: sessionA, permission: "bash", patterns: ["git status"], always: ["git *"], ruleset, autoApprove: true })
      expect(yield* permissions.list()).toEqual([])
      const seen = Chunk.toArray(yield* Stream.runCollect(Stream.take(events, 2)))
      expect(seen.map((event) => event.type)).toEqual(["permission.asked", "permission.replied"])
      const [asked, replied] = seen
      expect(asked?.properties).toMatchObject({ sessionID: sessionA, permission: "bash", patterns: ["git status"] })
      expect(replied?.properties).toEqual({ sessionID: sessionA, requestID: (asked?.properties as { id: string }).id, reply: "once" })
      // "once" is not "always": nothing is remembered.
      expect(yield* permissions.approvals()).toEqual([])
    }).pipe(Effect.provide(testLayer)))

  it.effect("deny rules still apply", () =>
    Effect.gen(function*() {
      const permissions = yield* PermissionService
      const error = yield* Effect.flip(
        permissions.ask({ sessionID: sessionA, permission: "bash", patterns: ["rm -rf /"], always: [], ruleset, autoApprove: true })
      )
      expect(error).toBeInstanceOf(DeniedError)
    }).pipe(Effect.provide(testLayer)))

  it.effect("an ask only a person may answer (unsandboxed, unreadable) waits for one", () =>
    Effect.gen(function*() {
      const permissions = yield* PermissionService
      const escalation = yield* Effect.fork(permissions.ask({
        sessionID: sessionA,
        permission: "bash",
        patterns: ["git push"],
        always: [],
        ruleset,
        requiresPerson: "it leaves the sandbox",
        autoApprove: true
      }))
      const unreadable = yield* Effect.fork(permissions.ask({
        sessionID: sessionA,
        permission: "bash",
        patterns: ["$CMD"],
        always: [],
        // Without the `rm *` deny: the strictest rule an unreadable command could meet is an ask.
        ruleset: Permission.fromConfig({ "*": "allow", bash: "ask" }),
        opaque: [{ pattern: "$CMD", reason: "the command name is computed" }],
        autoApprove: true
      }))
      const requests = yield* waitForPending(2)
      expect(requests.map((request) => request.requiresPerson)).toEqual([
        "it leaves the sandbox",
        "the rules cannot check it: the command name is computed"
      ])
      expect(escalation.unsafePoll()).toBeNull()
      expect(unreadable.unsafePoll()).toBeNull()
      for (const request of requests) yield* permissions.reply({ requestID: request.id, reply: "once" })
      yield* Fiber.join(escalation)
      yield* Fiber.join(unreadable)
    }).pipe(Effect.provide(testLayer)))

  it.effect("an ask the enterprise policy insists on waits for a person", () =>
    Effect.gen(function*() {
      const permissions = yield* PermissionService
      const fiber = yield* Effect.fork(permissions.ask({ sessionID: sessionA, permission: "webfetch", patterns: ["https://example.com"], always: [], ruleset: [], autoApprove: true }))
      const [request] = yield* waitForPending(1)
      expect(request?.requiresPerson).toBe("the enterprise policy asks a person to approve it")
      yield* permissions.reply({ requestID: request!.id, reply: "reject" })
      expect(yield* Effect.flip(Fiber.join(fiber))).toBeInstanceOf(RejectedError)
    }).pipe(Effect.provide(PermissionService.layer.pipe(
      Layer.provideMerge(Layer.mergeAll(
        Bus.layer,
        ApprovalStore.layerMemory,
        PermissionPolicy.make({ rules: Permission.fromConfig({ webfetch: "ask" }) }),
        instance
      ))
    ))))
})
