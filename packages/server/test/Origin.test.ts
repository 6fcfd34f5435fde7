import { describe, expect, it } from "@effect/vitest"
import { nestedDeeperThan } from "../src/JsonDepth.js"
import * as Origin from "../src/Origin.js"

const loopback: Origin.HostContext = { localAddress: "127.0.0.1", localPort: 4096, hostname: "127.0.0.1", allowedHosts: [] }
const wildcard: Origin.HostContext = { localAddress: "::ffff:192.168.1.5", localPort: 4096, hostname: "0.0.0.0", allowedHosts: [] }
const proxied: Origin.HostContext = { ...loopback, allowedHosts: ["agent.example.com", "box.lan:8080"] }

describe("Origin.hostAllowed", () => {
  const table: ReadonlyArray<readonly [string, Origin.HostContext, string | undefined, boolean]> = [
    ["a loopback name with the port", loopback, "localhost:4096", true],
    ["127.0.0.1 with the port", loopback, "127.0.0.1:4096", true],
    ["[::1] with the port", loopback, "[::1]:4096", true],
    ["case and a trailing dot do not matter", loopback, "LocalHost.:4096", true],
    ["another port", loopback, "localhost:3000", false],
    ["no port means 80", loopback, "localhost", false],
    ["a rebinding name", loopback, "rebind.evil.example:4096", false],
    ["a name resolving to loopback is still not the server's", loopback, "127.0.0.1.nip.io:4096", false],
    ["no Host at all", loopback, undefined, false],
    ["garbage", loopback, "a b:4096", false],
    ["bound to all addresses: the address the connection came in on", wildcard, "192.168.1.5:4096", true],
    ["bound to all addresses: 0.0.0.0 itself", wildcard, "0.0.0.0:4096", true],
    ["bound to all addresses: not loopback names on a LAN connection", wildcard, "localhost:4096", false],
    ["bound to all addresses: another address", wildcard, "192.168.1.6:4096", false],
    ["a configured name, any port", proxied, "agent.example.com", true],
    ["a configured name, any port (2)", proxied, "agent.example.com:443", true],
    ["a configured name with its port", proxied, "box.lan:8080", true],
    ["a configured name, another port", proxied, "box.lan:8081", false],
    ["* allows anything", { ...loopback, allowedHosts: ["*"] }, "whatever.example", true]
  ]
  for (const [name, context, host, expected] of table) {
    it(name, () => expect(Origin.hostAllowed(host, context)).toBe(expected))
  }

  it("the refusal names the Host and what the server answers to", () => {
    const message = Origin.hostRefusal("rebind.evil.example", loopback)
    expect(message).toContain('"rebind.evil.example"')
    expect(message).toContain("localhost:4096, 127.0.0.1:4096, [::1]:4096")
    expect(message).toContain("--allowed-host")
  })
})

describe("Origin.originAllowed", () => {
  const cors = new Set(["https://app.example.com"])
  const table: ReadonlyArray<readonly [string, string, boolean]> = [
    ["https://app.example.com", "127.0.0.1:4096", true],
    ["http://127.0.0.1:4096", "127.0.0.1:4096", true],
    ["http://LOCALHOST:4096", "localhost:4096", true],
    ["https://agent.example.com", "agent.example.com", true],
    ["http://localhost:3000", "127.0.0.1:4096", false],
    ["http://localhost:4096", "127.0.0.1:4096", false],
    ["https://app.example.com.evil.net", "127.0.0.1:4096", false],
    ["null", "127.0.0.1:4096", false]
  ]
  for (const [origin, host, expected] of table) {
    it(`${origin} to ${host}`, () => expect(Origin.originAllowed(origin, host, cors)).toBe(expected))
  }
})

describe("nestedDeeperThan", () => {
  const nested = (levels: number) => "[".repeat(levels) + "]".repeat(levels)
  const table: ReadonlyArray<readonly [string, string, boolean]> = [
    ["flat", '{"a": 1, "b": [1, 2]}', false],
    ["at the limit", nested(4), false],
    ["one deeper", nested(5), true],
    ["siblings do not add up", `[${nested(3)}, ${nested(3)}, {"a": ${nested(2)}}]`, false],
    ["brackets in a string", `["[[[[[[[[[["]`, false],
    ["an escaped quote does not end the string", `["\\"[[[[[[[["]`, false],
    ["an escaped backslash does", `["\\\\", ${nested(4)}]`, true],
    ["an unterminated deep body", "[".repeat(10), true]
  ]
  for (const [name, text, expected] of table) {
    it(name, () => expect(nestedDeeperThan(text, 4)).toBe(expected))
  }
})
