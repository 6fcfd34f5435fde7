import { afterEach, describe, expect, it } from "vitest"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { bin } from "./AgentProcess.js"

/**
 * The bundled CLI keeps V8's bytecode of its files between runs (src/startup/CodeCache.ts). Each test
 * runs a copy of the bundle, so the cache it looks at is its own.
 */
const copies: Array<string> = []
afterEach(() => {
  for (const dir of copies.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

/** `besideBundle`: a copy beside the bundle, that finds its external packages (better-sqlite3) by the same relative paths. */
const copyBundle = (besideBundle = false) => {
  const dir = fs.mkdtempSync(besideBundle ? path.join(path.dirname(path.dirname(bin)), "test-cache-") : path.join(os.tmpdir(), "agent-compile-cache-"))
  copies.push(dir)
  const bundle = besideBundle ? dir : path.join(dir, "bundle")
  fs.cpSync(path.dirname(bin), bundle, { recursive: true, filter: (source) => !source.includes(".compile-cache") })
  return bundle
}

const help = (bundle: string, env: Record<string, string> = {}) =>
  execFileSync(process.execPath, [path.join(bundle, "bin.js"), "session", "--help"], {
    env: { PATH: process.env.PATH, HOME: path.dirname(bundle), ...env },
    encoding: "utf8"
  })

/** The cache files of one command: size and modification time of each. */
const cacheOf = (bundle: string, command: string) => {
  const root = path.join(bundle, ".compile-cache")
  const [version] = fs.readdirSync(root)
  const dir = path.join(root, version!, command)
  return new Map(fs.readdirSync(dir).map((file) => {
    const stat = fs.statSync(path.join(dir, file))
    return [file, { size: stat.size, modified: stat.mtimeMs }]
  }))
}

describe("the bundled CLI's code cache", () => {
  it("is written by the first run of a command, then read and left as it is", () => {
    const bundle = copyBundle()
    const expected = help(bundle)
    expect(expected).toContain("List, show, export")
    const first = cacheOf(bundle, "session")
    // The CLI's own files, each named after the file it was made from.
    expect([...first.keys()].some((file) => file.startsWith("cli.js-"))).toBe(true)
    expect([...first.keys()].some((file) => file.startsWith("Main-"))).toBe(true)
    expect([...first.values()].every((file) => file.size > 0)).toBe(true)

    expect(help(bundle)).toBe(expected)
    expect(cacheOf(bundle, "session")).toEqual(first)
  })

  it("a damaged cache file is turned down and replaced, and the command still works", () => {
    const bundle = copyBundle()
    const expected = help(bundle)
    const dir = path.join(bundle, ".compile-cache", fs.readdirSync(path.join(bundle, ".compile-cache"))[0]!, "session")
    const main = fs.readdirSync(dir).find((file) => file.startsWith("Main-"))!
    const good = fs.readFileSync(path.join(dir, main))
    fs.writeFileSync(path.join(dir, main), Buffer.alloc(good.length, 7))

    expect(help(bundle)).toBe(expected)
    const replaced = fs.readFileSync(path.join(dir, main))
    expect(replaced.equals(Buffer.alloc(good.length, 7))).toBe(false)
    expect(replaced.length).toBeGreaterThan(0)
  })

  it("a changed file never meets the bytecode of its old text", () => {
    const bundle = copyBundle()
    help(bundle)
    // The file that holds the command's description.
    const file = fs.readdirSync(bundle).find((name) => name.endsWith(".js") && fs.readFileSync(path.join(bundle, name), "utf8").includes("List, show, export"))!
    const before = [...cacheOf(bundle, "session").keys()].filter((name) => name.startsWith(`${file}-`))
    expect(before).toHaveLength(1)
    // Same length, other text (a rebuilt file): the cache it gets is made for it.
    const source = fs.readFileSync(path.join(bundle, file), "utf8")
    fs.writeFileSync(path.join(bundle, file), source.replace("List, show, export", "LIST, SHOW, EXPORT"))
    const later = new Date(Date.now() + 5_000)
    fs.utimesSync(path.join(bundle, file), later, later)

    expect(help(bundle)).toContain("LIST, SHOW, EXPORT")
    const after = [...cacheOf(bundle, "session").keys()].filter((name) => name.startsWith(`${file}-`))
    expect(after).toHaveLength(2)
  })

  it("a command that changes V8's heap flags once loaded (agent acp) still reads its cache and leaves it as it is", () => {
    const bundle = copyBundle(true)
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "agent-compile-cache-"))
    copies.push(home)
    const project = path.join(home, "project")
    fs.mkdirSync(project)
    // No client: stdin is closed at once, and the process ends after its modules were loaded.
    const acp = () =>
      execFileSync(process.execPath, [path.join(bundle, "bin.js"), "acp"], {
        cwd: project,
        env: { PATH: process.env.PATH, HOME: home },
        input: "",
        encoding: "utf8"
      })
    acp()
    const first = cacheOf(bundle, "acp")
    expect([...first.keys()].some((file) => file.startsWith("Acp-"))).toBe(true)
    acp()
    // Turned down (made under other flags than the next start's), every file would be written again.
    expect(cacheOf(bundle, "acp")).toEqual(first)
  })

  it("AGENT_NO_COMPILE_CACHE turns it off", () => {
    const bundle = copyBundle()
    expect(help(bundle, { AGENT_NO_COMPILE_CACHE: "1" })).toContain("List, show, export")
    expect(fs.existsSync(path.join(bundle, ".compile-cache"))).toBe(false)
  })
})
