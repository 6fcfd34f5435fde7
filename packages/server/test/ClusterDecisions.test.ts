import type { MessageWithParts, SessionID, SessionStatus } from "@agent/domain"
import { TestData } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { clusterChoice, clusterDatabaseUrl } from "../src/cluster/ClusterSettings.js"
import { promptAction } from "../src/cluster/Handover.js"
import { mergeStatuses } from "../src/cluster/RunStatusRegistry.js"
import { promptOptions } from "../src/cluster/SessionEntity.js"

const sessionID = "ses_cluster" as SessionID
const user = TestData.userMessage(sessionID)
const later = TestData.userMessage(sessionID)
const withParts = (info: MessageWithParts["info"]): MessageWithParts => ({ info, parts: [] })
const answer = (overrides: Parameters<typeof TestData.assistantMessage>[2]) => withParts(TestData.assistantMessage(sessionID, user.id, overrides))

describe("promptAction: what a replica does with a prompt it is given", () => {
  const table: ReadonlyArray<readonly [string, ReadonlyArray<MessageWithParts>, { noReply?: boolean }, ReturnType<typeof promptAction>]> = [
    ["a prompt not stored yet runs", [], {}, "prompt"],
    ["stored, nothing answered: the owner died before the model answered", [withParts(user)], {}, "resume"],
    ["stored with noReply: nothing to run", [withParts(user)], { noReply: true }, "done"],
    ["an answer cut off mid-step (not completed)", [withParts(user), answer({})], {}, "resume"],
    ["an answer waiting on tool results", [withParts(user), answer({ time: { created: 1, completed: 2 }, finish: "tool-calls" })], {}, "resume"],
    ["a run aborted for the handover", [withParts(user), answer({ time: { created: 1, completed: 2 }, error: { name: "MessageAbortedError", data: { message: "The run was aborted." } } })], {}, "resume"],
    ["a finished answer: never run again", [withParts(user), answer({ time: { created: 1, completed: 2 }, finish: "stop" })], {}, "done"],
    ["a run that failed: not retried by a new owner", [withParts(user), answer({ time: { created: 1, completed: 2 }, error: { name: "ProviderError", data: { message: "down" } } })], {}, "done"],
    ["a later prompt took over the session", [withParts(user), answer({}), withParts(later)], {}, "done"]
  ]
  for (const [name, messages, input, expected] of table) {
    it(name, () => expect(promptAction(messages, { messageID: user.id, ...input })).toBe(expected))
  }
})

describe("clusterChoice: flags over config cluster.*", () => {
  const pg = "postgres://agent@db/agent"
  it("off unless --replica or cluster.enabled", () => {
    expect(clusterChoice({ replica: false }, undefined, pg)).toEqual({ _tag: "Off" })
    expect(clusterChoice({ replica: false }, { enabled: false, port: 5000 }, pg)).toEqual({ _tag: "Off" })
  })
  it("defaults", () => {
    expect(clusterChoice({ replica: true }, undefined, pg)).toEqual({
      _tag: "On",
      settings: {
        databaseUrl: pg,
        host: "127.0.0.1",
        port: 34431,
        listenHost: "127.0.0.1",
        shards: 64,
        prefix: "agent_cluster",
        graceMs: 30_000,
        lockExpirationMs: 10_000
      }
    })
  })
  it("the config, and the flags over it", () => {
    const config = { enabled: true, host: "10.0.0.5", port: 5000, listen_host: "0.0.0.0", shards: 16, prefix: "team", grace_seconds: 5, lock_expiration_seconds: 4 }
    const chosen = clusterChoice({ replica: false, runnerPort: 6000, runnerHost: "10.0.0.9" }, config, pg)
    expect(chosen).toEqual({
      _tag: "On",
      settings: { databaseUrl: pg, host: "10.0.0.9", port: 6000, listenHost: "0.0.0.0", shards: 16, prefix: "team", graceMs: 5_000, lockExpirationMs: 4_000 }
    })
  })
  it("a replica on SQLite is refused, naming the file", () => {
    const chosen = clusterChoice({ replica: true }, undefined, "/home/me/.local/share/agent/agent.db")
    expect(chosen._tag).toBe("Invalid")
    expect(chosen._tag === "Invalid" && chosen.message).toContain("needs the store in PostgreSQL")
    expect(chosen._tag === "Invalid" && chosen.message).toContain("agent.db")
  })
  it("a runner port out of range is refused", () => {
    expect(clusterChoice({ replica: true, runnerPort: 70000 }, undefined, pg)).toEqual({ _tag: "Invalid", message: "--runner-port 70000: expected a port from 1 to 65535" })
  })
})

describe("mergeStatuses: GET /session/status on a replica", () => {
  const busy = { type: "busy" } as const
  const retry = { type: "retry", attempt: 2, message: "rate limited", next: 5 } as const
  const other = "ses_other" as SessionID
  type Rows = Parameters<typeof mergeStatuses>[0]
  const table: ReadonlyArray<readonly [string, Rows, ReadonlyArray<readonly [SessionID, SessionStatus]>, Record<string, SessionStatus>]> = [
    ["another replica's run is listed", [{ sessionID, runner: "b:2", status: busy }], [], { [sessionID]: busy }],
    ["a run here is listed before its row is written", [], [[sessionID, busy]], { [sessionID]: busy }],
    ["this replica's own row of a run that ended here (its delete on the way) is not", [{ sessionID, runner: "a:1", status: busy }], [], {}],
    ["this replica's view wins over its row (retrying now)", [{ sessionID, runner: "a:1", status: busy }], [[sessionID, retry]], { [sessionID]: retry }],
    ["runs on both replicas", [{ sessionID: other, runner: "b:2", status: retry }], [[sessionID, busy]], { [sessionID]: busy, [other]: retry }],
    ["an idle row counts for nothing", [{ sessionID, runner: "b:2", status: { type: "idle" } }], [], {}]
  ]
  for (const [name, rows, local, expected] of table) {
    it(name, () => expect(Object.fromEntries(mergeStatuses(rows, new Map(local), "a:1"))).toEqual(expected))
  }
})

describe("clusterDatabaseUrl: the cluster's connections drop a vanished replica's locks", () => {
  const options = (url: string) => new URL(url).searchParams.get("options")
  const table: ReadonlyArray<readonly [string, string, number, string]> = [
    [
      "the default 10 s expiry: probed after 5 s idle, dropped after 10 s unanswered",
      "postgres://agent:secret@db:5432/agent",
      10_000,
      "-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=1 -c tcp_keepalives_count=3 -c tcp_user_timeout=10000"
    ],
    [
      "options already in the URL are kept first",
      "postgres://agent@db/agent?options=-c%20search_path%3Dt1&sslmode=disable",
      4_000,
      "-c search_path=t1 -c tcp_keepalives_idle=2 -c tcp_keepalives_interval=1 -c tcp_keepalives_count=3 -c tcp_user_timeout=4000"
    ],
    [
      "a sub-second expiry still probes after 1 s",
      "postgresql://db/agent",
      500,
      "-c tcp_keepalives_idle=1 -c tcp_keepalives_interval=1 -c tcp_keepalives_count=3 -c tcp_user_timeout=1000"
    ]
  ]
  for (const [name, url, lockExpirationMs, expected] of table) {
    it(name, () => {
      const result = clusterDatabaseUrl(url, lockExpirationMs)
      expect(options(result)).toBe(expected)
      // The rest of the URL is as given.
      const [given, made] = [new URL(url), new URL(result)]
      expect([made.username, made.password, made.host, made.pathname]).toEqual([given.username, given.password, given.host, given.pathname])
      if (given.searchParams.has("sslmode")) expect(made.searchParams.get("sslmode")).toBe(given.searchParams.get("sslmode"))
    })
  }
})

describe("promptOptions: a prompt's settings as they cross to the owner", () => {
  it("copies the settings that are set, false and 0 included; an unset one stays absent", () => {
    const prompt = { sessionID: "ses_x", agent: "plan", noReply: false, maxSteps: 0, system: undefined, tools: { bash: false } }
    const options = promptOptions(prompt)
    expect(options).toEqual({ agent: "plan", noReply: false, maxSteps: 0, tools: { bash: false } })
    expect(Object.keys(options).sort()).toEqual(["agent", "maxSteps", "noReply", "tools"])
    const bare: { sessionID: string; agent?: string } = { sessionID: "ses_x" }
    expect(promptOptions(bare)).toEqual({})
  })
})
