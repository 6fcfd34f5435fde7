import { MockOpenAIServer } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { agent, events, project, readOnly } from "./AgentProcess.js"

const DATA = "home/.local/share"

describe("a read-only data directory or database", () => {
  it.scopedLive("a data directory that cannot be created is named, with the reason (exit 1); listing still works", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["never"])
      const box = yield* project(server.url)
      fs.mkdirSync(box.path(DATA), { recursive: true })
      yield* readOnly(box.path(DATA))
      const run = yield* agent(box, ["run", "hello"])
      expect(run.code).toBe(1)
      expect(run.stderr).toContain(`cannot create the data directory ${box.path(`${DATA}/agent`)}`)
      expect(run.stderr).toMatch(/read-only/)
      expect(run.stderr).not.toMatch(/ENOENT/)
      expect(server.requests).toHaveLength(0)

      // Nothing to read is not an error, and nothing is created.
      const list = yield* agent(box, ["session", "list"])
      expect(list.code, list.stderr).toBe(0)
      expect(list.stderr).toContain("no sessions in this project yet")
    }))

  it.scopedLive("reading commands work on a database in a read-only directory; run says it cannot write it", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["First answer.", "never"])
      const box = yield* project(server.url)
      const first = yield* agent(box, ["run", "--format", "json", "--title", "Kept", "hello"])
      expect(first.code, first.stderr).toBe(0)
      const sessionID = events(first.stdout).at(-1)!.sessionID as string
      yield* readOnly(box.path(`${DATA}/agent`))

      const list = yield* agent(box, ["session", "list"])
      expect(list.code, list.stderr).toBe(0)
      expect(list.stdout).toContain(sessionID)
      expect(list.stdout).toContain("Kept")
      const show = yield* agent(box, ["session", "show", sessionID])
      expect(show.code, show.stderr).toBe(0)
      expect(show.stdout).toContain("First answer.")
      const exported = yield* agent(box, ["session", "export", sessionID])
      expect(exported.code, exported.stderr).toBe(0)
      expect(JSON.parse(exported.stdout).info.id).toBe(sessionID)

      const run = yield* agent(box, ["run", "-c", "more"])
      expect(run.code).toBe(1)
      expect(run.stderr).toContain(box.path(`${DATA}/agent/agent.db`))
      expect(run.stderr).toMatch(/read-only/)
      expect(server.requests).toHaveLength(1)
    }))

  it.scopedLive("a read-only database file in a writable directory is read too", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start(["First answer.", "never"])
      const box = yield* project(server.url)
      const first = yield* agent(box, ["run", "--format", "json", "hello"])
      expect(first.code, first.stderr).toBe(0)
      const sessionID = events(first.stdout).at(-1)!.sessionID as string
      yield* readOnly(box.path(`${DATA}/agent/agent.db`))
      const list = yield* agent(box, ["session", "list", "--format", "json"])
      expect(list.code, list.stderr).toBe(0)
      expect(JSON.parse(list.stdout).map((session: { id: string }) => session.id)).toEqual([sessionID])
      const run = yield* agent(box, ["run", "-c", "more"])
      expect(run.code).toBe(1)
      expect(run.stderr).toContain(`the database is read-only (${box.path(`${DATA}/agent/agent.db`)} is`)
    }))
})
