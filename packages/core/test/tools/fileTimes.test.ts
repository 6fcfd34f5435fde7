import { describe, expect, it } from "@effect/vitest"
import { FileTimesStore, MAX_SESSIONS } from "../../src/tool/FileTimes.js"

describe("FileTimes", () => {
  it("keeps the sessions that recorded most recently, up to MAX_SESSIONS", () => {
    const file = "/nonexistent/fileTimes/a.txt"
    const times = new FileTimesStore()
    times.record("ses_first", file, 1)
    times.record("ses_kept", file, 2)
    for (let index = 0; index < MAX_SESSIONS - 2; index++) times.record(`ses_${index}`, file, 3)
    times.record("ses_kept", file, 4) // used again: now the most recent
    times.record("ses_new", file, 5) // one more than the bound: the least recent goes
    expect(times.lastRead("ses_first", file)).toBeUndefined()
    expect(times.isStale("ses_first", file, 10)).toBe(false)
    expect(times.lastRead("ses_kept", file)).toBe(4)
    expect(times.lastRead("ses_new", file)).toBe(5)
    expect(times.lastRead("ses_0", file)).toBe(3)
  })

  it("each store is its own: one runtime's reads are not another's", () => {
    const file = "/nonexistent/fileTimes/b.txt"
    const one = new FileTimesStore()
    const other = new FileTimesStore()
    one.record("ses_same", file, 1)
    expect(one.lastRead("ses_same", file)).toBe(1)
    expect(other.lastRead("ses_same", file)).toBeUndefined()
  })
})
