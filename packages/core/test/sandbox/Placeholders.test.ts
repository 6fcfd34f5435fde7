import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { Mount } from "../../src/sandbox/Layout.js"
import { holdDecision, type PathState, Placeholders } from "../../src/sandbox/Placeholders.js"
import { which } from "../../src/sandbox/Probe.js"
import { withLock } from "../../src/sandbox/RegistryLock.js"

/**
 * The placeholder registry on real files: two registries over one directory stand for two agent
 * processes (each its own manifests); manifests of processes that are gone are written as such a
 * process would have left them.
 */
const fresh = () => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agent-registry-test-")))
  const registry = path.join(root, "registry")
  const project = path.join(root, "project")
  fs.mkdirSync(registry, { mode: 0o700 })
  fs.mkdirSync(project)
  return { root, registry, project, cleanup: () => fs.rmSync(root, { recursive: true, force: true }) }
}

const absent = (project: string, ...names: Array<string>): Array<Mount> => [
  { path: project, kind: "writable" },
  ...names.map((name): Mount => ({ path: path.join(project, name), kind: "placeholder" }))
]

const isLink = (file: string) => {
  try {
    return fs.lstatSync(file).isSymbolicLink()
  } catch {
    return false
  }
}

/** A pid that no process has now, with a start time: a writer that is gone. */
const deadWriter = () => {
  const child = spawnSync("/bin/true")
  return { pid: child.pid!, start: "1" }
}

describe("placeholders: what a sandbox does with a protected path", () => {
  it.each<[PathState, boolean, boolean, ReturnType<typeof holdDecision>]>([
    ["missing", false, true, "make"],
    ["missing", true, true, "make"],
    ["missing", false, false, "leave-out"],
    ["empty-directory", true, true, "share"],
    ["empty-directory", false, true, "present"],
    ["other", true, true, "present"],
    ["other", false, false, "present"]
  ])("%s, named by a live sandbox %s, a config name %s: %s", (state, named, holdable, expected) => {
    expect(holdDecision(state, named, holdable)).toBe(expected)
  })
})

describe("placeholders: counted across registries", () => {
  it("a placeholder two processes rely on stays until the last lets go, then goes with its manifests", () => {
    const { cleanup, project, registry } = fresh()
    try {
      const a = new Placeholders(registry)
      const b = new Placeholders(registry)
      const first = a.hold(absent(project, "agent.json", ".agent"))
      expect(first.mounts.filter((mount) => mount.kind === "placeholder").map((mount) => path.basename(mount.path))).toEqual(["agent.json", ".agent"])
      expect(fs.statSync(path.join(project, "agent.json")).isDirectory()).toBe(true)
      // B sees A's placeholders as present directories: it shares them instead of binding them as they are.
      const second = b.hold([{ path: project, kind: "writable" }, { path: path.join(project, "agent.json"), kind: "readonly" }])
      expect(second.mounts[1]).toEqual({ path: path.join(project, "agent.json"), kind: "placeholder" })
      a.release(first, true)
      expect(fs.existsSync(path.join(project, "agent.json"))).toBe(true)
      expect(fs.existsSync(path.join(project, ".agent"))).toBe(false)
      b.release(second, true)
      expect(fs.readdirSync(project)).toEqual([])
      expect(fs.readdirSync(registry).filter((name) => name.endsWith(".json"))).toEqual([])
    } finally {
      cleanup()
    }
  })

  it("a user's own empty directory, or a file made meanwhile, is bound as it is and never removed", () => {
    const { cleanup, project, registry } = fresh()
    try {
      fs.mkdirSync(path.join(project, ".claude"))
      fs.writeFileSync(path.join(project, "agent.json"), "{}")
      const registryA = new Placeholders(registry)
      const holding = registryA.hold(absent(project, ".claude", "agent.json"))
      expect(holding.mounts.slice(1).map((mount) => mount.kind)).toEqual(["readonly", "readonly"])
      expect(holding.manifest).toBeUndefined()
      registryA.release(holding, true)
      expect(fs.readdirSync(project).sort()).toEqual([".claude", "agent.json"])
    } finally {
      cleanup()
    }
  })

  it("placeholders of a process that died are removed by the next one; an empty agent.json/ without a manifest too", () => {
    const { cleanup, project, registry } = fresh()
    try {
      const writer = deadWriter()
      fs.mkdirSync(path.join(project, ".agent"))
      fs.writeFileSync(path.join(registry, "dead.json"), JSON.stringify({ ...writer, created: 0, paths: [path.join(project, ".agent")] }))
      fs.mkdirSync(path.join(project, "opencode.json"))
      new Placeholders(registry).collect([project])
      expect(fs.readdirSync(project)).toEqual([])
      expect(fs.readdirSync(registry)).toEqual([])
    } finally {
      cleanup()
    }
  })

  it("an unreadable manifest is left alone (another version may own it) and names nothing", () => {
    const { cleanup, project, registry } = fresh()
    try {
      fs.writeFileSync(path.join(registry, "other.json"), "not json")
      const registryA = new Placeholders(registry)
      registryA.release(registryA.hold(absent(project, ".agents")), true)
      expect(fs.readdirSync(project)).toEqual([])
      expect(fs.readdirSync(registry)).toEqual(["other.json"])
    } finally {
      cleanup()
    }
  })
})

describe.runIf(which("bwrap", process.env.PATH) !== undefined)("placeholders: a sandbox that outlives its writer", () => {
  it.live("a manifest locked by a running bubblewrap keeps its placeholders; once the sandbox ends the next look removes them", () =>
    Effect.gen(function*() {
      const { cleanup, project, registry } = fresh()
      try {
        const writer = deadWriter()
        const manifest = path.join(registry, "orphan.json")
        fs.mkdirSync(path.join(project, ".opencode"))
        fs.writeFileSync(manifest, JSON.stringify({ ...writer, created: 0, released: true, paths: [path.join(project, ".opencode")] }))
        // bubblewrap's init holds the lock for the sandbox's life, as for a sandbox whose runtime has gone.
        const sandbox = spawn("bwrap", ["--ro-bind", "/", "/", "--dev", "/dev", "--unshare-user", "--unshare-pid", "--lock-file", manifest, "--", "sleep", "1"], {
          stdio: "ignore"
        })
        const ended = new Promise((resolve) => sandbox.once("exit", resolve))
        for (let waited = 0; waited < 3_000 && !fs.readFileSync("/proc/locks", "utf8").includes(`:${fs.statSync(manifest).ino} `); waited += 20) {
          yield* Effect.sleep("20 millis")
        }
        const other = new Placeholders(registry)
        other.collect([project])
        expect(fs.existsSync(path.join(project, ".opencode"))).toBe(true)
        yield* Effect.promise(() => ended)
        other.release(other.hold(absent(project, "agent.jsonc")), true)
        expect(fs.readdirSync(project)).toEqual([])
        expect(fs.readdirSync(registry)).toEqual([])
      } finally {
        cleanup()
      }
    }))
})

describe("placeholders: the registry's lock", () => {
  it("a lock whose holder has gone is broken; the body runs and the lock is gone after", () => {
    const { cleanup, registry } = fresh()
    try {
      const writer = deadWriter()
      fs.symlinkSync(`${writer.pid} ${writer.start}`, path.join(registry, "lock"))
      expect(withLock(registry, () => "ran")).toBe("ran")
      expect(fs.existsSync(path.join(registry, "lock"))).toBe(false)
    } finally {
      cleanup()
    }
  })

  it("a lock held by a live process is waited for", () =>
    Effect.runPromise(Effect.gen(function*() {
      const { cleanup, registry } = fresh()
      try {
        // Another process holds it for a moment, and notes when it is done, just before letting go.
        const done = path.join(registry, "done")
        const holder = spawn("/bin/sh", [
          "-c",
          `ln -s "$$ $(cut -d' ' -f22 /proc/$$/stat)" "${registry}/lock" && sleep 0.3 && : > "${done}" && rm -f "${registry}/lock"`
        ])
        for (let waited = 0; waited < 3_000 && !isLink(path.join(registry, "lock")); waited += 10) yield* Effect.sleep("10 millis")
        const seen = withLock(registry, () => ({ done: fs.existsSync(done), holder: fs.readlinkSync(path.join(registry, "lock")) }))
        expect(seen.done).toBe(true)
        expect(seen.holder.split(" ")[0]).toBe(String(process.pid))
        yield* Effect.promise(() => new Promise((resolve) => holder.once("exit", resolve)))
      } finally {
        cleanup()
      }
    })))
})
