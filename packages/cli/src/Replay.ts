// `agent run --record FILE` / `--replay FILE|demo`: which model provider node the run gets, and
// for the demo, the scratch copy of the project it works in (docs/replay.md).
import { Cassette, DemoModel, ReplayProviders } from "@agent/core"
import { ConfigService } from "@agent/core/config/ConfigService"
import { Instance } from "@agent/core/runtime/Instance"
import { ProviderRegistry } from "@agent/core/llm/ProviderRegistry"
import { DEFAULT_IGNORES } from "@agent/core/tools/List"
import { Console, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { UsageError } from "./ExitCode.js"

/** The built-in recording's name (a file of that name is replayed as `./demo`). */
export const DEMO = "demo"

/** What `--record` / `--replay` change in the runtime. */
export interface ModelSource {
  readonly providers?: Layer.Layer<ProviderRegistry, never, ConfigService | Instance>
  /** The demo's scratch copy, when the run works there instead of in the project. */
  readonly instance?: Layer.Layer<Instance>
}

/**
 * The build agent asks before it edits, whatever the project allows, so the approval prompt
 * shows. Given to that agent only: a global `permission` would win over the plan agent's deny.
 */
const DEMO_CONFIG = JSON.stringify({ agent: { build: { permission: { edit: "ask" } } } })

/** Copying stops here: the demo needs a project's face, not all of it. */
const COPY_LIMIT = { files: 2_000, bytes: 50 * 1024 * 1024, fileBytes: 1024 * 1024 }

/**
 * Copies the project's files into `target`: no dependency, build or VCS directories (the list
 * `list` leaves out, nor a `.git` file), no file over 1 MB, at most 2 000 files or 50 MB. Symbolic links are not
 * followed. Returns how many files were copied.
 */
export const copyProject = (source: string, target: string): number => {
  const ignored = new Set(DEFAULT_IGNORES)
  let files = 0
  let bytes = 0
  const walk = (from: string, to: string) => {
    fs.mkdirSync(to, { recursive: true })
    const entries = fs.readdirSync(from, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))
    for (const entry of entries) {
      if (files >= COPY_LIMIT.files || bytes >= COPY_LIMIT.bytes) return
      // A `.git` file (a worktree's) is skipped too: the copy must not point into the real repository.
      if (ignored.has(entry.name)) continue
      const file = path.join(from, entry.name)
      if (entry.isDirectory()) walk(file, path.join(to, entry.name))
      else if (entry.isFile()) {
        const size = fs.statSync(file).size
        if (size > COPY_LIMIT.fileBytes) continue
        fs.copyFileSync(file, path.join(to, entry.name))
        files++
        bytes += size
      }
    }
  }
  walk(source, target)
  return files
}

/**
 * The demo's own place: `<tmp>/agent-demo-XXXX/<project name>/` holds the copy, and the data
 * directory (database, snapshots, tool output) sits beside it, so the demo leaves nothing
 * behind in the user's data. Removed when the run ends.
 */
const scratch = (project: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "agent-demo-"))
      const copy = path.join(root, path.basename(project) || "project")
      const files = copyProject(project, copy)
      return { root, copy, files }
    }),
    ({ root }) => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true }))
  )

const demo = (project: string) =>
  Effect.gen(function*() {
    const place = yield* scratch(project)
    yield* Console.error(
      `agent: demo: a scripted model (no API key, no network) runs the real tools on a copy of ${project} ` +
        `(${place.files} files, in ${place.copy}); your project is not changed, and the copy is removed at the end.`
    )
    // The demo's store is a scratch SQLite file, even where AGENT_DATABASE_URL names a shared database.
    const { AGENT_DATABASE_URL: _shared, ...inherited } = process.env
    const env = {
      ...inherited,
      XDG_DATA_HOME: path.join(place.root, "data"),
      AGENT_DB: path.join(place.root, "data", "agent.db"),
      AGENT_CONFIG_CONTENT: process.env.AGENT_CONFIG_CONTENT ?? DEMO_CONFIG
    }
    const source: ModelSource = {
      providers: ReplayProviders.layerScripted(DemoModel.make(), DemoModel.DEMO_MODEL),
      instance: Instance.layerWith({ directory: place.copy, env })
    }
    return source
  })

const replayFile = (file: string, directory: string) =>
  Effect.try({
    try: () => Cassette.openPlayer(file, { follow: true, directory }),
    catch: (error) => new UsageError({ message: `--replay: ${error instanceof Error ? error.message : String(error)}` })
  }).pipe(Effect.map((player): ModelSource => ({ providers: ReplayProviders.layerReplay(player) })))

/** The model source of a run in `directory` (needs a scope: the demo's copy lives in it). */
export const modelSource = (options: { readonly record?: string; readonly replay?: string; readonly directory: string }) => {
  if (options.record !== undefined && options.replay !== undefined) {
    return Effect.fail(new UsageError({ message: "--record and --replay cannot be used together" }))
  }
  if (options.replay === DEMO) return demo(options.directory)
  if (options.replay !== undefined) return replayFile(options.replay, options.directory)
  if (options.record !== undefined) {
    const file = path.resolve(options.record)
    return Effect.succeed<ModelSource>({ providers: ReplayProviders.layerRecord(file).pipe(Layer.provide(ProviderRegistry.layer)) })
  }
  return Effect.succeed<ModelSource>({})
}
