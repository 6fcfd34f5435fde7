import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { findRipgrep } from "../../src/tool/FileSearch.js"

/**
 * ripgrep for the tests (and the benchmark) that compare it with the built-in walker, so those
 * comparisons run on every machine instead of being skipped where `rg` is not installed.
 */

const cacheDir = () => path.join(os.tmpdir(), `agent-test-ripgrep-${process.getuid?.() ?? "user"}`)
const binDir = (root: string) => path.join(root, "usr", "bin")

/** Debian's ripgrep package, fetched with apt-get and unpacked (no root needed), as `.ci/run` does. */
const fetchFromDebian = (): string => {
  const cache = cacheDir()
  if (fs.existsSync(path.join(binDir(cache), "rg"))) return binDir(cache)
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "agent-test-ripgrep-fetch-"))
  try {
    execFileSync("apt-get", ["download", "ripgrep"], { cwd: work, stdio: "pipe", timeout: 120_000 })
    const deb = fs.readdirSync(work).find((name) => name.startsWith("ripgrep_") && name.endsWith(".deb"))
    if (deb === undefined) throw new Error("apt-get download ripgrep produced no .deb")
    const unpacked = path.join(work, "root")
    execFileSync("dpkg", ["-x", path.join(work, deb), unpacked], { stdio: "pipe", timeout: 60_000 })
    if (!fs.existsSync(path.join(binDir(unpacked), "rg"))) throw new Error("the ripgrep package holds no usr/bin/rg")
    try {
      // Atomic: a parallel test file that got there first keeps its copy.
      fs.renameSync(unpacked, cache)
    } catch (error) {
      if (!fs.existsSync(path.join(binDir(cache), "rg"))) throw error
    }
    return binDir(cache)
  } finally {
    fs.rmSync(work, { recursive: true, force: true })
  }
}

let located: string | undefined

/**
 * A directory holding `rg`: the one on PATH, else Debian's package unpacked into a cache dir.
 * Throws, saying what to install, when neither works: a comparison that cannot run fails.
 */
export const ripgrepDir = (): string => {
  if (located !== undefined) return located
  const onPath = findRipgrep(process.env.PATH)
  if (onPath !== undefined) return (located = path.dirname(onPath))
  try {
    return (located = fetchFromDebian())
  } catch (error) {
    const detail = error instanceof Error ? error.message.split("\n")[0] : String(error)
    throw new Error(
      `ripgrep is needed to compare it with the built-in search: rg is not on PATH and could not be fetched with ` +
        `apt-get (${detail}). Install ripgrep (e.g. apt-get install ripgrep) and run the tests again.`
    )
  }
}

/** `pathEnv` with `rg`'s directory in front. */
export const withRipgrep = (pathEnv: string | undefined): string => [ripgrepDir(), pathEnv ?? ""].join(path.delimiter)

/** `pathEnv` without any directory that holds an `rg`, so the built-in engine is chosen. */
export const withoutRipgrep = (pathEnv: string | undefined): string =>
  (pathEnv ?? "")
    .split(path.delimiter)
    .filter((dir) => dir !== "" && !fs.existsSync(path.join(dir, "rg")))
    .join(path.delimiter)
