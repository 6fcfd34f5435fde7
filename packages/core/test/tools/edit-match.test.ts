import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as EditMatch from "../../src/tool/EditMatch.js"

const { strategies } = EditMatch

const matched = (content: string, range: EditMatch.Range) => content.slice(range.start, range.end)

/** `EditMatch.replace`, its result as the text, the deciding strategy and the count. */
const replaced = (...args: Parameters<typeof EditMatch.replace>) =>
  Either.map(EditMatch.replace(...args), ({ content, count, strategy }) => ({ content, strategy, count }))

/** The cascade picks `name`, and every strategy before it finds nothing. */
const decidedBy = (name: EditMatch.StrategyName, content: string, find: string) => {
  const located = EditMatch.locate(content, find)
  expect(located?.strategy).toBe(name)
  const position = strategies.findIndex((strategy) => strategy.name === name)
  for (const earlier of strategies.slice(0, position)) {
    expect({ strategy: earlier.name, found: earlier.find(content, find) }).toEqual({ strategy: earlier.name, found: [] })
  }
  return located!
}

describe("EditMatch cascade", () => {
  it("has OpenCode's replacers, block-anchor after the line-by-line ones, and unicode-normalized", () => {
    expect(strategies.map((strategy) => strategy.name)).toEqual([
      "exact",
      "line-trimmed",
      "whitespace-normalized",
      "indentation-flexible",
      "escape-normalized",
      "unicode-normalized",
      "trimmed-boundary",
      "block-anchor",
      "context-aware",
      "multi-occurrence"
    ])
  })

  it("exact: the text as given", () => {
    const content = "const a = 1\nconst b = 2\n"
    const located = decidedBy("exact", content, "const b = 2")
    expect(located.ranges.map((range) => matched(content, range))).toEqual(["const b = 2"])
  })

  it("line-trimmed: whole lines equal once trimmed", () => {
    const content = "if (x) {\n    a()\n    b()\n}\n"
    const located = decidedBy("line-trimmed", content, "  a()\n  b()")
    expect(located.ranges.map((range) => matched(content, range))).toEqual(["    a()\n    b()"])
  })

  it("line-trimmed: a trailing newline in the search takes the line's newline too", () => {
    const content = "one\n  two  \nthree\n"
    // (and the replacement is indented as the line was)
    expect(replaced(content, "two\n", "2\n")).toEqual(Either.right({ content: "one\n  2\nthree\n", strategy: "line-trimmed", count: 1 }))
  })

  it("block-anchor: first and last lines anchor a block whose middle is similar", () => {
    const content = "// math\nfunction add(a, b) {\n  const sum = a + b\n  return sum\n}\n"
    const find = "function add(a, b) {\n  const sum = a + b // add\n  return sum\n}"
    const located = decidedBy("block-anchor", content, find)
    expect(located.ranges.map((range) => matched(content, range))).toEqual([
      "function add(a, b) {\n  const sum = a + b\n  return sum\n}"
    ])
  })

  it("block-anchor: a middle that is mostly different is not accepted", () => {
    const content = "function add(a, b) {\n  log('adding numbers now')\n  return a - b * 100\n}\n"
    const find = "function add(a, b) {\n  const sum = a + b\n  return sum\n}"
    expect(EditMatch.blockAnchor.find(content, find)).toEqual([])
  })

  it("block-anchor: a search whose first and last lines are everywhere gives up instead of comparing every block", () => {
    // 34 000 lines, every third one "}": a 100-line search from "}" to "}" has ~11 000 starts and
    // ~70 candidate ends each (minutes of edit distances before the work budget).
    const content = Array.from({ length: 34_000 }, (_, index) => (index % 3 === 0 ? "}" : `  stmt ${index}`)).join("\n")
    const find = ["}", ...Array.from({ length: 100 }, (_, index) => `  other ${index}`), "}"].join("\n")
    expect(EditMatch.blockAnchor.find(content, find)).toEqual([])
    expect(replaced(content, find, "x")).toEqual(Either.left({ _tag: "NotFound" }))
  }, 20_000)

  it("replaceAll of 34 000 exact matches replaces each once", () => {
    const content = Array.from({ length: 34_000 }, (_, index) => `v${index} = oldName(${index})`).join("\n")
    expect(replaced(content, "oldName", "newName", true)).toEqual(Either.right({ content: content.replaceAll("oldName", "newName"), strategy: "exact", count: 34_000 }))
  }, 20_000)

  it("whitespace-normalized: runs of whitespace count as one, inside a line", () => {
    const content = "const total = price  *  count;\n"
    const located = decidedBy("whitespace-normalized", content, "total = price * count")
    expect(located.ranges.map((range) => matched(content, range))).toEqual(["total = price  *  count"])
  })

  it("whitespace-normalized: line by line for a longer search", () => {
    const content = "a  =  1\nb\t=\t2\n"
    const located = decidedBy("whitespace-normalized", content, "a = 1\nb = 2")
    expect(located.ranges.map((range) => matched(content, range))).toEqual(["a  =  1\nb\t=\t2"])
  })

  it("indentation-flexible: singles out the block whose relative indentation matches when line-trimmed finds several", () => {
    const content = "function a() {\n  if (ok) {\n    run()\n  }\n}\nfunction b() {\n  if (ok) {\n  run()\n  }\n}\n"
    const find = "if (ok) {\n  run()\n}"
    // line-trimmed (and every strategy before indentation-flexible that finds anything) sees both blocks
    expect(EditMatch.lineTrimmed.find(content, find)).toHaveLength(2)
    expect(EditMatch.exact.find(content, find)).toEqual([])
    const found = EditMatch.indentationFlexible.find(content, find)
    expect(found.map((range) => matched(content, range))).toEqual(["  if (ok) {\n    run()\n  }"])
    // The replacement, written at oldString's indentation, is shifted to the block's.
    expect(replaced(content, find, "if (ok) {\n  go()\n}")).toEqual(
      Either.right({
        content: "function a() {\n  if (ok) {\n    go()\n  }\n}\nfunction b() {\n  if (ok) {\n  run()\n  }\n}\n",
        strategy: "indentation-flexible",
        count: 1
      })
    )
  })

  it("indentation-flexible: equal once the common indentation is removed (a subset of line-trimmed)", () => {
    const content = "class A {\n  if (a) {\n    b()\n  }\n}\n"
    const find = "if (a) {\n  b()\n}"
    const found = EditMatch.indentationFlexible.find(content, find)
    expect(found.map((range) => matched(content, range))).toEqual(["  if (a) {\n    b()\n  }"])
    // Relative indentation still matters to it, unlike to line-trimmed.
    expect(EditMatch.indentationFlexible.find(content, "if (a) {\nb()\n}")).toEqual([])
    expect(EditMatch.lineTrimmed.find(content, "if (a) {\nb()\n}")).toHaveLength(1)
    // Everything it accepts, line-trimmed (earlier in the cascade) accepts already.
    expect(EditMatch.lineTrimmed.find(content, find)).toEqual(found)
    expect(EditMatch.locate(content, find)?.strategy).toBe("line-trimmed")
  })

  it("escape-normalized: over-escaped quotes and newlines", () => {
    const content = "console.log(\"hi\")\nnext()\n"
    const located = decidedBy("escape-normalized", content, "console.log(\\\"hi\\\")\\nnext()")
    expect(located.ranges.map((range) => matched(content, range))).toEqual(["console.log(\"hi\")\nnext()"])
  })

  it("trimmed-boundary: blank lines around a fragment", () => {
    const content = "let x = compute() + 1\n"
    const located = decidedBy("trimmed-boundary", content, "\n\ncompute()\n\n")
    expect(located.ranges.map((range) => matched(content, range))).toEqual(["compute()"])
    // The same surrounding whitespace is dropped from the replacement.
    expect(replaced(content, "\n\ncompute()\n\n", "\n\nrun()\n\n")).toEqual(
      Either.right({ content: "let x = run() + 1\n", strategy: "trimmed-boundary", count: 1 })
    )
  })

  it("context-aware: anchors plus at least half of the middle lines", () => {
    const content = "function main() {\n  setup()\n  teardown()\n}\n"
    const find = "function main() {\n  setup()\n  somethingCompletelyDifferentHere()\n}"
    const located = decidedBy("context-aware", content, find)
    expect(located.ranges.map((range) => matched(content, range))).toEqual(["function main() {\n  setup()\n  teardown()\n}"])
    // Less than half of the middle matching is not enough.
    expect(EditMatch.contextAware.find(content, "function main() {\n  one()\n  two()\n}")).toEqual([])
  })

  it("multi-occurrence: every exact occurrence (exact, earlier, always sees them first)", () => {
    const content = "a b a b a"
    const found = EditMatch.multiOccurrence.find(content, "a")
    expect(found.map((range) => range.start)).toEqual([0, 4, 8])
    expect(EditMatch.exact.find(content, "a")).toEqual(found)
    expect(EditMatch.locate(content, "a")?.strategy).toBe("exact")
    // It takes occurrences that do not overlap, as a replace-all does.
    expect(EditMatch.multiOccurrence.find("aaa", "aa")).toHaveLength(1)
  })
})

describe("EditMatch.replace", () => {
  it("identical strings are refused", () => {
    expect(replaced("abc", "b", "b")).toEqual(Either.left({ _tag: "Identical" }))
  })

  it("nothing found", () => {
    expect(replaced("alpha\nbeta\n", "gamma", "delta")).toEqual(Either.left({ _tag: "NotFound" }))
  })

  it("more than one match without replaceAll is refused", () => {
    expect(replaced("x = 1\ny = 2\nx = 1\n", "x = 1", "x = 3")).toEqual(
      Either.left({ _tag: "MultipleMatches", strategy: "exact", count: 2, lines: [1, 3] })
    )
    // Overlapping occurrences are ambiguous too.
    expect(replaced("aaa", "aa", "b")).toMatchObject(Either.left({ _tag: "MultipleMatches" }))
  })

  it("places found by every strategy alike stay ambiguous; the error names the first strategy's count", () => {
    const content = "  foo()\n    foo()\n"
    expect(replaced(content, "foo()", "bar()")).toEqual(Either.left({ _tag: "MultipleMatches", strategy: "exact", count: 2, lines: [1, 2] }))
  })

  it("several exact matches stay an error naming their lines: no fuzzy strategy picks one of them", () => {
    // "x = 1" occurs twice, but only once as a whole line: OpenCode would let line-trimmed pick that one.
    const content = "const max = 1\n  x = 1\n"
    expect(EditMatch.exact.find(content, "x = 1")).toHaveLength(2)
    expect(EditMatch.lineTrimmed.find(content, "x = 1")).toHaveLength(1)
    expect(replaced(content, "x = 1", "x = 2")).toEqual(Either.left({ _tag: "MultipleMatches", strategy: "exact", count: 2, lines: [1, 2] }))
  })

  it("a fuzzy strategy that finds several places passes to the next, which may single out one (as in OpenCode)", () => {
    const content = "function a() {\n  if (ok) {\n    run()\n  }\n}\nfunction b() {\n  if (ok) {\n  run()\n  }\n}\n"
    const find = "if (ok) {\n  run()\n}"
    expect(EditMatch.lineTrimmed.find(content, find)).toHaveLength(2)
    expect(replaced(content, find, "if (ok) {\n  go()\n}")).toMatchObject(Either.right({ strategy: "indentation-flexible", count: 1 }))
    // Where none singles one out, the error names the lines the first one found.
    expect(EditMatch.replace(content, "if (ok) {\n      run()\n}", "x")).toEqual(
      Either.left({ _tag: "MultipleMatches", strategy: "line-trimmed", count: 2, lines: [2, 7] })
    )
  })

  it("a strategy's single place whose text occurs elsewhere too is still ambiguous", () => {
    // multi-occurrence counts one (non-overlapping) "aa" in "aaa", but the text sits at 0 and at 1
    expect(EditMatch.multiOccurrence.find("aaa", "aa")).toHaveLength(1)
    expect(replaced("aaa", "aa", "b")).toMatchObject(Either.left({ _tag: "MultipleMatches" }))
  })

  it("replaceAll replaces every match", () => {
    expect(replaced("x = 1\ny = 2\nx = 1\n", "x = 1", "x = 3", true)).toEqual(
      Either.right({ content: "x = 3\ny = 2\nx = 3\n", strategy: "exact", count: 2 })
    )
  })

  it("replaceAll with a tolerant strategy replaces each differently indented match, each at its own indentation", () => {
    const content = "a {\n  call(1)\n  end()\n}\nb {\n    call(1)\n    end()\n}\n"
    expect(replaced(content, "call(1)\nend()", "call(2)\nend()", true)).toEqual(
      Either.right({ content: "a {\n  call(2)\n  end()\n}\nb {\n    call(2)\n    end()\n}\n", strategy: "line-trimmed", count: 2 })
    )
  })

  it("a replacement written at the file's indentation, or matched lines shifted unevenly, are not re-indented", () => {
    const content = "def f():\n    if x:\n        return 1\n"
    expect(replaced(content, "if x:\n    return 1", "    if x:\n        return 2")).toEqual(
      Either.right({ content: "def f():\n    if x:\n        return 2\n", strategy: "line-trimmed", count: 1 })
    )
    expect(replaced(content, "if x:\n  return 1", "if x:\n  return 2")).toEqual(
      Either.right({ content: "def f():\nif x:\n  return 2\n", strategy: "line-trimmed", count: 1 })
    )
  })

  it("a unique tolerant match is replaced", () => {
    const content = "if (x) {\n    a()\n    b()\n}\n"
    expect(replaced(content, "  a()\n  b()", "    c()")).toEqual(
      Either.right({ content: "if (x) {\n    c()\n}\n", strategy: "line-trimmed", count: 1 })
    )
  })

  it("locate with lineAligned ignores matches inside a line", () => {
    const content = "foofoo\nfoo\n"
    const located = EditMatch.locate(content, "foo", { lineAligned: true })
    expect(located?.ranges).toEqual([{ start: 7, end: 10 }])
    expect(EditMatch.locate(content, "foo", { from: 8, lineAligned: true })).toBeUndefined()
  })
})
