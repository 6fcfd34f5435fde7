import { Context, Effect, Layer } from "effect"
import * as path from "node:path"
import { isEnvFlag } from "../config/ConfigFiles.js"
import { ConfigService } from "../config/ConfigService.js"
import { Instance, type InstanceInfo } from "../runtime/Instance.js"
import { isWithin as within } from "../tool/ExternalDirectory.js"
import { type Entry, formatEntry, isFileSync, makeFileReader, PROJECT_FILES, upward } from "./InstructionFiles.js"
import * as InstructionLimits from "./InstructionLimits.js"
import { type ConfiguredInstructions, resolveConfigured } from "./InstructionSources.js"

// The InstructionLoader: its Tag, its layer and what it does per step. Beside it: InstructionFiles
// (finding and reading files), InstructionSources (the configured entries), InstructionGlob.

export { PROJECT_FILES } from "./InstructionFiles.js"
export { expandGlob } from "./InstructionGlob.js"

/** One entry of the system prompt's instructions: a file, or an http(s) URL. */
export interface InstructionSource {
  readonly source: string
  readonly kind: "file" | "url"
}

/** What a read brought along: the reminder to append and the files in it. */
export interface AttachedInstructions {
  readonly reminder: string
  readonly files: ReadonlyArray<string>
}

/**
 * Instruction files for the system prompt and for files the agent reads.
 *
 * `system()` entries, in this order (each `Instructions from: <path or url>\n<content>`):
 * 1. the global file: `<config dir>/AGENTS.md`, else `~/.claude/CLAUDE.md`;
 * 2. the project files: `AGENTS.md` in every directory from the work-tree root down to the
 *    working directory; only when there is none, `CLAUDE.md` likewise; else `CONTEXT.md`;
 * 3. the `instructions` config entries that are files (globs relative to the project, tried in
 *    every directory from the working directory up to the root; absolute paths; `~/` paths);
 * 4. the `instructions` entries that are http(s) URLs.
 *
 * With `AGENT_DISABLE_PROJECT_CONFIG` set, no project files are used (nor attached by
 * `forRead`), and relative `instructions` entries are taken from the global config dir.
 *
 * Files are re-checked every step with a `stat` and re-read only when their mtime or size
 * changed, so an edited AGENTS.md shows up at the next step. Each file or URL is cut to
 * `instruction_limits.max_bytes`, all of them together to `max_total_bytes` (see
 * InstructionLimits.ts), with a note in the text and a warning, once per file, in the log. Globs are expanded and URLs
 * fetched once per loader (in the background from layer build); a URL's content is then
 * kept for the life of the loader (each runtime in a process fetches its own).
 */
export interface InstructionLoaderShape {
  /** The instruction entries for the system prompt of the next step. */
  readonly system: () => Effect.Effect<ReadonlyArray<string>>
  /** The instruction files (not URLs) that `system()` currently includes. */
  readonly files: () => Effect.Effect<ReadonlyArray<string>>
  /** Where `system()`'s entries come from, in order: files, then fetched URLs. */
  readonly sources: () => Effect.Effect<ReadonlyArray<InstructionSource>>
  /**
   * After a `read` of `filePath`: the instruction files of the directories between the file and
   * the project root (in each directory the first of AGENTS.md, CLAUDE.md, CONTEXT.md; nearest
   * first) that are neither in the system prompt nor already attached in this `scope`, wrapped
   * in one `<system-reminder>` for the read tool to append to its output; undefined when there
   * is nothing new.
   *
   * The scope is the session. OpenCode claims a file per message and skips files that an
   * earlier, still visible read result carries; here the claim lasts while that read result is
   * in the model's view, and `release` ends it when the result is summarized or pruned away, so
   * the next read in that package brings the file again.
   */
  readonly forRead: (input: { readonly scope: string; readonly filePath: string }) => Effect.Effect<AttachedInstructions | undefined>
  /** The model no longer sees these attached files (compaction, prune): a later read attaches them again. */
  readonly release: (input: { readonly scope: string; readonly files: ReadonlyArray<string> }) => Effect.Effect<void>
  /** The files attached to reads in `scope` that the model still sees, in the order they came. */
  readonly attached: (scope: string) => Effect.Effect<ReadonlyArray<string>>
}

export class InstructionLoader extends Context.Tag("@agent/core/InstructionLoader")<
  InstructionLoader,
  InstructionLoaderShape
>() {
  static readonly layer: Layer.Layer<InstructionLoader, never, Instance | ConfigService> = Layer.scoped(
    InstructionLoader,
    Effect.gen(function*() {
      const instance = yield* Instance
      const config = yield* (yield* ConfigService).get()
      const projectEnabled = !isEnvFlag(instance.env.AGENT_DISABLE_PROJECT_CONFIG)
      const projectDirs = upward(instance.directory, instance.worktree)
      const limits = InstructionLimits.fromConfig(config.instruction_limits)
      // Resolved once per layer: the layer owns what was fetched, no runtime shares it.
      const configured = yield* Effect.cached(
        resolveConfigured({ instance, instructions: config.instructions ?? [], limits, projectEnabled, projectDirs })
      )
      // Start expanding globs and fetching URLs now, so the first step rarely waits for them.
      yield* Effect.forkScoped(configured.pipe(Effect.catchAllCause(Effect.logError)))
      return makeService({ instance, limits, projectEnabled, projectDirs, configured })
    })
  )
}

/** Sessions whose attached files are remembered; older claim sets are dropped. */
const CLAIM_SCOPES = 200

interface LoaderState {
  readonly instance: InstanceInfo
  readonly limits: InstructionLimits.InstructionLimits
  readonly projectEnabled: boolean
  /** From the working directory up to the work-tree root. */
  readonly projectDirs: ReadonlyArray<string>
  /** The configured entries, resolved once. */
  readonly configured: Effect.Effect<ConfiguredInstructions>
}

/** What every step sends: the global file, the project files and the configured entries, fitted into the caps. */
const makeCollector = (state: LoaderState) => {
  const { instance, limits, projectEnabled, projectDirs } = state
  const readFileSync = makeFileReader(limits.maxBytes)

  const globalFile = (): string | undefined =>
    [path.join(instance.paths.config, "AGENTS.md"), path.join(instance.home, ".claude", "CLAUDE.md")].find(isFileSync)

  /** The project files of the first name with any hit, work-tree root first. */
  const projectFiles = (): ReadonlyArray<string> => {
    if (!projectEnabled) return []
    const rootFirst = [...projectDirs].reverse()
    for (const name of PROJECT_FILES) {
      const hits = rootFirst.map((dir) => path.join(dir, name)).filter(isFileSync)
      if (hits.length > 0) return hits
    }
    return []
  }

  /** Files and URLs already reported as cut: each is warned about once. */
  const reported = new Set<string>()
  const report = (cuts: ReadonlyArray<InstructionLimits.Cut>) =>
    Effect.forEach(cuts, (cut) => {
      if (reported.has(cut.source)) return Effect.void
      reported.add(cut.source)
      return Effect.logWarning(`instructions: ${cut.source} has ${cut.size} bytes; only its first ${cut.kept} are sent (${cut.limit})`)
    }, { discard: true })

  /** The entries as they are sent: fitted into the caps, the cuts reported. */
  const fitted = (entries: ReadonlyArray<Entry>, maxTotalBytes = limits.maxTotalBytes) =>
    Effect.gen(function*() {
      const fit = InstructionLimits.fit(entries, { ...limits, maxTotalBytes })
      if (fit.cuts.length > 0) yield* report(fit.cuts)
      return fit.entries
    })

  const collect: Effect.Effect<ReadonlyArray<Entry>> = Effect.gen(function*() {
    const resolved = yield* state.configured
    const global = globalFile()
    const project = projectFiles()
    const paths = [...new Set([...(global ? [global] : []), ...project, ...resolved.files])]
    const files = paths.flatMap((file): Array<Entry> => {
      const read = readFileSync(file)
      return read?.text ? [{ kind: "file", source: file, text: read.text, size: read.size }] : []
    })
    return yield* fitted([...files, ...resolved.urls])
  })

  return { collect, fitted, readFileSync }
}

const makeService = (state: LoaderState): InstructionLoaderShape => {
  const { instance, projectEnabled } = state
  const { collect, fitted, readFileSync } = makeCollector(state)
  const claims = new Map<string, Set<string>>()
  const claimsOf = (scope: string): Set<string> => {
    let set = claims.get(scope)
    if (set === undefined) {
      set = new Set()
      claims.set(scope, set)
      if (claims.size > CLAIM_SCOPES) claims.delete(claims.keys().next().value!)
    }
    return set
  }

  return {
    // Called every step (or every tool call): untraced, a span would cost more than the call.
    system: Effect.fnUntraced(function*() {
      const entries = yield* collect
      return entries.map((entry) => formatEntry(entry.source, entry.text))
    }),
    files: Effect.fn("InstructionLoader.files")(function*() {
      const entries = yield* collect
      return entries.filter((entry) => entry.kind === "file").map((entry) => entry.source)
    }),
    sources: Effect.fn("InstructionLoader.sources")(function*() {
      const entries = yield* collect
      return entries.map((entry) => ({ source: entry.source, kind: entry.kind }))
    }),
    release: Effect.fn("InstructionLoader.release")(function*(input) {
      const claimed = claims.get(input.scope)
      if (claimed === undefined) return
      yield* Effect.sync(() => {
        for (const file of input.files) claimed.delete(file)
      })
    }),
    attached: Effect.fn("InstructionLoader.attached")(function*(scope) {
      return [...(claims.get(scope) ?? [])]
    }),
    forRead: Effect.fn("InstructionLoader.forRead")(function*(input) {
      const target = path.resolve(instance.directory, input.filePath)
      if (!projectEnabled || !within(target, instance.worktree)) return undefined
      const loaded = new Set((yield* collect).map((entry) => entry.source))
      // One instruction file per directory (same name preference as the project files), found
      // and claimed in one synchronous block, so two reads of the same message cannot both
      // attach a file (and a few stat calls need no fiber each).
      const picked = yield* Effect.sync(() => {
        const claimed = claimsOf(input.scope)
        const out: Array<string> = []
        for (const dir of upward(path.dirname(target), instance.worktree)) {
          const file = PROJECT_FILES.map((name) => path.join(dir, name)).find(isFileSync)
          if (file === undefined || file === target || loaded.has(file) || claimed.has(file)) continue
          claimed.add(file)
          out.push(file)
        }
        return out
      })
      if (picked.length === 0) return undefined
      const found = picked.map((file) => ({ file, read: readFileSync(file) }))
      // An empty file attaches nothing, so it is not claimed either.
      const attached = yield* Effect.sync(() =>
        found.flatMap(({ file, read }): Array<Entry> => {
          if (read?.text) return [{ kind: "file", source: file, text: read.text, size: read.size }]
          claimsOf(input.scope).delete(file)
          return []
        })
      )
      if (attached.length === 0) return undefined
      // Each file within its own cap; the total cap is the system prompt's.
      const blocks = (yield* fitted(attached, Number.POSITIVE_INFINITY)).map((entry) => formatEntry(entry.source, entry.text))
      return { reminder: `<system-reminder>\n${blocks.join("\n\n")}\n</system-reminder>`, files: attached.map((entry) => entry.source) }
    })
  }
}
