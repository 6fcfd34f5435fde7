// What of `permission.approver` `agent serve` applies to its own sessions' asks: pure decisions.
import type { PermissionRequest } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { serveApproverSettings } from "../src/ApproverSettings.js"
import { ownUrl, settingsFor } from "../src/ServeApprovals.js"

const here = "http://127.0.0.1:4096"

describe("serveApproverSettings", () => {
  it("applies a webhook or a timeout; a url alone (for agent run) changes nothing on the server", () => {
    const cases: Array<[string, Parameters<typeof serveApproverSettings>[0], ReturnType<typeof serveApproverSettings>]> = [
      ["none", undefined, undefined],
      ["a url (string form)", "http://central:4096", undefined],
      ["a url (object form)", { url: "http://central:4096" }, undefined],
      ["a webhook: default timeout and fallback", { webhook: "http://hooks/a" }, { here, webhook: { url: "http://hooks/a", headers: {} }, timeout: 300, fallback: "deny" }],
      [
        "a webhook with headers, timeout and fallback allow",
        { webhook: "http://hooks/a", headers: { "x-token": "t" }, timeout: 20, fallback: "allow", url: "http://central:4096" },
        { here, webhook: { url: "http://hooks/a", headers: { "x-token": "t" } }, timeout: 20, fallback: "allow" }
      ],
      ["a timeout alone: a person on the server, then the fallback", { timeout: 60 }, { here, timeout: 60, fallback: "deny" }]
    ]
    for (const [name, config, expected] of cases) expect(serveApproverSettings(config, here), name).toEqual(expected)
  })

  it("an ask only a person may answer goes to no webhook and never to an allow fallback", () => {
    const settings = { here, webhook: { url: "http://hooks/a", headers: {} }, timeout: 20, fallback: "allow" as const }
    const ask = { requiresPerson: undefined } as unknown as PermissionRequest
    const personal = { requiresPerson: "the managed policy asks" } as unknown as PermissionRequest
    expect(settingsFor(settings, ask)).toEqual(settings)
    expect(settingsFor(settings, personal)).toEqual({ here, timeout: 20, fallback: "deny" })
  })

  it("links name the address the server listens on; a wildcard address by the host's name", () => {
    expect(ownUrl({ _tag: "TcpAddress", hostname: "127.0.0.1", port: 4096 })).toBe("http://127.0.0.1:4096")
    expect(ownUrl({ _tag: "TcpAddress", hostname: "::1", port: 80 })).toBe("http://[::1]:80")
    expect(ownUrl({ _tag: "TcpAddress", hostname: "0.0.0.0", port: 4096 })).toMatch(/^http:\/\/[^/]+:4096$/)
    expect(ownUrl({ _tag: "TcpAddress", hostname: "0.0.0.0", port: 4096 })).not.toContain("0.0.0.0")
  })
})
