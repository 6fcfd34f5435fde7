import { describe, expect, it } from "@effect/vitest"
import * as FileTimes from "../../src/tool/FileTimes.js"

describe("FileTimes", () => {
  it("keeps the sessions that recorded most recently, up to MAX_SESSIONS", () => {
    const file = "/nonexistent/fileTimes/a.txt"
    FileTimes.record("ses_first", file, 1)
    FileTimes.record("ses_kept", file, 2)
    for (let index = 0; index < FileTimes.MAX_SESSIONS - 2; index++) FileTimes.record(`ses_${index}`, file, 3)
    FileTimes.record("ses_kept", file, 4) // used again: now the most recent
    FileTimes.record("ses_new", file, 5) // one more than the bound: the least recent goes
    expect(FileTimes.lastRead("ses_first", file)).toBeUndefined()
    expect(FileTimes.isStale("ses_first", file, 10)).toBe(false)
    expect(FileTimes.lastRead("ses_kept", file)).toBe(4)
    expect(FileTimes.lastRead("ses_new", file)).toBe(5)
    expect(FileTimes.lastRead("ses_0", file)).toBe(3)
  })
})
