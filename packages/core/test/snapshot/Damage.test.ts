import type { MessageWithParts, Part, SessionID } from "@agent/domain"
import { ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger, LogLevel } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { SessionChanges } from "../../src/snapshot/SessionChanges.js"
import { SessionLoop } from "../../src/session/SessionLoop.js"
import { SessionStore } from "../../src/store/SessionStore.js"
import { Snapshot } from "../../src/snapshot/Snapshot.js"
import { liveDisk, StoreDisk, type StoreDiskShape } from "../../src/snapshot/StoreFile.js"
import { storeGit } from "./helpers.js"

const { toolCall } = ScriptedModel

const patchesOf = (message: MessageWithParts | undefined) =>
  (message?.parts ?? []).filter((part): part is Extract<Part, { type: "patch" }> => part.type === "patch")
const stepSnapshots = (messages: ReadonlyArray<MessageWithParts>) =>
  messages.flatMap((message) =>
    message.parts.flatMap((part) =>
      part.type === "step-start" || part.type === "step-finish" ? [part.snapshot ?? "none"] : []
    )
  )

/** Warnings and errors logged while `effect` runs. */
const capturingLogs = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const logged: Array<string> = []
    const capture = Logger.make(({ logLevel, message }) => {
      if (LogLevel.greaterThanEqual(logLevel, LogLevel.Warning)) {
        logged.push(Array.isArray(message) ? message.map(String).join(" ") : String(message))
      }
    })
    const result = yield* effect.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, capture)))
    return { result, logged }
  })

/**
 * The runtime over a sandbox whose database is a file, so a session outlives one build of the
 * layer: each `run` is what one process of the agent does.
 */
const makeRuns = (script: Parameters<typeof ScriptedModel.make>[0], disk: { current: StoreDiskShape } = { current: liveDisk }) =>
  Effect.gen(function*() {
    const runtime = yield* TestRuntime.make({ model: ScriptedModel.make(script), fileDatabase: true })
    const project = runtime.box.path("project")
    const store = path.join(runtime.box.instance.paths.data, "snapshot", runtime.box.instance.projectID)
    const run = <A, E>(body: (sessionID: SessionID) => Effect.Effect<A, E, SessionStore | SessionLoop | SessionChanges>, sessionID?: SessionID) =>
      capturingLogs(
        Effect.gen(function*() {
          const id = sessionID ?? (yield* (yield* SessionStore).create()).id
          return { sessionID: id, value: yield* body(id) }
        }).pipe(Effect.provide(runtime.layer), Effect.provideService(StoreDisk, disk.current))
      ).pipe(Effect.map(({ logged, result }) => ({ ...result, logged })))
    const say = (sessionID: SessionID, text: string) =>
      Effect.flatMap(SessionLoop, (loop) => loop.prompt({ sessionID, parts: [{ type: "text", text }] }))
    return { runtime, project, store, run, say }
  })

const snapshotWarnings = (logged: ReadonlyArray<string>) => logged.filter((line) => /snapshot/i.test(line))

describe("a damaged snapshot store", () => {
  it.scopedLive("an empty HEAD and config (a full disk once) are found at open: the store is moved aside and rebuilt, with one warning; the next run snapshots and reverts", () =>
    Effect.gen(function*() {
      const { project, store, run, say } = yield* makeRuns([
        [toolCall("write", { filePath: "a.txt", content: "one\n" })],
        "first done",
        [toolCall("edit", { filePath: "a.txt", oldString: "one", newString: "two" })],
        [toolCall("bash", { command: "printf 'made\\n' > b.txt", description: "make b" })],
        "second done"
      ])
      const first = yield* run((sessionID) => say(sessionID, "first"))
      expect(snapshotWarnings(first.logged)).toEqual([])
      expect(fs.readFileSync(path.join(store, "HEAD"), "utf8")).toBe("ref: refs/heads/main\n")

      // What an ENOSPC in the middle of rewriting them left behind.
      fs.truncateSync(path.join(store, "HEAD"), 0)
      fs.truncateSync(path.join(store, "config"), 0)

      const second = yield* run((sessionID) =>
        Effect.gen(function*() {
          expect((yield* say(sessionID, "second")).reason).toBe("completed")
          return yield* (yield* SessionStore).messages(sessionID)
        }), first.sessionID)
      const messages = second.value
      // Every step of the second run has its snapshots and patches again.
      const secondRun = messages.slice(messages.findIndex((message) => message.info.role === "user" && message !== messages[0]))
      expect(stepSnapshots(secondRun).every((id) => /^[0-9a-f]{40}$/.test(id))).toBe(true)
      expect(secondRun.flatMap((message) => patchesOf(message).map((patch) => patch.files))).toEqual([
        [path.join(project, "a.txt")],
        [path.join(project, "b.txt")]
      ])
      // One warning for the whole run, naming the store and where the damaged copy went.
      const warnings = snapshotWarnings(second.logged)
      expect(warnings, warnings.join("\n")).toHaveLength(1)
      const aside = fs.readdirSync(path.dirname(store)).filter((name) => name.startsWith(`${path.basename(store)}.damaged-`))
      expect(aside).toHaveLength(1)
      const moved = path.join(path.dirname(store), aside[0]!)
      expect(fs.statSync(path.join(moved, "HEAD")).size).toBe(0)
      expect(warnings[0]).toContain(store)
      expect(warnings[0]).toContain(moved)
      storeGit(store, "fsck", "--strict", "--no-dangling")

      // And undo works: back to before the second prompt.
      const third = yield* run(() =>
        Effect.flatMap(SessionChanges, (changes) => changes.revert({ sessionID: first.sessionID, messageID: secondRun[0]!.info.id })),
        first.sessionID)
      expect(third.value.conflicts).toEqual([])
      expect(fs.readFileSync(path.join(project, "a.txt"), "utf8")).toBe("one\n")
      expect(fs.existsSync(path.join(project, "b.txt"))).toBe(false)
      expect(snapshotWarnings(third.logged)).toEqual([])
    }), 60_000)
})

describe("damage only git sees", () => {
  it.scopedLive("a config git cannot parse: the store is moved aside with one warning; a corrupt stat cache is dropped with one warning; tracking works after each", () =>
    Effect.gen(function*() {
      const runtime = yield* TestRuntime.make({ model: ScriptedModel.make([]) })
      const project = runtime.box.path("project")
      const store = path.join(runtime.box.instance.paths.data, "snapshot", runtime.box.instance.projectID)
      const movedCopies = () => fs.readdirSync(path.dirname(store)).filter((name) => name.includes(".damaged-"))
      fs.writeFileSync(path.join(project, "a.txt"), "one\n")
      // One process: it tracks the project once and ends (leaving its stat cache as `index`).
      const track = capturingLogs(Effect.flatMap(Snapshot, (snapshot) => snapshot.track()).pipe(Effect.provide(runtime.layer)))

      const first = yield* track
      expect(first.result).toMatch(/^[0-9a-f]{40}$/)
      expect(snapshotWarnings(first.logged)).toEqual([])

      fs.writeFileSync(path.join(store, "config"), "\u0000\u0001garbage[")
      const second = yield* track
      expect(second.result).toBe(first.result)
      const moved = snapshotWarnings(second.logged)
      expect(moved, moved.join("\n")).toHaveLength(1)
      expect(moved[0]).toMatch(/was damaged \(git cannot open it: .*bad config line 1/)
      expect(movedCopies()).toHaveLength(1)

      fs.truncateSync(path.join(store, "index"), 20)
      const third = yield* track
      expect(third.result).toBe(first.result)
      const dropped = snapshotWarnings(third.logged)
      expect(dropped, dropped.join("\n")).toHaveLength(1)
      expect(dropped[0]).toMatch(/^snapshot stat cache .* dropped, git cannot read it: .*index file smaller than expected/)
      expect(movedCopies()).toHaveLength(1)
      storeGit(store, "fsck", "--strict", "--no-dangling")
    }), 60_000)
})

const asRoot = process.getuid?.() === 0

/**
 * Fills the disk under `dir`. As root (CI runs as root) it is a 1 MB tmpfs, filled up: a mount
 * that fails fails the test. Otherwise the store's writes go through a `StoreDisk` that fails
 * as a full disk does (half the data written, then ENOSPC), until `free`.
 */
const fullDisk = (dir: string, disk: { current: StoreDiskShape }) =>
  asRoot
    ? Effect.acquireRelease(
      Effect.sync(() => {
        fs.mkdirSync(dir, { recursive: true })
        execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", dir])
        const filler = path.join(dir, "filler")
        try {
          fs.writeFileSync(filler, Buffer.alloc(2 * 1024 * 1024, 1))
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error
        }
        expect(fs.statfsSync(dir).bavail).toBe(0)
        return { free: () => fs.rmSync(filler) }
      }),
      () => Effect.sync(() => execFileSync("umount", ["-l", dir]))
    )
    : Effect.sync(() => {
      disk.current = {
        write: async (handle, data) => {
          await handle.write(data.subarray(0, data.length >> 1))
          throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" })
        }
      }
      return { free: () => void (disk.current = liveDisk) }
    })

describe("a full disk", () => {
  it.scopedLive(`when the store is created on a full disk (${asRoot ? "a full 1 MB tmpfs" : "simulated: not root, no tmpfs"}), the run goes on without snapshots and says so once; once there is room, the next run snapshots and reverts`, () =>
    Effect.gen(function*() {
      const disk = { current: liveDisk }
      const { runtime, project, store, run, say } = yield* makeRuns([
        [toolCall("write", { filePath: "a.txt", content: "one\n" })],
        "first done",
        [toolCall("write", { filePath: "a.txt", content: "two\n" })],
        "second done"
      ], disk)
      const full = yield* fullDisk(path.join(runtime.box.instance.paths.data, "snapshot"), disk)

      const first = yield* run((sessionID) => say(sessionID, "first"))
      expect(first.value.reason).toBe("completed")
      expect(fs.readFileSync(path.join(project, "a.txt"), "utf8")).toBe("one\n")
      // Said once, not on every step.
      const warnings = snapshotWarnings(first.logged)
      expect(warnings, warnings.join("\n")).toHaveLength(1)
      expect(warnings[0]).toContain(`the snapshot store cannot be used: cannot set up ${store}: ENOSPC`)
      // Nothing half-written is left to break later runs.
      for (const file of ["HEAD", "config"]) {
        const full = path.join(store, file)
        if (fs.existsSync(full)) expect(fs.statSync(full).size).toBeGreaterThan(0)
      }

      full.free()
      const second = yield* run((sessionID) =>
        Effect.gen(function*() {
          expect((yield* say(sessionID, "second")).reason).toBe("completed")
          return yield* (yield* SessionStore).messages(sessionID)
        }), first.sessionID)
      expect(snapshotWarnings(second.logged)).toEqual([])
      const user = second.value.filter((message) => message.info.role === "user")[1]!
      const after = second.value.slice(second.value.indexOf(user))
      expect(stepSnapshots(after).every((id) => /^[0-9a-f]{40}$/.test(id))).toBe(true)
      expect(after.flatMap((message) => patchesOf(message).map((patch) => patch.files))).toEqual([[path.join(project, "a.txt")]])
      const third = yield* run(() =>
        Effect.flatMap(SessionChanges, (changes) => changes.revert({ sessionID: first.sessionID, messageID: user.info.id })),
        first.sessionID)
      expect(third.value.conflicts).toEqual([])
      expect(fs.readFileSync(path.join(project, "a.txt"), "utf8")).toBe("one\n")
      storeGit(store, "fsck", "--strict", "--no-dangling")
    }), 60_000)
})
