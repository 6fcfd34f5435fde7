import { ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Snapshot, type StepTouch } from "../../src/snapshot/Snapshot.js"
import { liveDisk, StoreDisk, type StoreDiskShape } from "../../src/snapshot/StoreFile.js"

/** A small deterministic random source, so a failure can be replayed. */
const random = (seed: number) => () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff
  return seed / 0x7fffffff
}

const NAMES = ["a.txt", "b.txt", "dir/c.txt", "dir/sub/d.txt", "e.sh", "link", "x", "x/y.txt", "ignored.log", "new/deep/f.txt", "dir/"]

describe("snapshot scans", () => {
  it.scopedLive.each([
    { seed: 42, named: false, watch: true, steps: 40 },
    { seed: 7, named: true, watch: true, steps: 40 },
    // Every scan states the whole project (as on systems without watches).
    { seed: 3, named: false, watch: false, steps: 20 }
  ])("every step's patch names exactly the files that changed, and its snapshot holds their bytes (seed $seed, tools name files: $named, watched: $watch)", ({ named, seed, steps, watch }) =>
    Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({
        model: ScriptedModel.make([]),
        files: { "project/.gitignore": "*.log\n", ...(watch ? {} : { "project/agent.json": { snapshot_store: { watch: false } } }) }
      })
      const project = runtime.box.path("project")
      const next = random(seed)
      const abs = (file: string) => path.join(project, file)

      /** The files as the test believes them: path → bytes and mode, "link" → target. */
      const read = () => {
        const state = new Map<string, string>()
        const walk = (dir: string) => {
          for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
            const full = path.join(dir, entry.name)
            const rel = path.relative(project, full).split(path.sep).join("/")
            if (rel === ".git" || rel.endsWith(".log")) continue
            if (entry.isSymbolicLink()) state.set(rel, `link:${fs.readlinkSync(full)}`)
            else if (entry.isDirectory()) walk(full)
            else state.set(rel, `${(fs.statSync(full).mode & 0o100) !== 0 ? "x" : "-"}:${fs.readFileSync(full, "base64")}`)
          }
        }
        walk(project)
        return state
      }

      /** One random change to the project; the paths it may have changed go to `touched`. */
      const mutate = (step: number): void => {
        // (an ignored file that a tool names is recorded: see the next test)
        // (moving a directory changes files no tool names: only for steps that scan)
        const names = named ? NAMES.filter((candidate) => !candidate.endsWith(".log") && candidate !== "dir/") : NAMES
        const name = names[Math.floor(next() * names.length)]!
        touched(name)
        const file = abs(name)
        const roll = next()
        if (name === "dir/") {
          // a whole directory moves away, or back
          if (fs.existsSync(abs("dir"))) {
            fs.rmSync(abs("moved"), { recursive: true, force: true })
            fs.renameSync(abs("dir"), abs("moved"))
          } else if (fs.existsSync(abs("moved"))) fs.renameSync(abs("moved"), abs("dir"))
          return
        }
        if (name === "new/deep/f.txt" && roll < 0.15) {
          fs.rmSync(abs("new"), { recursive: true, force: true })
          return
        }
        if (name === "link") {
          fs.rmSync(file, { force: true })
          if (roll < 0.7) fs.symlinkSync(roll < 0.35 ? "a.txt" : "dir/c.txt", file)
          return
        }
        if (name === "x" || name === "x/y.txt") {
          touched("x")
          touched("x/y.txt")
          // "x" flips between a file and a directory holding y.txt
          fs.rmSync(abs("x"), { recursive: true, force: true })
          if (roll < 0.5) fs.writeFileSync(abs("x"), `x as a file ${step}\n`)
          else {
            fs.mkdirSync(abs("x"))
            fs.writeFileSync(abs("x/y.txt"), `y ${step}\n`)
          }
          return
        }
        if (roll < 0.25) fs.rmSync(file, { force: true })
        else if (roll < 0.4 && fs.existsSync(file)) fs.chmodSync(file, (fs.statSync(file).mode & 0o100) !== 0 ? 0o644 : 0o755)
        else if (roll < 0.5) {
          // same size, new bytes: only the content tells
          const old = fs.existsSync(file) ? fs.readFileSync(file) : Buffer.from("0000")
          fs.mkdirSync(path.dirname(file), { recursive: true })
          fs.writeFileSync(file, Buffer.from(old.map((byte) => (byte + 1) % 256)))
        } else {
          fs.mkdirSync(path.dirname(file), { recursive: true })
          fs.writeFileSync(file, `${name} at step ${step}\n${"z".repeat(Math.floor(next() * 50))}`)
        }
      }
      let touchedPaths: Array<string> = []
      const touched = (name: string) => void touchedPaths.push(abs(name))

      yield* Effect.gen(function*() {
        const snapshot = yield* Snapshot
        const recorder = snapshot.steps()
        let start = yield* recorder.begin()
        let before = read()
        for (let step = 0; step < steps; step++) {
          const changes = 1 + Math.floor(next() * 3)
          for (let index = 0; index < changes; index++) mutate(step)
          // Sometimes let the background stat-cache update run, sometimes not.
          if (step % 7 === 3) yield* Effect.sleep("1200 millis")
          const touch: StepTouch = named ? { kind: "paths", paths: touchedPaths } : { kind: "unknown" }
          touchedPaths = []
          const result = yield* recorder.finish(start, touch)
          const after = read()
          const expected = [...new Set([...before.keys(), ...after.keys()])].filter((file) => before.get(file) !== after.get(file)).sort()
          expect({ step, files: (result?.patch?.files ?? []).map((file) => path.relative(project, file)) }).toEqual({ step, files: expected })
          // The snapshot holds exactly the files, byte for byte.
          const entries = yield* snapshot.entries(result!.snapshot, [...after.keys()])
          const contents = yield* snapshot.read([...entries.values()].flatMap((entry) => (entry ? [entry.id] : [])))
          for (const [file, state] of after) {
            const entry = entries.get(file)
            const stored = entry?.mode === "120000"
              ? `link:${contents.get(entry.id)!.toString()}`
              : `${entry?.mode === "100755" ? "x" : "-"}:${entry ? contents.get(entry.id)!.toString("base64") : "absent"}`
            expect({ step, file, stored }).toEqual({ step, file, stored: state })
          }
          const changesBetween = yield* snapshot.changes(start!.id, result!.snapshot)
          expect(changesBetween.map((change) => change.file)).toEqual(expected)
          start = yield* recorder.begin()
          before = after
        }
      }).pipe(Effect.provide(runtime.layer))
    }), 60_000)

  it.scopedLive("steps whose tools name their files hash only those (ignored or not); a step that changed nothing has no patch", () =>
    Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({
        model: ScriptedModel.make([]),
        files: { "project/a.txt": "a\n", "project/b.txt": "b\n", "project/.gitignore": ".env\n" }
      })
      const project = runtime.box.path("project")
      yield* Effect.gen(function*() {
        const snapshot = yield* Snapshot
        const recorder = snapshot.steps()
        const start = yield* recorder.begin()
        fs.writeFileSync(path.join(project, "a.txt"), "a2\n")
        // b.txt changes too, but not through the step's tools: it is not this step's change
        fs.writeFileSync(path.join(project, "b.txt"), "b2\n")
        const named = yield* recorder.finish(start, { kind: "paths", paths: [path.join(project, "a.txt"), "/elsewhere/file"] })
        expect(named?.patch?.files).toEqual([path.join(project, "a.txt")])
        const quiet = yield* recorder.begin()
        const none = yield* recorder.finish(quiet, { kind: "none" })
        expect(none).toEqual({ snapshot: quiet!.id })
        // a later scan still finds b.txt
        const third = yield* recorder.begin()
        const scanned = yield* recorder.finish(third, { kind: "unknown" })
        expect(scanned?.patch?.files).toEqual([path.join(project, "b.txt")])
        // A file that stops being ignored is found by the next scan.
        fs.writeFileSync(path.join(project, "notes.tmp"), "kept aside\n")
        fs.writeFileSync(path.join(project, ".gitignore"), ".env\n*.tmp\n")
        const ignoring = yield* recorder.begin()
        expect((yield* recorder.finish(ignoring, { kind: "unknown" }))?.patch?.files).toEqual([path.join(project, ".gitignore")])
        fs.writeFileSync(path.join(project, ".gitignore"), ".env\n")
        const unignoring = yield* recorder.begin()
        expect((yield* recorder.finish(unignoring, { kind: "unknown" }))?.patch?.files).toEqual(
          [path.join(project, ".gitignore"), path.join(project, "notes.tmp")]
        )
        // An ignored file is left out of scans, but recorded when a tool names it (so it can be undone).
        fs.writeFileSync(path.join(project, ".env"), "SECRET=1\n")
        const fourth = yield* recorder.begin()
        expect((yield* recorder.finish(fourth, { kind: "unknown" }))?.patch).toBeUndefined()
        const fifth = yield* recorder.begin()
        fs.writeFileSync(path.join(project, ".env"), "SECRET=2\n")
        const edited = yield* recorder.finish(fifth, { kind: "paths", paths: [path.join(project, ".env")] })
        expect(edited?.patch?.files).toEqual([path.join(project, ".env")])
      }).pipe(Effect.provide(runtime.layer))
    }))
  it.scopedLive("files a step's tools wrote while the first scan's background work ran are still that step's change", () =>
    Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model: ScriptedModel.make([]), files: { "project/a.txt": "a\n" } })
      const project = runtime.box.path("project")
      yield* Effect.gen(function*() {
        const snapshot = yield* Snapshot
        const recorder = snapshot.steps()
        // The first begin of a run scans everything, then sets the watches up and scans again in the background.
        const start = yield* recorder.begin()
        fs.writeFileSync(path.join(project, "a.txt"), "a2\n")
        fs.writeFileSync(path.join(project, "new.txt"), "new\n")
        // Give the background scan time to see (and record) both files before the step finishes.
        yield* Effect.sleep("500 millis")
        const finished = yield* recorder.finish(start, {
          kind: "paths",
          paths: [path.join(project, "a.txt"), path.join(project, "new.txt")]
        })
        expect(finished?.patch?.files).toEqual([path.join(project, "a.txt"), path.join(project, "new.txt")])
      }).pipe(Effect.provide(runtime.layer))
    }))

  it.scopedLive("a read that opens the store while the first step scans leaves that scan's files in later snapshots", () =>
    Effect.gen(function*() {
      // The session's diff and revert read the store; the web page asks for them while a run
      // starts. If a read's opening loaded the (still empty) stat cache after the step's scan,
      // the files the scan found fell out of every later snapshot: the session's edit of a file
      // showed as a new file, and revert deleted it. The read's first write to the store stalls
      // here, so the step opens, scans and records while the read is still opening.
      let writes = 0
      const stallFirst: StoreDiskShape = {
        write: async (handle, data) => {
          if (writes++ === 0) await new Promise((resolve) => setTimeout(resolve, 400))
          await liveDisk.write(handle, data)
        }
      }
      const runtime = yield* TestRuntime.make({ model: ScriptedModel.make([]), files: { "project/notes.txt": "hello\n", "project/src/a.ts": "a\n" } })
      yield* Effect.gen(function*() {
        const snapshot = yield* Snapshot
        const first = snapshot.steps()
        const [, start] = yield* Effect.all([snapshot.read([]), Effect.sleep("20 millis").pipe(Effect.zipRight(first.begin()))], {
          concurrency: "unbounded"
        })
        expect(writes).toBeGreaterThan(1)
        yield* first.finish(start, { kind: "none" })
        const next = snapshot.steps()
        const later = yield* next.begin()
        yield* next.finish(later, { kind: "none" })
        const found = yield* snapshot.entries(later!.id, ["notes.txt", "src/a.ts"])
        expect([...found].filter(([, entry]) => entry !== undefined).map(([file]) => file)).toEqual(["notes.txt", "src/a.ts"])
      }).pipe(Effect.provide(runtime.layer), Effect.provideService(StoreDisk, stallFirst))
    }))
})
