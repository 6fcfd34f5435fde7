import { describe, expect, it } from "@effect/vitest"
import { approverSettings, parseServer } from "@agent/server/ApproverSettings"
import { renderTemplate } from "@agent/server/Notify"
import { permissionMode } from "../src/RunApprovals.js"

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`

describe("approverSettings", () => {
  const cases: ReadonlyArray<[string, Parameters<typeof approverSettings>, ReturnType<typeof approverSettings>]> = [
    ["nothing configured: no approver", [undefined, {}, {}], undefined],
    ["a string is a server, with the defaults", ["http://h:1", {}, {}], { server: { url: "http://h:1" }, timeout: 300, fallback: "deny" }],
    [
      "the flags win over the config",
      [{ url: "http://config:1", timeout: 20, fallback: "deny" }, { approver: "http://flag:2", timeout: 5, fallback: "allow" }, {}],
      { server: { url: "http://flag:2" }, timeout: 5, fallback: "allow" }
    ],
    [
      "a webhook alone, with its headers",
      [{ webhook: "https://hooks.example/x", headers: { a: "b" } }, {}, {}],
      { webhook: { url: "https://hooks.example/x", headers: { a: "b" } }, timeout: 300, fallback: "deny" }
    ],
    [
      "credentials from the url, the path kept",
      [undefined, { approver: "http://me:p%40ss@h:1/base/" }, {}],
      { server: { url: "http://h:1/base", authorization: basic("me", "p@ss") }, timeout: 300, fallback: "deny" }
    ],
    [
      "credentials from the environment, user agent by default",
      ["http://h:1", {}, { AGENT_SERVER_PASSWORD: "pw" }],
      { server: { url: "http://h:1", authorization: basic("agent", "pw") }, timeout: 300, fallback: "deny" }
    ],
    ["a timeout flag without an approver", [undefined, { timeout: 3 }, {}], "--approver-timeout and --approver-fallback need an approver (--approver or permission.approver)"],
    ["not a url", [undefined, { approver: "h:1" }, {}], "--approver: expected an http:// or https:// url, got h:1"],
    ["nonsense", [undefined, { approver: "::" }, {}], "--approver: not a url: :: (expected e.g. http://127.0.0.1:4096)"],
    ["a bad fallback", ["http://h:1", { fallback: "maybe" }, {}], "--approver-fallback: expected deny or allow, got \"maybe\""]
  ]
  for (const [name, args, expected] of cases) {
    it(name, () => expect(approverSettings(...args)).toEqual(expected))
  }

  it("parseServer names where the url came from", () => {
    expect(parseServer("ftp://h", {}, "permission.approver.url")).toBe("permission.approver.url: expected an http:// or https:// url, got ftp://h")
  })
})

describe("permissionMode", () => {
  const approver = { server: { url: "http://h:1" }, timeout: 9, fallback: "allow" as const }
  const cases: ReadonlyArray<[string, Parameters<typeof permissionMode>[0], ReturnType<typeof permissionMode>]> = [
    ["--auto-approve first", { autoApprove: true, terminal: true, approver }, { mode: "auto-approve" }],
    ["a terminal asks there", { autoApprove: false, terminal: true, approver }, { mode: "terminal" }],
    ["headless with an approver", { autoApprove: false, terminal: false, approver }, {
      mode: "approver",
      server: "http://h:1",
      webhook: null,
      timeout: 9,
      fallback: "allow"
    }],
    ["headless alone rejects", { autoApprove: false, terminal: false, approver: undefined }, { mode: "reject" }]
  ]
  for (const [name, input, expected] of cases) {
    it(name, () => expect(permissionMode(input)).toEqual(expected))
  }
})

describe("renderTemplate", () => {
  const notification = { event: "run.finished" as const, title: "T \"q\"", message: "line1\nline2", session: "ses_1", directory: "/p" }
  it("fills plain text as is, an unknown field as empty", () => {
    expect(renderTemplate("{{title}} - {{ message }} {{nope}}", notification)).toBe("T \"q\" - line1\nline2 ")
  })
  it("escapes values in a JSON template", () => {
    const body = renderTemplate("{\"text\": \"{{title}}: {{message}}\"}", notification)
    expect(JSON.parse(body)).toEqual({ text: "T \"q\": line1\nline2" })
  })
})
