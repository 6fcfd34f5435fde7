// `permission.approver` and `notify`: read from a file, kept apart from the rules, with provenance.
import { ConfigError } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import * as Permission from "../../src/permission/Permission.js"
import { loadConfig } from "../../src/config/ConfigService.js"
import { sandbox } from "./helpers.js"

describe("permission.approver", () => {
  it.scoped("moves to `approver`: `permission` keeps only rules, and provenance names permission.approver", () =>
    Effect.gen(function*() {
      const box = yield* sandbox
      const file = path.join(box.project, "agent.json")
      box.write(file, {
        permission: { bash: "ask", approver: { url: "http://h:4096", timeout: 60, fallback: "allow" } },
        notify: ["https://ntfy.sh/x", { url: "https://hooks.example/y", events: ["run.limit"], template: "{{title}}" }]
      })
      const info = yield* loadConfig(box.instance({}))
      expect(info.config.approver).toEqual({ url: "http://h:4096", timeout: 60, fallback: "allow" })
      expect(info.config.permission).toEqual({ bash: "ask" })
      expect(Permission.fromConfig(info.config.permission).map((rule) => rule.permission)).toEqual(["bash"])
      expect(info.origin(["approver", "timeout"])).toMatchObject({ file, key: "permission.approver.timeout" })
      expect(info.config.notify).toHaveLength(2)
    }))

  it.scoped("a bad value is an error naming the file and key", () =>
    Effect.gen(function*() {
      const box = yield* sandbox
      const file = path.join(box.project, "agent.json")
      box.write(file, { permission: { approver: { url: "localhost:4096", fallback: "maybe" } } })
      const error = yield* Effect.flip(loadConfig(box.instance({})))
      expect(error).toBeInstanceOf(ConfigError)
      expect(error.message).toContain(file)
      expect(error.message).toMatch(/permission\.approver/)
    }))

  it.scoped("a top-level `approver` key is not accepted in a file (it is written permission.approver)", () =>
    Effect.gen(function*() {
      const box = yield* sandbox
      box.write(path.join(box.project, "agent.json"), { approver: "http://h:1" })
      const error = yield* Effect.flip(loadConfig(box.instance({})))
      expect(error.message).toContain(`unrecognized key "approver"`)
    }))
})
