import { describe, expect, it } from "@effect/vitest"
import * as InstructionLimits from "../src/context/InstructionLimits.js"

const entry = (source: string, text: string, size = Buffer.byteLength(text)) => ({ source, text, size })

describe("InstructionLimits", () => {
  it.each([
    ["fits", "abc", 5, "abc"],
    ["ASCII cut", "abcdef", 4, "abcd"],
    ["never inside a 2-byte character", "aéé", 4, "aé"],
    ["never inside a 4-byte character", "a😀b", 3, "a"],
    ["a 4-byte character that just fits", "a😀b", 5, "a😀"],
    ["nothing", "abc", 0, ""]
  ])("headBytes: %s", (_, text, bytes, expected) => {
    expect(InstructionLimits.headBytes(text, bytes)).toBe(expected)
    expect(Buffer.byteLength(InstructionLimits.headBytes(text, bytes))).toBeLessThanOrEqual(bytes)
  })

  it("fit: files under both caps are passed as they are, with no cut", () => {
    const entries = [entry("A", "x".repeat(10)), entry("B", "y".repeat(10))]
    const fitted = InstructionLimits.fit(entries, { maxBytes: 10, maxTotalBytes: 20 })
    expect(fitted.entries).toEqual(entries)
    expect(fitted.cuts).toEqual([])
  })

  it("fit: a file larger than the per-file cap (read only in part) is cut to it, and says so", () => {
    const fitted = InstructionLimits.fit([entry("A", "x".repeat(12), 1_000)], { maxBytes: 10, maxTotalBytes: 100 })
    expect(fitted.cuts).toEqual([{ source: "A", size: 1_000, kept: 10, limit: expect.stringContaining("instruction_limits.max_bytes") }])
    expect(fitted.entries[0]!.text).toMatch(/^x{10}\n\n\[Cut here: A has 1000 bytes, and only its first 10 bytes are included/)
  })

  it("fit: the total cap gives later files what is left, then nothing", () => {
    const entries = [entry("A", "a".repeat(8)), entry("B", "b".repeat(8)), entry("C", "c".repeat(8))]
    const fitted = InstructionLimits.fit(entries, { maxBytes: 10, maxTotalBytes: 12 })
    expect(fitted.cuts.map((cut) => [cut.source, cut.kept])).toEqual([["B", 4], ["C", 0]])
    expect(fitted.entries[0]!.text).toBe("a".repeat(8))
    expect(fitted.entries[1]!.text).toMatch(/^b{4}\n\n\[Cut here: B/)
    expect(fitted.entries[2]!.text).toMatch(/^\[Cut here: C has 8 bytes, and only its first 0 bytes are included \(the cap of 12 bytes for all/)
  })
})
