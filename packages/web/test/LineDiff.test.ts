import { describe, expect, it } from "@effect/vitest"
import { diffLines, hunkHeader, hunks, splitRows } from "../src/LineDiff.js"

const render = (before: string, after: string) =>
  diffLines(before, after).map((line) => `${line.kind === "add" ? "+" : line.kind === "del" ? "-" : " "}${line.text}`)

describe("diffLines", () => {
  const cases: ReadonlyArray<[string, string, string, ReadonlyArray<string>]> = [
    ["equal", "a\nb\n", "a\nb\n", [" a", " b"]],
    ["added file", "", "x\ny\n", ["+x", "+y"]],
    ["deleted file", "x\n", "", ["-x"]],
    ["one line changed", "a\nb\nc\n", "a\nB\nc\n", [" a", "-b", "+B", " c"]],
    ["insert in the middle", "a\nc\n", "a\nb\nc\n", [" a", "+b", " c"]],
    ["no newline at the end", "a", "a\nb", [" a", "+b"]],
    ["moved line", "a\nb\nc\n", "b\nc\na\n", ["-a", " b", " c", "+a"]]
  ]
  for (const [name, before, after, expected] of cases) it(name, () => expect(render(before, after)).toEqual(expected))

  it("is a valid edit script on random texts: old lines in order give before, new ones give after", () => {
    let seed = 7
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
    for (let round = 0; round < 200; round++) {
      const make = () => Array.from({ length: Math.floor(random() * 12) }, () => "abcd"[Math.floor(random() * 4)]!).join("\n")
      const before = make()
      const after = make()
      const lines = diffLines(before, after)
      expect(lines.filter((line) => line.kind !== "add").map((line) => line.text).join("\n")).toBe(before)
      expect(lines.filter((line) => line.kind !== "del").map((line) => line.text).join("\n")).toBe(after)
    }
  })
})

describe("hunks and rows", () => {
  const before = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join("\n")
  const after = before.replace("line 3", "line three").replace("line 18", "line eighteen")
  it("groups changes with 3 lines of context; far apart changes are two hunks", () => {
    const parts = hunks(diffLines(before, after))
    expect(parts.map(hunkHeader)).toEqual(["@@ -1,6 +1,6 @@", "@@ -15,6 +15,6 @@"])
  })
  it("pairs removed and added lines side by side", () => {
    const rows = splitRows(diffLines("a\nb\nc\n", "a\nB\nC\nD\n"))
    expect(rows.map((row) => [row.left?.text ?? "", row.right?.text ?? ""])).toEqual([["a", "a"], ["b", "B"], ["c", "C"], ["", "D"]])
  })
})
