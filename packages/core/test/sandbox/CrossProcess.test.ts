import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Placeholders } from "../../src/sandbox/Placeholders.js"
import { which } from "../../src/sandbox/Probe.js"

/**
 * Several agent processes in one project, each running sandboxed commands through the real bash tool
 * while the project has none of the config names the sandbox holds absent (agent.json, .agent/, ...):
 * one process removing a placeholder while another's bubblewrap binds it made commands fail ("Can't
 * find source path") or left the name unprotected. Runs the built packages (`pnpm build` first).
 */
const real = which("bwrap", process.env.PATH) !== undefined || process.env.CI !== undefined
const WORKER = path.join(import.meta.dirname, "fixtures/placeholder-worker.mjs")
const ROUNDS = 12

const worker = (directory: string, keepIdleMs: number, name: string) =>
  Effect.async<{ failures: Array<string> }>((resume) => {
    const child = spawn(process.execPath, [WORKER, directory, String(ROUNDS), String(keepIdleMs), name], { stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    child.stdout.on("data", (chunk) => (out += chunk))
    child.stderr.on("data", (chunk) => (err += chunk))
    child.on("close", (code) => {
      const line = out.trim().split("\n").at(-1) ?? ""
      try {
        resume(Effect.succeed(JSON.parse(line) as { failures: Array<string> }))
      } catch {
        resume(Effect.succeed({ failures: [`${name} exited ${code}: ${out}${err}`.slice(0, 2_000)] }))
      }
    })
  })

/** Manifests in the shared registry that still name a path in `directory`. */
const manifestsNaming = (directory: string) => {
  const dir = Placeholders.directory()
  return fs.readdirSync(dir).filter((name) => name.endsWith(".json")).filter((name) => {
    try {
      return fs.readFileSync(path.join(dir, name), "utf8").includes(directory)
    } catch {
      return false
    }
  })
}

describe.runIf(real)("sandbox: placeholders across processes", () => {
  it.live.each([
    ["a sandbox per command", 0],
    // Short: kept sandboxes come and go between commands, with their placeholders.
    ["kept sandboxes with a short idle time", 25]
  ] as const)("%s: three processes in one project, no command fails, the names stay held, nothing is left", ([, keepIdleMs]) =>
    Effect.gen(function*() {
      const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agent-placeholders-test-")))
      const project = path.join(root, "project")
      fs.mkdirSync(project)
      try {
        const results = yield* Effect.forEach(["a", "b", "c"], (name) => worker(project, keepIdleMs, name), { concurrency: "unbounded" })
        expect(results.flatMap((result) => result.failures)).toEqual([])
        // Every process has ended: no placeholder, and no manifest naming one, is left.
        expect(fs.readdirSync(project)).toEqual([])
        expect(manifestsNaming(project)).toEqual([])
      } finally {
        fs.rmSync(root, { recursive: true, force: true })
      }
    }), 120_000)
})
