import { describe, expect, it } from "@effect/vitest"
import type { PermissionRequest } from "@agent/domain"
import { permissionPrompt } from "../src/ApprovalPrompt.js"

const request = (always: ReadonlyArray<string>, extra: Partial<PermissionRequest> = {}) =>
  ({
    id: "per_1",
    sessionID: "ses_1",
    permission: "bash",
    patterns: ["echo hi > f.txt"],
    always,
    metadata: {},
    time: { created: 0 },
    ...extra
  }) as unknown as PermissionRequest

describe("permissionPrompt", () => {
  it("names the rules \"always\" stores and where, then the keys", () => {
    expect(permissionPrompt(request(["echo *"]), "/data/agent.db", true)).toBe([
      'Allow bash "echo hi > f.txt"?',
      '  [a]lways allows from now on, in this project: bash "echo *"',
      "    (kept in /data/agent.db)",
      "[o]nce, [a]lways, [r]eject, [m]essage (press a key): "
    ].join("\n"))
  })

  it("says when always stores nothing, shows the diff first, and asks for Enter without raw mode", () => {
    const text = permissionPrompt(request([], { metadata: { diff: "-a\n+b" }, requiresPerson: "the policy asks" }), "/x", false)
    expect(text.split("\n")).toEqual([
      "-a",
      "+b",
      "(asked of a person: the policy asks)",
      'Allow bash "echo hi > f.txt"?',
      "  [a]lways stores nothing for this ask: it is the same as once",
      "[o]nce, [a]lways, [r]eject, [m]essage (then Enter): "
    ])
  })
})
