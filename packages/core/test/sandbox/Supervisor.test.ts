import { describe, expect, it } from "@effect/vitest"
import { DEFAULT_KEEP_IDLE_MS, keepIdleMsOf } from "../../src/sandbox/KeptSandbox.js"
import { encodeRequest, readSupervisorLine } from "../../src/sandbox/Supervisor.js"

describe("kept sandbox: the supervisor's protocol", () => {
  it.each([
    ['{"t":"ready"}', { t: "ready" }],
    ['{"t":"out","id":3,"data":"héllo\\n"}', { t: "out", id: 3, data: "héllo\n" }],
    ['{"t":"exit","id":1,"code":2,"signal":null}', { t: "exit", id: 1, code: 2, signal: null }],
    ['{"t":"exit","id":1,"code":null,"signal":"SIGTERM"}', { t: "exit", id: 1, code: null, signal: "SIGTERM" }],
    ['{"t":"close","id":7}', { t: "close", id: 7 }],
    ['{"t":"error","id":0,"message":"spawn ENOENT"}', { t: "error", id: 0, message: "spawn ENOENT" }],
    ['{"t":"stopped","id":4}', { t: "stopped", id: 4 }]
  ])("reads %s", (line, message) => {
    expect(readSupervisorLine(line)).toEqual(message)
  })

  it.each([
    ["not json"],
    ['{"t":"out","id":"3","data":"x"}'],
    ['{"t":"exit","id":1}'],
    ['{"t":"launch","id":1}'],
    [""]
  ])("ignores what is not one of its messages: %s", (line) => {
    expect(readSupervisorLine(line)).toBeUndefined()
  })

  it("writes one request per line, whatever the command holds", () => {
    const line = encodeRequest({ t: "run", id: 1, argv: ["/bin/sh", "-c", "echo 'a\nb'"], cwd: "/p", env: { X: "1\n2" } })
    expect(line.endsWith("\n")).toBe(true)
    expect(line.slice(0, -1)).not.toContain("\n")
    expect(JSON.parse(line)).toEqual({ t: "run", id: 1, argv: ["/bin/sh", "-c", "echo 'a\nb'"], cwd: "/p", env: { X: "1\n2" } })
  })
})

describe("kept sandbox: idle time", () => {
  it.each([
    [{}, {}, DEFAULT_KEEP_IDLE_MS],
    [{}, { AGENT_SANDBOX_KEEP_MS: "30000" }, 30_000],
    [{}, { AGENT_SANDBOX_KEEP_MS: "0" }, 0],
    [{}, { AGENT_SANDBOX_KEEP_MS: " 0 " }, 0],
    [{}, { AGENT_SANDBOX_KEEP_MS: "" }, DEFAULT_KEEP_IDLE_MS],
    [{}, { AGENT_SANDBOX_KEEP_MS: "soon" }, DEFAULT_KEEP_IDLE_MS],
    [{}, { AGENT_SANDBOX_KEEP_MS: "-5" }, DEFAULT_KEEP_IDLE_MS],
    [{}, { AGENT_SANDBOX_KEEP_MS: "1.5" }, DEFAULT_KEEP_IDLE_MS],
    [{ keepIdleMs: 500 }, { AGENT_SANDBOX_KEEP_MS: "30000" }, 500],
    [{ keepIdleMs: 0 }, { AGENT_SANDBOX_KEEP_MS: "30000" }, 0]
  ])("options %j, env %j: %d ms", (options, env, expected) => {
    expect(keepIdleMsOf(options, env)).toBe(expected)
  })
})
