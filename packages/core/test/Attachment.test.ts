import { TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { attachmentAccess } from "../src/tool/Attachment.js"
import { defaultRules } from "../src/agent/AgentRegistry.js"
import * as Permission from "../src/permission/Permission.js"

describe("attachmentAccess", () => {
  it.scoped("the read tool's checks on the given and the real path; only allow passes", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({
        files: { "project/a.txt": "a", "project/.env": "K=V", "project/secrets/key": "k", "outside/b.txt": "b" }
      })
      fs.symlinkSync(box.path("outside/b.txt"), box.path("project/link.txt"))
      fs.symlinkSync(box.path("project/secrets/key"), box.path("project/innocent.txt"))
      const defaults = defaultRules(box.instance)
      const config = Permission.fromConfig({ read: { "secrets/*": "deny" } })
      const outsideAllowed = Permission.asSession([{ permission: "external_directory", pattern: `${box.path("outside")}/*`, action: "allow" }])
      const decide = (target: string, ...rulesets: Array<ReturnType<typeof Permission.merge>>) => {
        const refusal = attachmentAccess(box.instance, box.path(target), "file", ...rulesets)
        return refusal === undefined ? "allow" : `${refusal.permission} ${refusal.rule.action}`
      }
      // [file, rules, decision]
      const table: ReadonlyArray<readonly [string, ReadonlyArray<ReturnType<typeof Permission.merge>>, string]> = [
        ["project/a.txt", [defaults], "allow"],
        ["project/.env", [defaults], "read ask"],
        ["project/secrets/key", [defaults, config], "read deny"],
        ["project/innocent.txt", [defaults, config], "read deny"],
        ["outside/b.txt", [defaults], "external_directory ask"],
        ["project/link.txt", [defaults], "external_directory ask"],
        ["project/link.txt", [defaults, outsideAllowed], "allow"],
        ["outside/missing.txt", [defaults], "external_directory ask"]
      ]
      for (const [target, rulesets, expected] of table) {
        expect(decide(target, ...rulesets), target).toBe(expected)
      }
      const refusal = attachmentAccess(box.instance, box.path("project/link.txt"), "file", defaults)
      expect(refusal?.path).toBe(box.path("outside/b.txt"))
    }))
})
