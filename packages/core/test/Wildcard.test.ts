import { describe, expect, it } from "@effect/vitest"
import * as Wildcard from "../src/runtime/Wildcard.js"

describe("Wildcard.match", () => {
  it("star crosses slashes", () => {
    expect(Wildcard.match("src/deep/file.ts", "src/*")).toBe(true)
    expect(Wildcard.match("src/deep/file.ts", "*.ts")).toBe(true)
    expect(Wildcard.match("src/deep/file.ts", "*.js")).toBe(false)
  })

  it("double star is just two stars", () => {
    expect(Wildcard.match("a/b/c", "a/**")).toBe(true)
    expect(Wildcard.match("a", "a/**")).toBe(false)
  })

  it("question mark is exactly one character, slash included", () => {
    expect(Wildcard.match("file1.txt", "file?.txt")).toBe(true)
    expect(Wildcard.match("file12.txt", "file?.txt")).toBe(false)
    expect(Wildcard.match("a/b", "a?b")).toBe(true)
  })

  it("a trailing ' *' also matches the bare command", () => {
    expect(Wildcard.match("ls", "ls *")).toBe(true)
    expect(Wildcard.match("ls -la", "ls *")).toBe(true)
    expect(Wildcard.match("lsof", "ls *")).toBe(false)
    expect(Wildcard.match("git", "git status *")).toBe(false)
    expect(Wildcard.match("git status", "git status *")).toBe(true)
  })

  it("regex metacharacters are literal", () => {
    expect(Wildcard.match("a+b(c)[d]{e}|f^g$h.i", "a+b(c)[d]{e}|f^g$h.i")).toBe(true)
    expect(Wildcard.match("aXb", "a.b")).toBe(false)
    expect(Wildcard.match("aab", "a+b")).toBe(false)
  })

  it("backslashes count as slashes on both sides", () => {
    expect(Wildcard.match("C:\\Users\\me\\file.txt", "C:/Users/*")).toBe(true)
    expect(Wildcard.match("C:/Users/me/file.txt", "C:\\Users\\*")).toBe(true)
  })

  it("matches across newlines (multi-line commands)", () => {
    expect(Wildcard.match("echo a\necho b", "echo *")).toBe(true)
  })

  it("is anchored and case-sensitive off Windows", () => {
    expect(Wildcard.match("xgit status", "git *")).toBe(false)
    // Case folds only on Windows, as in OpenCode.
    expect(Wildcard.match("GIT status", "git *")).toBe(process.platform === "win32")
  })

  it("empty pattern matches only empty input", () => {
    expect(Wildcard.match("", "")).toBe(true)
    expect(Wildcard.match("a", "")).toBe(false)
    expect(Wildcard.match("", "*")).toBe(true)
  })
})
