import { describe, expect, it } from "@effect/vitest"
import { applyPatch, createTwoFilesPatch } from "diff"
import fc from "fast-check"
import { isUtf8 } from "node:buffer"
import * as FileDiff from "../../src/tool/FileDiff.js"
import * as LineDiff from "../../src/tool/LineDiff.js"
import * as TextEncoding from "../../src/tool/TextEncoding.js"

/** Texts of a few lines from a small alphabet (so lines repeat), with or without a final newline. */
const text = fc
  .tuple(fc.array(fc.constantFrom("a", "b", "c", "", "d e", "}"), { maxLength: 30 }), fc.boolean())
  .map(([lines, newline]) => (lines.length === 0 ? "" : lines.join("\n") + (newline ? "\n" : "")))

/** Both sides of the runs, put back together. */
const sides = (runs: ReadonlyArray<LineDiff.Run>) => ({
  before: runs.filter((run) => run.kind !== "added").flatMap((run) => run.lines).join(""),
  after: runs.filter((run) => run.kind !== "removed").flatMap((run) => run.lines).join("")
})

describe("FileDiff.compare", () => {
  it("gives exactly jsdiff's patch for inputs Myers handles (what the tools showed before)", () => {
    fc.assert(
      fc.property(text, text, (before, after) => {
        expect(FileDiff.compare("f.txt", before, after).diff).toBe(createTwoFilesPatch("f.txt", "f.txt", before, after))
      }),
      { numRuns: 500 }
    )
    expect(FileDiff.compare("a.txt", "x\n", "y\n", "b.txt").diff).toBe(createTwoFilesPatch("a.txt", "b.txt", "x\n", "y\n"))
  })

  it("past Myers' budget (patience, pairing) still gives a diff whose sides are the two texts and that applies", () => {
    const lines = Array.from({ length: 5_000 }, (_, index) => `line ${index % 700} of ${index % 3}`)
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(4_999), fc.constantFrom("edit", "drop", "add")), { minLength: 600, maxLength: 900 }), (edits) => {
        const changed = [...lines]
        for (const [at, kind] of edits) {
          if (kind === "edit") changed[at % changed.length] = `changed ${at}`
          else if (kind === "drop") changed.splice(at % changed.length, 1)
          else changed.splice(at % changed.length, 0, `added ${at}`)
        }
        const before = lines.join("\n") + "\n"
        const after = changed.join("\n")
        expect(sides(LineDiff.diff(before, after))).toEqual({ before, after })
        // The unified diff built from those runs applies: it is a real patch.
        expect(applyPatch(before, FileDiff.compare("f.txt", before, after).diff)).toBe(after)
      }),
      { numRuns: 20 }
    )
  })

  it("34 000 changed lines of a 1.6 MB file: the right counts, and a diff cut to its first hunks", () => {
    const before = Array.from({ length: 34_000 }, (_, index) => `const value${index} = computeOldName(input${index}) // x`).join("\n") + "\n"
    const after = before.replaceAll("computeOldName", "computeNewName")
    const change = FileDiff.compare("big.ts", before, after)
    expect([change.additions, change.deletions]).toEqual([34_000, 34_000])
    expect(change.diff.length).toBeLessThan(FileDiff.MAX_DIFF_CHARS + 1_000)
    expect(change.diff).toMatch(/the whole change adds 34000 lines and removes 34000\)\n$/)
    // Scattered changes are found exactly (patience), not as one block.
    const scattered = before.replace(/value(\d*)77 /g, "VALUE$177 ")
    const sparse = FileDiff.compare("big.ts", before, scattered)
    expect([sparse.additions, sparse.deletions]).toEqual([340, 340])
  })
})

describe("TextEncoding.Utf8Check", () => {
  it("agrees with isUtf8 on the whole, however the bytes are cut into chunks", () => {
    const piece = fc.oneof(
      fc.string({ unit: "grapheme", maxLength: 6 }).map((value) => Buffer.from(value)),
      fc.uint8Array({ maxLength: 3 }).map((value) => Buffer.from(value))
    )
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), fc.array(fc.nat(40), { maxLength: 6 }), (pieces, cuts) => {
        const bytes = Buffer.concat(pieces)
        const check = new TextEncoding.Utf8Check()
        let at = 0
        let valid = true
        for (const cut of [...cuts].sort((a, b) => a - b)) {
          valid = check.push(bytes.subarray(at, Math.max(at, cut))) && valid
          at = Math.max(at, cut)
        }
        valid = check.push(bytes.subarray(at)) && valid
        expect(valid && check.end()).toBe(isUtf8(bytes))
      }),
      { numRuns: 1_000 }
    )
  })
})
