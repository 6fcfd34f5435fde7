import type { Config } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, TestClock } from "effect"
import fc from "fast-check"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ConfigService } from "../src/config/ConfigService.js"
import { Instance, makeInstanceInfo } from "../src/runtime/Instance.js"
import {
  countLines,
  cut,
  fits,
  Truncation,
  type TruncateLimits,
  utf8Head,
  utf8Tail
} from "../src/tool/Truncation.js"

const DAY = 24 * 60 * 60 * 1000

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "truncate-test-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** A Truncation over a fresh temp data dir, built from the live layer. */
const setup = (toolOutput?: Config["tool_output"]) =>
  Effect.gen(function*() {
    const tmp = yield* tempDir
    const instance = makeInstanceInfo({ directory: tmp, home: tmp, env: { XDG_DATA_HOME: path.join(tmp, "data") } })
    const config = ConfigService.layerFromInfo({
      config: toolOutput === undefined ? {} : { tool_output: toolOutput },
      sources: [],
      warnings: [],
      directories: [],
      origin: () => undefined
    })
    const outputDir = path.join(tmp, "data", "agent", "tool-output")
    const build = Layer.build(Truncation.layer.pipe(Layer.provide(Layer.merge(Layer.succeed(Instance, instance), config)))).pipe(
      Effect.map((context) => Context.get(context, Truncation))
    )
    return { tmp, outputDir, build }
  })

const withTruncation = (toolOutput?: Config["tool_output"]) =>
  Effect.gen(function*() {
    const env = yield* setup(toolOutput)
    return { ...env, truncation: yield* env.build }
  })

const numbered = (count: number, from = 0) => Array.from({ length: count }, (_, i) => `line ${from + i}`).join("\n")

const bytes = (text: string) => Buffer.byteLength(text, "utf8")

/** Writes a file in `dir` whose modification time lies `ageMs` in the past. */
const writeAged = (dir: string, name: string, ageMs: number) => {
  fs.mkdirSync(dir, { recursive: true })
  const file = path.join(dir, name)
  fs.writeFileSync(file, name)
  const time = new Date(Date.now() - ageMs)
  fs.utimesSync(file, time, time)
  return file
}

/** Polls in real time: background fibers do real file I/O that a TestClock cannot wait for. */
const eventually = (check: () => boolean) =>
  Effect.promise(async () => {
    for (let i = 0; i < 300 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10))
    return check()
  })

describe("Truncation.output", () => {
  it.scopedLive("returns output within the limits unchanged and saves nothing", () =>
    Effect.gen(function*() {
      const { outputDir, truncation } = yield* withTruncation()
      const text = "hello\nwörld\n"
      expect(yield* truncation.output(text)).toEqual({ content: text, truncated: false })
      expect(fs.existsSync(outputDir) ? fs.readdirSync(outputDir) : []).toEqual([])
    }))

  it.scopedLive("keeps text exactly at both limits and cuts one line more; a trailing newline is no extra line", () =>
    Effect.gen(function*() {
      const { truncation } = yield* withTruncation()
      const five = `${numbered(5)}\n`
      const atLimit = yield* truncation.output(five, { maxLines: 5, maxBytes: bytes(five) - 1 })
      expect(atLimit).toEqual({ content: five, truncated: false })

      const six = yield* truncation.output(numbered(6), { maxLines: 5 })
      expect(six.truncated).toBe(true)
      expect(six.content.startsWith(`${numbered(5)}\n\n...1 lines truncated...\n\n`)).toBe(true)

      const overBytes = yield* truncation.output(five, { maxLines: 5, maxBytes: bytes(five) - 2 })
      expect(overBytes.truncated).toBe(true)
    }))

  it.scopedLive("head: keeps the first 2000 lines by default and says how many lines were cut", () =>
    Effect.gen(function*() {
      const { outputDir, truncation } = yield* withTruncation()
      const result = yield* truncation.output(numbered(3000))
      expect(result.truncated).toBe(true)
      expect(result.outputPath).toBeDefined()
      expect(path.dirname(result.outputPath!)).toBe(outputDir)
      expect(path.basename(result.outputPath!)).toMatch(/^tool_[0-9a-f]{14}[0-9A-Za-z]{12}$/)
      const [kept, notice, hint] = result.content.split("\n\n")
      expect(kept).toBe(numbered(2000))
      expect(notice).toBe("...1000 lines truncated...")
      expect(hint).toContain(result.outputPath!)
    }))

  it.scopedLive("head: the byte limit keeps only whole lines of multi-byte text and counts the cut bytes", () =>
    Effect.gen(function*() {
      const { truncation } = yield* withTruncation()
      const line = "€".repeat(100) // 300 bytes
      const text = Array.from({ length: 500 }, () => line).join("\n")
      const result = yield* truncation.output(text)
      const [kept, notice] = result.content.split("\n\n")
      // 170 lines take 170 * 300 + 169 = 51169 bytes; a 171st would need 51470 > 51200.
      expect(kept).toBe(Array.from({ length: 170 }, () => line).join("\n"))
      expect(notice).toBe(`...${bytes(text) - 51169} bytes truncated...`)
      expect(result.content).not.toContain("\uFFFD")
    }))

  it.scopedLive("a single line longer than the byte budget is cut at a character boundary", () =>
    Effect.gen(function*() {
      const { truncation } = yield* withTruncation()
      const emoji = "😀".repeat(20_000) // 80000 bytes, 4 per character
      const head = yield* truncation.output(`a${emoji}\nnext line`)
      const headKept = head.content.split("\n\n")[0]!
      // 1 + 4 * 12799 = 51197 bytes; one more emoji would reach 51201.
      expect(headKept).toBe(`a${"😀".repeat(12_799)}`)
      expect(head.content).toContain(`...${1 + 80_000 + 10 - 51_197} bytes truncated...`)

      const tail = yield* truncation.output(`first line\n${emoji}z`, { direction: "tail" })
      const tailKept = tail.content.split("\n\n").at(-1)!
      expect(tailKept).toBe(`${"😀".repeat(12_799)}z`)
      expect(tail.content).not.toContain("\uFFFD")
    }))

  it.scopedLive("tail: keeps the last lines and puts the notice first", () =>
    Effect.gen(function*() {
      const { truncation } = yield* withTruncation()
      const result = yield* truncation.output(`${numbered(3000)}\n`, { direction: "tail" })
      expect(result.truncated).toBe(true)
      expect(result.content).toBe(
        `...output truncated...\n\nFull output saved to: ${result.outputPath}\n\n${numbered(2000, 1000)}`
      )

      // Ten-byte lines: nine of them take 98 bytes, ten would take 109.
      const lines = Array.from({ length: 50 }, (_, i) => `row ${String(i).padStart(6, "0")}`)
      const byBytes = yield* truncation.output(lines.join("\n"), { direction: "tail", maxBytes: 100 })
      expect(byBytes.content.split("\n\n").at(-1)).toBe(lines.slice(41).join("\n"))
    }))

  it.scopedLive("honours tool_output.max_lines and max_bytes from the config", () =>
    Effect.gen(function*() {
      const { truncation } = yield* withTruncation({ max_lines: 10, max_bytes: 1000 })
      const byLines = yield* truncation.output(numbered(20))
      expect(byLines.content.split("\n\n").slice(0, 2)).toEqual([numbered(10), "...10 lines truncated..."])

      const wide = Array.from({ length: 5 }, (_, i) => String(i).repeat(300))
      const byBytes = yield* truncation.output(wide.join("\n"))
      // Three lines take 902 bytes; four would take 1203.
      expect(byBytes.content.split("\n\n").slice(0, 2)).toEqual([
        wide.slice(0, 3).join("\n"),
        `...${1504 - 902} bytes truncated...`
      ])
    }))

  it.scopedLive("per-call limits override the config in both directions", () =>
    Effect.gen(function*() {
      const { truncation } = yield* withTruncation({ max_lines: 10 })
      const lower = yield* truncation.output(numbered(20), { maxLines: 3 })
      expect(lower.content.split("\n\n").slice(0, 2)).toEqual([numbered(3), "...17 lines truncated..."])

      const higher = yield* truncation.output(numbered(20), { maxLines: 50 })
      expect(higher).toEqual({ content: numbered(20), truncated: false })

      const bytesOnly = yield* truncation.output(numbered(5), { maxBytes: 13 })
      expect(bytesOnly.content.split("\n\n")[0]).toBe(numbered(2))
    }))

  it.scopedLive("saves the complete text in a file only its owner can read", () =>
    Effect.gen(function*() {
      const { truncation } = yield* withTruncation()
      const text = `${Array.from({ length: 2500 }, (_, i) => `zeile ${i} – grüße 🚀`).join("\n")}\n`
      const result = yield* truncation.output(text, { direction: "tail" })
      expect(result.outputPath).toBeDefined()
      expect(fs.readFileSync(result.outputPath!, "utf8")).toBe(text)
      expect(fs.statSync(result.outputPath!).mode & 0o777).toBe(0o600)

      const second = yield* truncation.output(text)
      expect(second.outputPath).not.toBe(result.outputPath)
      expect(fs.readFileSync(second.outputPath!, "utf8")).toBe(text)
    }))

  it.scopedLive("the hint suggests the explore agent only when the task tool is available", () =>
    Effect.gen(function*() {
      const { truncation } = yield* withTruncation()
      const delegate = yield* truncation.output(numbered(3000), { canDelegate: true })
      const alone = yield* truncation.output(numbered(3000), { canDelegate: false })
      const hintOf = (content: string) => content.split("\n\n").at(-1)!

      expect(hintOf(delegate.content)).toContain(delegate.outputPath!)
      expect(hintOf(delegate.content)).toMatch(/explore agent/)
      expect(hintOf(delegate.content)).toMatch(/task tool/)

      expect(hintOf(alone.content)).toContain(alone.outputPath!)
      expect(hintOf(alone.content)).not.toMatch(/explore|task tool/)
      expect(hintOf(alone.content)).toMatch(/grep/)
      expect(hintOf(alone.content)).toMatch(/offset and limit/)

      const byDefault = yield* truncation.output(numbered(3000))
      expect(hintOf(byDefault.content)).not.toMatch(/explore/)
    }))

  it.scopedLive("still returns the kept part when the full text cannot be saved", () =>
    Effect.gen(function*() {
      const { outputDir, truncation } = yield* withTruncation()
      fs.mkdirSync(path.dirname(outputDir), { recursive: true })
      fs.writeFileSync(outputDir, "a file where the directory should be")
      const result = yield* truncation.output(numbered(30), { maxLines: 10 })
      expect(result.truncated).toBe(true)
      expect(result.outputPath).toBeUndefined()
      expect(result.content.startsWith(`${numbered(10)}\n\n...20 lines truncated...\n\n`)).toBe(true)
      expect(result.content).toMatch(/could not be saved/)
    }))
})

describe("Truncation.cleanup", () => {
  it.scopedLive("deletes saved outputs older than seven days and keeps newer ones", () =>
    Effect.gen(function*() {
      const { outputDir, truncation } = yield* withTruncation()
      const old = writeAged(outputDir, "tool_old", 8 * DAY)
      const recent = writeAged(outputDir, "tool_recent", 6 * DAY)
      const saved = (yield* truncation.output(numbered(3000))).outputPath!
      expect(yield* truncation.cleanup()).toBe(1)
      expect(fs.existsSync(old)).toBe(false)
      expect(fs.existsSync(recent)).toBe(true)
      expect(fs.existsSync(saved)).toBe(true)
    }))

  it.scopedLive("sweeps when the layer starts, and a missing directory is not an error", () =>
    Effect.gen(function*() {
      const { build, outputDir } = yield* setup()
      const old = writeAged(outputDir, "tool_old", 30 * DAY)
      const recent = writeAged(outputDir, "tool_recent", DAY)
      const truncation = yield* build
      expect(fs.existsSync(old)).toBe(false)
      expect(fs.existsSync(recent)).toBe(true)

      fs.rmSync(outputDir, { recursive: true })
      expect(yield* truncation.cleanup()).toBe(0)
    }))

  it.scoped("sweeps again every hour while the layer is alive", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.now())
      const { build, outputDir } = yield* setup()
      yield* build
      const old = writeAged(outputDir, "tool_old", 8 * DAY)
      const recent = writeAged(outputDir, "tool_recent", DAY)

      yield* TestClock.adjust("59 minutes")
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
      expect(fs.existsSync(old)).toBe(true)

      yield* TestClock.adjust("1 minute")
      expect(yield* eventually(() => !fs.existsSync(old))).toBe(true)
      expect(fs.existsSync(recent)).toBe(true)
    }))
})

describe("Truncate helpers", () => {
  it("counts lines without an empty line after a trailing newline", () => {
    expect(["", "a", "a\n", "a\nb", "a\n\n", "\n"].map(countLines)).toEqual([0, 1, 1, 2, 2, 1])
  })

  const text = fc.string({
    unit: fc.constantFrom("a", "é", "€", "😀", "\n", " "),
    maxLength: 80
  })
  const limits: fc.Arbitrary<TruncateLimits> = fc.record({
    maxLines: fc.integer({ min: 1, max: 12 }),
    maxBytes: fc.integer({ min: 1, max: 120 })
  })

  const splitLines = (s: string) => (s.endsWith("\n") ? s.slice(0, -1) : s).split("\n")

  it("fits agrees with splitting the text into lines", () => {
    fc.assert(fc.property(text, limits, (s, l) => {
      const content = s.endsWith("\n") ? s.slice(0, -1) : s
      const expected = s.length === 0 || (splitLines(s).length <= l.maxLines && bytes(content) <= l.maxBytes)
      expect(fits(s, l)).toBe(expected)
    }))
  })

  it("utf8Head and utf8Tail keep the longest whole-character prefix and suffix within the budget", () => {
    fc.assert(fc.property(text, fc.integer({ min: 0, max: 200 }), (s, max) => {
      const chars = Array.from(s)
      const head = utf8Head(s, max)
      const tail = utf8Tail(s, max)
      expect(s.startsWith(head)).toBe(true)
      expect(s.endsWith(tail)).toBe(true)
      expect(bytes(head)).toBeLessThanOrEqual(max)
      expect(bytes(tail)).toBeLessThanOrEqual(max)
      const headChars = Array.from(head).length
      const tailChars = Array.from(tail).length
      if (headChars < chars.length) expect(bytes(head + chars[headChars]!)).toBeGreaterThan(max)
      if (tailChars < chars.length) expect(bytes(chars[chars.length - 1 - tailChars]! + tail)).toBeGreaterThan(max)
    }))
  })

  it("cut keeps a prefix (head) or suffix (tail) within both limits, and nothing when the text fits", () => {
    fc.assert(fc.property(text, limits, fc.constantFrom("head" as const, "tail" as const), (s, l, direction) => {
      const result = cut(s, l, direction)
      if (fits(s, l)) {
        expect(result).toBeUndefined()
        return
      }
      expect(result).toBeDefined()
      const { kept, removed, unit } = result!
      const content = s.endsWith("\n") ? s.slice(0, -1) : s
      expect(direction === "head" ? content.startsWith(kept) : content.endsWith(kept)).toBe(true)
      expect(bytes(kept)).toBeLessThanOrEqual(l.maxBytes)
      expect(kept.length === 0 ? 0 : kept.split("\n").length).toBeLessThanOrEqual(l.maxLines)
      expect(removed).toBeGreaterThan(0)
      if (unit === "lines") expect(removed).toBe(splitLines(s).length - kept.split("\n").length)
      else expect(removed).toBe(bytes(s) - bytes(kept))
    }))
  })
})
