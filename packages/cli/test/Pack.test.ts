import { TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { events } from "./AgentProcess.js"

const checkout = fileURLToPath(new URL("../../../", import.meta.url))
const version = (JSON.parse(fs.readFileSync(path.join(checkout, "packages/cli/package.json"), "utf8")) as { version: string }).version

interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs a command to its end (killed after `limit` ms, or when the test ends first). */
const run = (command: string, args: ReadonlyArray<string>, options: { cwd: string; env: NodeJS.ProcessEnv; limit: number }) =>
  Effect.async<Ran>((resume) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    const timer = setTimeout(() => child.kill("SIGKILL"), options.limit)
    child.on("error", (error) => resume(Effect.succeed({ code: null, stdout, stderr: stderr + String(error) })))
    child.on("exit", (code) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code, stdout, stderr }))
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  })

const MINUTE = 60_000

// Slow (about 1–4 minutes): npm fetches better-sqlite3 and esbuild from the npm registry and builds
// better-sqlite3 from source when no prebuilt binary can be downloaded. Needs the registry, nothing else.
describe("the packed tarball (slow: npm installs and builds better-sqlite3)", () => {
  it.scopedLive("`pnpm pack:cli`, then `npm install -g` into a prefix: `agent` runs the demo from an unrelated directory", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({
        files: { "project/README.md": "# Widget\n\nA small widget library.\n", "project/src/widget.ts": "export const widget = 1\n" }
      })
      const packed = yield* run(process.execPath, ["scripts/pack-cli.mjs", "--out", box.path("pack")], {
        cwd: checkout,
        env: process.env,
        limit: 3 * MINUTE
      })
      expect(packed.code, packed.stderr).toBe(0)
      const tarball = packed.stdout.trim().split("\n").at(-1)!
      expect(tarball).toBe(box.path(`pack/agent-cli-${version}.tgz`))

      // As a user installs it: the machine's npm and its config (registry, cache), into a fresh prefix.
      const prefix = box.path("prefix")
      const installed = yield* run("npm", ["install", "-g", "--prefix", prefix, "--allow-scripts=better-sqlite3,esbuild", tarball], {
        cwd: box.path("home"),
        env: process.env,
        limit: 10 * MINUTE
      })
      expect(installed.code, installed.stderr).toBe(0)
      const bundle = path.join(prefix, "lib/node_modules/@agent/cli/bundle")
      // Nothing is loaded from outside the package (the checkout's bundle requires better-sqlite3 from ../../../../node_modules).
      const reachOut = fs.readdirSync(bundle).filter((file) => /require\("\.\.\//.test(fs.readFileSync(path.join(bundle, file), "utf8")))
      expect(reachOut, "bundle files that require a file outside the bundle").toEqual([])

      // `agent` from the PATH, in a project outside the checkout, with the sandbox's HOME and XDG dirs.
      const env = {
        ...box.instance.env,
        PATH: `${path.join(prefix, "bin")}${path.delimiter}${process.env.PATH}`,
        XDG_CACHE_HOME: box.path("home/.cache"),
        XDG_STATE_HOME: box.path("home/.local/state")
      }
      const agent = (...args: Array<string>) => run("agent", args, { cwd: box.path("project"), env, limit: MINUTE })

      const shown = yield* agent("--version")
      expect(shown.code, shown.stderr).toBe(0)
      expect(shown.stdout.trim()).toBe(version)

      // The demo stores its session in SQLite (in its scratch copy): better-sqlite3 as npm installed it.
      const demo = yield* agent("run", "--replay", "demo", "--auto-approve", "--format", "json", "what is in this project?")
      expect(demo.code, demo.stderr).toBe(0)
      const lines = events(demo.stdout)
      const tools = lines.filter((line) => line.type === "tool_use")
      expect(tools.map((line) => line.part.tool)).toEqual(["todowrite", "read", "read", "grep", "edit", "todowrite"])
      expect(tools.every((line) => line.part.state.status === "completed")).toBe(true)
      expect(lines.at(-1)).toMatchObject({ type: "result", status: "completed", exitCode: 0 })
      // The answer is written from prompts/demo/answer.txt, which the package carries.
      expect(lines.at(-1)!.text).toMatch(/1 directory and 1 file at its top level: README\.md/)

      // The bash parser's wasm files come with the package: a compound command is checked piece by piece.
      const explained = yield* agent("permission", "explain", "bash", "cd src && rm -rf build | cat")
      expect(explained.code, explained.stderr).toBe(0)
      expect(explained.stdout).toContain(`allow "rm -rf build"`)

      const config = yield* agent("debug", "config")
      expect(config.code, config.stderr).toBe(0)
      expect(JSON.parse(config.stdout)).toMatchObject({ sources: [] })
    }), 15 * MINUTE)
})
