import { TestInstance, TestToolContext } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as fs from "node:fs"
import { Instance } from "../../src/runtime/Instance.js"
import * as Tool from "../../src/tool/Tool.js"
import * as ApplyPatch from "../../src/tools/ApplyPatch.js"

/** apply_patch as Codex defines it: each behaviour through the tool, the patch in, the files and the result out. */

const setup = Effect.gen(function*() {
  const box = yield* TestInstance.sandbox()
  const tool = yield* Effect.provideService(ApplyPatch.make, Instance, box.instance)
  const file = (name: string) => box.path(`project/${name}`)
  const bytes = (name: string) => fs.readFileSync(file(name), "utf8")
  const apply = (patchText: string) =>
    Tool.decodeInput(tool, { patchText }).pipe(
      Effect.flatMap((params) => tool.execute(params, TestToolContext.make({ sessionID: `ses_codex_${Math.random()}` }).context))
    )
  const refused = (patchText: string) =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(apply(patchText))
      if (Exit.isSuccess(exit) || exit.cause._tag !== "Fail") throw new Error("expected the patch to be refused")
      return exit.cause.error.message
    })
  return { box, file, bytes, apply, refused }
})

const patch = (...lines: Array<string>) => ["*** Begin Patch", ...lines, "*** End Patch"].join("\n")

describe("apply_patch: the result", () => {
  it.scopedLive("an updated file always ends with a newline, in the file's style, also when the original had none", () =>
    Effect.gen(function*() {
      const { box, bytes, apply } = yield* setup
      box.write("project/lf.txt", "one\ntwo")
      box.write("project/crlf.txt", "one\r\ntwo")
      const result = yield* apply(patch("*** Update File: lf.txt", "-one", "+ONE", "*** Update File: crlf.txt", "-one", "+ONE"))
      expect(bytes("lf.txt")).toBe("ONE\ntwo\n")
      expect(bytes("crlf.txt")).toBe("ONE\r\ntwo\r\n")
      expect(result.output).toBe("Success. Updated the following files:\nM lf.txt\nM crlf.txt")
    }))

  it.scopedLive("a move without hunks keeps the file as it was, without a final newline if it had none", () =>
    Effect.gen(function*() {
      const { box, file, bytes, apply } = yield* setup
      box.write("project/old.txt", "one\r\ntwo")
      yield* apply(patch("*** Update File: old.txt", "*** Move to: new.txt"))
      expect(bytes("new.txt")).toBe("one\r\ntwo")
      expect(fs.existsSync(file("old.txt"))).toBe(false)
    }))

  it.scopedLive("a hunk that only adds lines goes to the end, and the hunks after it are still found where the last one ended", () =>
    Effect.gen(function*() {
      const { box, bytes, apply } = yield* setup
      box.write("project/a.txt", "alpha\nbeta\ngamma\ndelta\n")
      yield* apply(patch("*** Update File: a.txt", "@@", "+omega", "@@", " alpha", "-beta", "+BETA", "@@", "-delta", "+DELTA"))
      expect(bytes("a.txt")).toBe("alpha\nBETA\ngamma\nDELTA\nomega\n")
    }))

  it.scopedLive("a hunk that only adds lines after an @@ line goes right after that line", () =>
    Effect.gen(function*() {
      const { box, bytes, apply } = yield* setup
      box.write("project/a.py", "def f():\n    return 1\n\ndef g():\n    return 2\n")
      yield* apply(patch("*** Update File: a.py", "@@ def g():", "+    \"\"\"Doc.\"\"\""))
      expect(bytes("a.py")).toBe("def f():\n    return 1\n\ndef g():\n    \"\"\"Doc.\"\"\"\n    return 2\n")
    }))
})

describe("apply_patch: matching what models type", () => {
  it.scopedLive("an @@ line repeated as the hunk's first context line, and unified-diff line numbers after @@, are understood", () =>
    Effect.gen(function*() {
      const { box, bytes, apply } = yield* setup
      box.write("project/a.py", "def f():\n    return 1\n\ndef g():\n    return 1\n")
      yield* apply(patch("*** Update File: a.py", "@@ def g():", " def g():", "-    return 1", "+    return 2"))
      expect(bytes("a.py")).toBe("def f():\n    return 1\n\ndef g():\n    return 2\n")
      yield* apply(patch("*** Update File: a.py", "@@ -4,2 +4,2 @@ def g():", "-    return 2", "+    return 3"))
      expect(bytes("a.py")).toBe("def f():\n    return 1\n\ndef g():\n    return 3\n")
      yield* apply(patch("*** Update File: a.py", "@@ -1,2 +1,2 @@", "-    return 1", "+    return 0"))
      expect(bytes("a.py")).toBe("def f():\n    return 0\n\ndef g():\n    return 3\n")
    }))

  it.scopedLive("ASCII - \" ' in the patch find the file's dashes (en, em, non-breaking hyphen, minus) and curly quotes; kept lines stay as they were", () =>
    Effect.gen(function*() {
      const { box, bytes, apply } = yield* setup
      const original = [
        "Range: 1\u20132 \u2014 see \u201Cnotes\u201D",
        "It\u2019s a non\u2011breaking hyphen",
        "total = a \u2212 b",
        "end"
      ].join("\n") + "\n"
      box.write("project/doc.md", original)
      yield* apply(
        patch(
          "*** Update File: doc.md",
          " Range: 1-2 - see \"notes\"",
          " It's a non-breaking hyphen",
          "-total = a - b",
          "+total = a + b"
        )
      )
      // The context lines keep their typography; only the replaced line is what the patch says.
      expect(bytes("doc.md")).toBe(
        ["Range: 1\u20132 \u2014 see \u201Cnotes\u201D", "It\u2019s a non\u2011breaking hyphen", "total = a + b", "end"].join("\n") + "\n"
      )
    }))

  it.scopedLive("canonically equivalent Unicode matches: NFD in the file, NFC in the patch, and the other way round", () =>
    Effect.gen(function*() {
      const { box, bytes, apply } = yield* setup
      const nfd = "cafe\u0301 cre\u0300me" // e + combining accents
      const nfc = "caf\u00E9 cr\u00E8me"
      expect(nfd).not.toBe(nfc)
      expect(nfd.normalize("NFC")).toBe(nfc)
      box.write("project/nfd.txt", `menu\n${nfd}\n`)
      box.write("project/nfc.txt", `menu\n${nfc}\n`)
      yield* apply(
        patch("*** Update File: nfd.txt", " menu", `-${nfc}`, "+tea", "*** Update File: nfc.txt", "@@ menu", `-${nfd}`, "+tea")
      )
      expect(bytes("nfd.txt")).toBe("menu\ntea\n")
      expect(bytes("nfc.txt")).toBe("menu\ntea\n")
    }))

  it.scopedLive("trailing and surrounding whitespace differences match, but an exact match anywhere after wins over a fuzzy one before it", () =>
    Effect.gen(function*() {
      const { box, bytes, apply } = yield* setup
      box.write("project/ws.txt", "value = 1   \nother\nvalue = 1\n")
      yield* apply(patch("*** Update File: ws.txt", "-value = 1", "+value = 2"))
      // Codex's order: exact first (line 3), whitespace-tolerant only when there is no exact match.
      expect(bytes("ws.txt")).toBe("value = 1   \nother\nvalue = 2\n")
      yield* apply(patch("*** Update File: ws.txt", "-value = 1", "+value = 3"))
      expect(bytes("ws.txt")).toBe("value = 3\nother\nvalue = 2\n")
      box.write("project/indent.txt", "\tif (x) {\n\t\trun()\n\t}\n")
      yield* apply(patch("*** Update File: indent.txt", "   if (x) {", "-    run()", "+\t\tgo()"))
      expect(bytes("indent.txt")).toBe("\tif (x) {\n\t\tgo()\n\t}\n")
    }))

  it.scopedLive("a hunk that matches nowhere, even folded, changes no file and names the lines it looked for", () =>
    Effect.gen(function*() {
      const { box, bytes, refused } = yield* setup
      box.write("project/a.txt", "one \u2013 two\n")
      box.write("project/b.txt", "keep\n")
      const message = yield* refused(patch("*** Update File: b.txt", "-keep", "+changed", "*** Update File: a.txt", "-one + two", "+x"))
      expect(message).toMatch(/^Patch not applied, no file was changed\. line 6: could not find the lines of this hunk in .*a\.txt:\n  one \+ two$/)
      expect(bytes("a.txt")).toBe("one \u2013 two\n")
      expect(bytes("b.txt")).toBe("keep\n")
    }))
})

describe("apply_patch: line endings", () => {
  it.scopedLive("a CRLF file gets CRLF on added lines and keeps it everywhere", () =>
    Effect.gen(function*() {
      const { file, apply } = yield* setup
      fs.writeFileSync(file("win.txt"), "\uFEFFfirst\r\nsecond\r\nthird")
      yield* apply(patch("*** Update File: win.txt", " second", "+inserted", "@@", "+appended"))
      expect(fs.readFileSync(file("win.txt"), "utf8")).toBe("\uFEFFfirst\r\nsecond\r\ninserted\r\nthird\r\nappended\r\n")
    }))

  it.scopedLive("in a file with mixed endings, every line the patch does not change keeps its own ending (context lines too)", () =>
    Effect.gen(function*() {
      const { file, apply } = yield* setup
      // Mostly LF: one CRLF line in the middle, a CRLF context line next to the change.
      fs.writeFileSync(file("mixed.txt"), "one\ntwo\r\nthree\nfour\r\nfive\nsix\n")
      const result = yield* apply(patch("*** Update File: mixed.txt", " two", "-three", "+THREE", " four", "@@", "+seven"))
      expect(fs.readFileSync(file("mixed.txt"), "utf8")).toBe("one\ntwo\r\nTHREE\nfour\r\nfive\nsix\nseven\n")
      // The diff shown is over lines, not endings: only the changed line and the added one.
      expect(result.metadata?.files).toMatchObject([{ additions: 2, deletions: 1 }])
      // Mostly CRLF: the added line is CRLF, the lone LF line stays LF.
      fs.writeFileSync(file("mostly-crlf.txt"), "a\r\nb\nc\r\nd\r\n")
      yield* apply(patch("*** Update File: mostly-crlf.txt", " b", "-c", "+C"))
      expect(fs.readFileSync(file("mostly-crlf.txt"), "utf8")).toBe("a\r\nb\nC\r\nd\r\n")
    }))
})

describe("apply_patch: the format, as leniently as Codex reads it", () => {
  it.scopedLive("headers padded with spaces, blank lines after *** End of File and between sections are accepted", () =>
    Effect.gen(function*() {
      const { box, bytes, apply } = yield* setup
      box.write("project/a.txt", "x\ny\nlast\n")
      box.write("project/b.txt", "old\n")
      yield* apply(
        [
          "*** Begin Patch ",
          "  *** Update File: a.txt",
          "@@",
          "-last",
          "+LAST",
          "*** End of File",
          "",
          "",
          "  *** Update File: b.txt",
          "-old",
          "+new",
          " *** End Patch"
        ].join("\n")
      )
      expect(bytes("a.txt")).toBe("x\ny\nLAST\n")
      expect(bytes("b.txt")).toBe("new\n")
    }))

  it.scopedLive("blank lines before a hunk are skipped, and blank lines closing a hunk need not be in the file", () =>
    Effect.gen(function*() {
      const { box, bytes, apply } = yield* setup
      box.write("project/a.txt", "one\ntwo\nthree\nfour\n")
      yield* apply(patch("*** Update File: a.txt", "", "@@", " one", "-two", "+TWO", "", "", "@@", "-four", "+FOUR", ""))
      expect(bytes("a.txt")).toBe("one\nTWO\nthree\nFOUR\n")
    }))

  it.scopedLive("Add File over an existing CRLF file writes its lines with CRLF", () =>
    Effect.gen(function*() {
      const { file, apply } = yield* setup
      fs.writeFileSync(file("win.txt"), "old\r\n")
      yield* apply(patch("*** Add File: win.txt", "+new", "+lines"))
      expect(fs.readFileSync(file("win.txt"), "utf8")).toBe("new\r\nlines\r\n")
    }))

  it.scopedLive("a heredoc wrapper is accepted with matching quotes and refused, changing nothing, with mismatched ones", () =>
    Effect.gen(function*() {
      const { box, bytes, apply, refused } = yield* setup
      box.write("project/a.txt", "one\n")
      const body = patch("*** Update File: a.txt", "-one", "+two")
      yield* apply(`<<"EOF"\n${body}\nEOF\n`)
      expect(bytes("a.txt")).toBe("two\n")
      const message = yield* refused(`apply_patch <<'EOF"\n${patch("*** Update File: a.txt", "-two", "+three")}\nEOF`)
      expect(message).toBe(
        "Invalid patch: line 1: the heredoc start \"apply_patch <<'EOF\\\"\" has mismatched quotes: write <<'EOF' or <<EOF, " +
          "or send the patch alone, from \"*** Begin Patch\" to \"*** End Patch\""
      )
      expect(yield* refused(`<<EOF\n${body}\nEND`)).toBe('Invalid patch: line 7: the heredoc started on line 1 must end with a line "EOF"')
      expect(bytes("a.txt")).toBe("two\n")
    }))
})
