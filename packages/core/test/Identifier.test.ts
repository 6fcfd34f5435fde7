import { MessageID, SessionID } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Identifier from "../src/runtime/Identifier.js"

describe("Identifier", () => {
  it("ascending ids sort in creation order, even within one millisecond", () => {
    const ids = Array.from({ length: 5000 }, () => Identifier.ascending("message", 1_700_000_000_000))
    expect([...ids].sort()).toEqual(ids)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it("descending ids sort newest first", () => {
    const older = Identifier.descending("session", 1_700_000_000_000)
    const newer = Identifier.descending("session", 1_700_000_100_000)
    expect([newer, older].sort()).toEqual([newer, older])
  })

  it("stay monotonic when the clock goes backwards", () => {
    const first = Identifier.ascending("part", 1_800_000_000_000)
    const second = Identifier.ascending("part", 1_700_000_000_000)
    expect(second > first).toBe(true)
  })

  it("carry their prefix and decode with the domain schemas", () => {
    const session = Identifier.descending("session")
    const message = Identifier.ascending("message")
    expect(session.startsWith("ses_")).toBe(true)
    expect(session).toHaveLength(30)
    expect(Schema.is(SessionID)(session)).toBe(true)
    expect(Schema.is(MessageID)(message)).toBe(true)
    expect(Schema.is(MessageID)(session)).toBe(false)
  })

  it("encode their creation time", () => {
    const at = Date.UTC(2030, 0, 1)
    expect(Identifier.timestamp(Identifier.ascending("message", at))).toBe(at)
    expect(Identifier.timestamp(Identifier.descending("session", at))).toBe(at)
  })
})
